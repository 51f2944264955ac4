"""Datasets the harness was not written against (tests/harness/unseen.py), passed as objects and as
factories, as users of the API and the pytest plugin do."""

import re

import pytest

from flake8_forksafe.harness import assert_dataloader_safe, check_dataset

pytest.importorskip("torch")

from . import unseen  # noqa: E402 - imports torch

pytestmark = pytest.mark.slow


def test_in_memory_object_is_safe_under_all_three():
    res = check_dataset(unseen.InMemory(8))
    assert res.verdicts() == {"fork": "ok", "spawn": "ok", "forkserver": "ok"}, str(res)
    assert res.safe and res.kind == "map" and res["spawn"].n_got == res["spawn"].n_expected == 8


def test_memmap_is_not_a_handle(tmp_path):
    res = check_dataset(unseen.make_memmap, str(tmp_path), contexts=["fork", "forkserver"])
    assert res.verdicts() == {"fork": "ok", "forkserver": "ok"}, str(res)


def test_global_torch_randomness_is_reseeded_per_worker_so_not_flagged():
    res = check_dataset(unseen.TorchAugment, 16, contexts=["fork", "forkserver"])
    assert res.nondeterministic
    assert res.verdicts() == {"fork": "ok", "forkserver": "ok"}, str(res)


def test_zip_archive_opened_in_init_is_reported_by_assert(tmp_path):
    with pytest.raises(AssertionError) as ei:
        assert_dataloader_safe(unseen.make_zip, ("fork", "spawn"), str(tmp_path))
    msg = str(ei.value)
    assert msg.startswith("DataLoader is not multiprocessing-safe: tests.harness.unseen.make_zip")
    assert re.search(r"(?m)^  fork: (flagged|differs) - .*still share the parent's open file description of "
                     r"\S+images\.zip \(fd \d+, inherited through fork; (kcmp|fdinfo)\)", msg), msg
    assert re.search(r"(?m)^  spawn: fails - TypeError: cannot pickle '(?:_io\.)?BufferedReader' (?:object|instances)$", msg), msg


def test_module_global_set_at_run_time_is_lost_under_spawn_like_starts():
    res = check_dataset(unseen.make_scaled, contexts=["fork", "forkserver"])
    assert res["fork"].verdict == "ok", str(res)
    fs = res["forkserver"]
    assert fs.verdict == "differs", str(res)
    assert fs.differing == list(range(1, 12)) and fs.n_differing == 11
    assert re.match(r"11 of 12 items differ from the num_workers=0 baseline \(indices 1, 2, 3, 4, 5, 6, 7, 8, "
                    r"\.\.\.\); index 1: expected 3, got 1$", fs.reason), fs.reason


def test_iterable_with_an_rng_made_in_init_duplicates_draws():
    res = check_dataset(unseen.ShuffledStream, 24, contexts=["fork"])
    assert res.kind == "iterable" and res.nondeterministic
    c = res["fork"]
    assert c.verdict == "flagged", str(res)
    [f] = [f for f in c.findings if f.kind == "duplicate_rng"]
    assert f.detail["rng"] == "dataset.rng" and f.detail["workers"] == [0, 1]
    assert f.message == ("duplicate randomness: workers 0 and 1 draw from identical RNG state "
                         "(dataset.rng, random.Random)")


def test_a_worker_that_never_answers_times_out_twice_within_the_bound():
    """No DataLoader(timeout=): the harness's own limit ends the run, the run is repeated once, and the
    verdict is "timeout" (no claim either way), never "fails" or "hangs"."""
    res = check_dataset(unseen.StuckInWorkers, contexts=["fork"], timeout=4)
    c = res["fork"]
    assert res.verdicts() == {"fork": "timeout"} and c.attempts == 2 and not res.safe
    assert re.fullmatch(r"no result within the harness's limit twice \(no result after 4 s while running DataLoader "
                        r"workers \(fork\); limits scale with this machine's start-up time, x[\d.]+ now\)",
                        c.reason), c.reason


def test_dataloader_timeout_is_a_hang():
    res = check_dataset(unseen.StuckInWorkers, contexts=["fork"], loader_kwargs={"timeout": 2}, timeout=30)
    c = res["fork"]
    assert c.verdict == "hangs" and c.reason == "DataLoader(timeout=) expired"
    assert str(c.error) == "RuntimeError: DataLoader timed out after 2 seconds"


def test_lambda_factory_is_called_here_and_its_dataset_sent_over():
    res = check_dataset(lambda: unseen.InMemory(4), contexts=["fork"])
    assert res.verdicts() == {"fork": "ok"}, str(res)
    assert res.target == "tests.harness.unseen.InMemory instance (from tests.harness.test_unseen." \
                         "test_lambda_factory_is_called_here_and_its_dataset_sent_over.<locals>.<lambda>)"


def test_iterable_seeded_from_the_worker_id_replays_every_epoch():
    res = check_dataset(unseen.NoiseStream, loader_kwargs={"worker_init_fn": unseen.seed_by_id}, contexts=["fork"])
    assert res.kind == "iterable" and res.nondeterministic
    c = res["fork"]
    assert c.verdict == "flagged", str(res)
    assert {f.kind for f in c.findings} == {"replayed_rng"}
    assert {f.detail["rng"] for f in c.findings} == {"np.random (global)"}
    assert c.n_got == c.n_expected == 24
