"""Every runtime fixture under every start method: the unsafe version shows its hazard (RUNTIME-FACTS),
the hand-written fixed version passes everywhere. One harness subprocess per fixture version.

The expectations are spelled out here, independently of the fixtures' own EXPECT constants (a test checks
they agree). Only deterministic signals are asserted: pickling errors, ReadersFullError, the
inherited-descriptor probe, the RNG-state probe; never the racy corruption itself.
"""

import re

import pytest

from flake8_forksafe.harness import CONTEXTS, check_fixture, fixture_meta

from .conftest import FIXED, RUNTIME, has_proc

pytest.importorskip("torch")

# Python 3.9-3.11: "cannot pickle '_io.BufferedReader' object"; 3.12+: "cannot pickle 'BufferedReader' instances"
BUFFERED = r"^TypeError: cannot pickle '(?:_io\.)?BufferedReader' (?:object|instances)$"
LOCAL = r"^AttributeError: Can't pickle local object '{}'"
DIED = r"^RuntimeError: DataLoader worker \(pid\(s\) [\d, ]+\) exited unexpectedly$"
SHARED = ("flagged", "differs")  # the corruption is racy; the probe finding is not

# ctx -> (allowed verdicts, regex for the error or None, probe finding kinds that must be present)
UNSAFE = {
    "FRK101_file": {"fork": (SHARED, None, ["inherited_fd"]), "spawn": ("fails", BUFFERED, []),
                    "forkserver": ("fails", BUFFERED, [])},
    "FRK101_lmdb": {"fork": ("fails", r"^lmdb\.ReadersFullError: mdb_txn_begin: MDB_READERS_FULL", []),
                    "spawn": ("fails", r"^TypeError: cannot pickle 'Environment' object$", []),
                    "forkserver": ("fails", r"^TypeError: cannot pickle 'Environment' object$", [])},
    "FRK101_h5py": {"fork": ("flagged", None, ["inherited_fd"]),
                    "spawn": ("fails", r"^TypeError: h5py objects cannot be pickled$", []),
                    "forkserver": ("fails", r"^TypeError: h5py objects cannot be pickled$", [])},
    "FRK101_sqlite": {"fork": ("flagged", None, ["inherited_fd"]),
                      "spawn": ("fails", r"^TypeError: cannot pickle 'sqlite3\.Connection' object$", []),
                      "forkserver": ("fails", r"^TypeError: cannot pickle 'sqlite3\.Connection' object$", [])},
    "FRK101_derived": {"fork": ("flagged", None, ["inherited_fd"]),
                       "spawn": ("fails", r"^TypeError: cannot pickle 'sqlite3\.(Connection|Cursor)' object$", []),
                       "forkserver": ("fails", r"^TypeError: cannot pickle 'sqlite3\.(Connection|Cursor)' object$",
                                      [])},
    "FRK101_h5py_split": {"fork": ("flagged", None, ["inherited_fd"]),
                          "spawn": ("fails", r"^TypeError: h5py objects cannot be pickled$", []),
                          "forkserver": ("fails", r"^TypeError: h5py objects cannot be pickled$", [])},
    "FRK101_h5py_chained": {"fork": ("flagged", None, ["inherited_fd"]),
                            "spawn": ("fails", r"^TypeError: h5py objects cannot be pickled$", []),
                            "forkserver": ("fails", r"^TypeError: h5py objects cannot be pickled$", [])},
    "FRK101_h5py_local": {"fork": ("flagged", None, ["inherited_fd"]),
                          "spawn": ("fails", r"^TypeError: h5py objects cannot be pickled$", []),
                          "forkserver": ("fails", r"^TypeError: h5py objects cannot be pickled$", [])},
    "FRK101_lmdb_chained": {"fork": ("flagged", None, ["inherited_fd"]),
                            "spawn": ("fails", r"^TypeError: cannot pickle 'Transaction' object$", []),
                            "forkserver": ("fails", r"^TypeError: cannot pickle 'Transaction' object$", [])},
    "FRK101_iterable": {"fork": (SHARED, None, ["inherited_fd"]),
                        "spawn": ("fails", r"^TypeError: cannot pickle '(?:_io\.)?TextIOWrapper' (?:object|instances)$", []),
                        "forkserver": ("fails", r"^TypeError: cannot pickle '(?:_io\.)?TextIOWrapper' (?:object|instances)$", [])},
    "FRK103_lazy_nopid": {"fork": (SHARED, None, ["inherited_fd"]), "spawn": ("fails", BUFFERED, []),
                          "forkserver": ("fails", BUFFERED, [])},
    "FRK201_lambda_transform": {
        "fork": ("ok", None, []),
        "spawn": ("fails", LOCAL.format(r"PointCloud\.__init__\.<locals>\.<lambda>"), []),
        "forkserver": ("fails", LOCAL.format(r"PointCloud\.__init__\.<locals>\.<lambda>"), [])},
    "FRK201_collate_lambda": {
        "fork": ("ok", None, []),
        "spawn": ("fails", LOCAL.format(r"make_loader\.<locals>\.<lambda>"), []),
        "forkserver": ("fails", LOCAL.format(r"make_loader\.<locals>\.<lambda>"), [])},
    "FRK202_local_collate": {
        "fork": ("ok", None, []),
        "spawn": ("fails", LOCAL.format(r"make_loader\.<locals>\.pad_collate"), []),
        "forkserver": ("fails", LOCAL.format(r"make_loader\.<locals>\.pad_collate"), [])},
    "FRK203_generator": {"fork": ("differs", None, []),
                         "spawn": ("fails", r"^TypeError: cannot pickle 'generator' (?:object|instances)$", []),
                         "forkserver": ("fails", r"^TypeError: cannot pickle 'generator' (?:object|instances)$", [])},
    "FRK203_generator_glob": {"fork": ("differs", None, []),
                              "spawn": ("fails", r"^TypeError: cannot pickle 'generator' (?:object|instances)$", []),
                              "forkserver": ("fails", r"^TypeError: cannot pickle 'generator' (?:object|instances)$", [])},
    "FRK203_generator_file": {"fork": ("differs", None, []),
                              "spawn": ("fails", r"^TypeError: cannot pickle 'generator' (?:object|instances)$", []),
                              "forkserver": ("fails", r"^TypeError: cannot pickle 'generator' (?:object|instances)$", [])},
    "FRK203_generator_func": {"fork": ("differs", None, []),
                              "spawn": ("fails", r"^TypeError: cannot pickle 'generator' (?:object|instances)$", []),
                              "forkserver": ("fails", r"^TypeError: cannot pickle 'generator' (?:object|instances)$", [])},
    "FRK203_lock": {"fork": ("ok", None, []),
                    "spawn": ("fails", r"^TypeError: cannot pickle '_thread\.lock' object$", []),
                    "forkserver": ("fails", r"^TypeError: cannot pickle '_thread\.lock' object$", [])},
    "FRK401_no_guard": {
        "fork": ("ok", None, []),
        "spawn": ("fails", DIED, ["reran_main"]),
        "forkserver": ("fails", DIED, [])},
    "FRK102_module_handle": {"fork": (SHARED, None, ["inherited_fd"]), "spawn": ("ok", None, []),
                             "forkserver": ("ok", None, [])},
    "FRK402_after_torch": {"fork": ("ok", None, []), "spawn": ("fails", DIED, ["context_already_set"]),
                           "forkserver": ("fails", DIED, [])},
    "FRK403_no_force": {"fork": ("ok", None, []), "spawn": ("fails", DIED, ["context_already_set"]),
                        "forkserver": ("fails", DIED, [])},
    "FRK501_restarts": {"fork": ("ok", None, []), "spawn": ("flagged", None, ["workers_restarted"]),
                        "forkserver": ("flagged", None, ["workers_restarted"])},
    "FRK601_rng": {ctx: ("flagged", None, ["duplicate_rng", "replayed_rng"]) for ctx in CONTEXTS},
    "FRK602_const_seed": {ctx: ("flagged", None, ["replayed_rng"]) for ctx in CONTEXTS},
}

ALL = sorted(p.stem for p in RUNTIME.glob("*.py"))
GPU_ONLY = {"FRK301_cuda_init", "FRK404_fork_cuda"}  # need a CUDA/ROCm device to run at all


def _cuda():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def test_the_table_covers_every_fixture_and_agrees_with_its_constants():
    assert sorted(UNSAFE) == sorted(n for n in ALL if n not in GPU_ONLY)
    for name, table in UNSAFE.items():
        meta = fixture_meta(RUNTIME / f"{name}.py")
        for ctx, (verdicts, _, _) in table.items():
            declared = meta["EXPECT"][ctx]
            declared = set(declared) if isinstance(declared, tuple) else {declared}
            assert declared == (set(verdicts) if isinstance(verdicts, tuple) else {verdicts}), (name, ctx)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(UNSAFE))
def test_unsafe_fixture_shows_its_hazard(name):
    if not has_proc() and any("inherited_fd" in kinds for _, _, kinds in UNSAFE[name].values()):
        pytest.skip("the inherited-descriptor probe needs /proc")
    res = check_fixture(RUNTIME / f"{name}.py")
    assert not res.error, str(res)
    for ctx, (verdicts, pattern, kinds) in UNSAFE[name].items():
        c = res[ctx]
        allowed = verdicts if isinstance(verdicts, tuple) else (verdicts,)
        assert c.verdict in allowed, f"{ctx}: {res}"
        if pattern:
            assert c.error is not None and re.search(pattern, f"{c.error.type}: {c.error.message}"), f"{ctx}: {res}"
        found = {f.kind for f in c.findings}
        assert set(kinds) <= found, f"{ctx}: {res}"
        if "inherited_fd" in kinds:
            fd = next(f for f in c.findings if f.kind == "inherited_fd")
            if name == "FRK102_module_handle":  # the module's own source, opened at import
                assert fd.detail["path"].endswith("FRK102_module_handle.py"), fd.detail
            else:
                assert fd.detail["path"].startswith(("/tmp", "/var")) and "/data/" in fd.detail["path"]
            assert re.search(r"still shares? the parent's open file description of \S+ \(fd \d+, inherited "
                             r"through fork; (kcmp|fdinfo)\)", fd.message)


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_fixed_fixture_passes_everywhere(name):
    if name in GPU_ONLY and not _cuda():
        pytest.skip("needs a CUDA/ROCm device")
    res = check_fixture(FIXED / f"{name}.py")
    assert res.verdicts() == {"fork": "ok", "spawn": "ok", "forkserver": "ok"}, str(res)
    assert res.safe and not res.findings


# the fixes of issue 12's shapes: the fixed dataset returns what num_workers=0 returns (the harness compares
# each item with that baseline: in order for a map-style dataset, as a multiset for an IterableDataset)
SAME_ITEMS = {"FRK101_h5py_chained": 24, "FRK101_h5py_local": 20, "FRK101_lmdb_chained": 24,
              "FRK203_generator": 38, "FRK203_generator_glob": 12,
              # built per process (a one-shot generator: ONE_SHOT, a fresh dataset per replayed worker)
              "FRK203_generator_file": 30, "FRK203_generator_func": 25}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SAME_ITEMS))
def test_fixed_shapes_return_the_items_of_num_workers_0(name):
    res = check_fixture(FIXED / f"{name}.py")
    for c in res.contexts:
        assert c.verdict == "ok", str(res)
        assert c.n_expected == c.n_got == SAME_ITEMS[name], (c.context, c.n_expected, c.n_got)
    unsafe = check_fixture(RUNTIME / f"{name}.py")
    if name.startswith("FRK203"):  # the parent's pass exhausted the generator the fork workers copy
        fork = unsafe["fork"]
        assert fork.verdict == "differs" and fork.n_got == 0 and fork.n_expected > 0, str(unsafe)


@pytest.mark.slow
def test_cuda_fixture_is_not_run_on_a_cpu_runner():
    if _cuda():
        pytest.skip("this runner has a CUDA device: see test_cuda_fixture_on_a_gpu")
    res = check_fixture(RUNTIME / "FRK301_cuda_init.py")
    assert res.device == "cpu"
    assert res.verdicts() == {"fork": "not run", "spawn": "not run", "forkserver": "not run"}
    for c in res.contexts:
        assert re.search(r"the dataset initialises CUDA in the parent \(\S*FRK301_cuda_init\.py:\d+ in __init__\) "
                         r"and this runner has no CUDA device", c.reason), str(res)
    [f] = res.findings
    assert f.kind == "parent_cuda_init" and re.search(r"FRK301_cuda_init\.py:\d+ in __init__$", f.detail["where"])
    assert not res.safe


@pytest.mark.slow
@pytest.mark.gpu
def test_cuda_fixture_on_a_gpu():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA/ROCm device")
    res = check_fixture(RUNTIME / "FRK301_cuda_init.py")
    assert res.device in ("cuda", "rocm")
    assert res["fork"].verdict == "fails"
    assert re.search(r"Cannot re-initialize CUDA in forked subprocess", str(res["fork"].error)), str(res)
    assert any(f.kind == "parent_cuda_init" for f in res.findings)
    fixed = check_fixture(FIXED / "FRK301_cuda_init.py")
    assert fixed.safe, str(fixed)


@pytest.mark.slow
def test_descriptor_probe_without_kcmp_uses_fdinfo(monkeypatch):
    if not has_proc():
        pytest.skip("needs /proc")
    monkeypatch.setenv("FORKSAFE_FD_PROBE", "fdinfo")
    res = check_fixture(RUNTIME / "FRK101_h5py.py", contexts=["fork"])
    assert res["fork"].verdict == "flagged"
    [f] = [f for f in res["fork"].findings if f.kind == "inherited_fd"]
    assert f.detail["method"] == "fdinfo" and f.detail["path"].endswith("train.h5")
    fixed = check_fixture(FIXED / "FRK101_h5py.py", contexts=["fork"])
    assert fixed.verdicts() == {"fork": "ok"}, str(fixed)


@pytest.mark.slow
def test_descriptor_probe_unavailable_is_said_not_hidden(monkeypatch):
    monkeypatch.setenv("FORKSAFE_FD_PROBE", "none")
    res = check_fixture(RUNTIME / "FRK101_h5py.py", contexts=["fork"])
    c = res["fork"]
    assert c.verdict == "ok" and not c.findings  # h5py's data is right: only the probe could tell
    assert c.notes == ["inherited-descriptor probe unavailable: no /proc and no kcmp on this system"]


@pytest.mark.slow
def test_without_the_zygote_each_case_is_a_fresh_interpreter(monkeypatch):
    monkeypatch.setenv("FORKSAFE_ZYGOTE", "0")
    res = check_fixture(RUNTIME / "FRK203_lock.py", contexts=["spawn"])
    assert res.verdicts() == {"spawn": "fails"}
    assert str(res["spawn"].error) == "TypeError: cannot pickle '_thread.lock' object"


@pytest.mark.slow
@pytest.mark.gpu
def test_fork_with_cuda_script_on_a_gpu():
    if not _cuda():
        pytest.skip("no CUDA/ROCm device")
    res = check_fixture(RUNTIME / "FRK404_fork_cuda.py")
    for c in res.contexts:  # the loader names "fork" itself: every column runs it
        assert c.verdict == "fails" and "Cannot re-initialize CUDA in forked subprocess" in str(c.error), str(res)
    assert check_fixture(FIXED / "FRK404_fork_cuda.py").safe


@pytest.mark.slow
def test_restarted_workers_are_counted_per_epoch():
    """FRK501's fixture prints its own count: per epoch, re-imports of the script plus unpicklings of the
    dataset by fresh workers (2 workers, 3 epochs)."""
    res = check_fixture(RUNTIME / "FRK501_restarts.py", contexts=["spawn"])
    [f] = res["spawn"].findings
    assert re.search(r"per epoch: \[4, 4, 4\]\)$", f.message), str(res)
    fixed = check_fixture(FIXED / "FRK501_restarts.py", contexts=["spawn"])
    assert fixed.verdicts() == {"spawn": "ok"}, str(fixed)


@pytest.mark.slow
def test_one_shot_fixture_gets_a_fresh_dataset_per_baseline_pass():
    """A dataset that keeps a generator yields once per process. Replayed on one instance, the
    num_workers=0 baseline of two sharded workers holds only worker 0's shard (the generator is exhausted
    when worker 1 is replayed), so even the fixed dataset would "differ"; ONE_SHOT gives each replayed
    worker a fresh dataset, while the loader still gets the one the parent iterated."""
    from flake8_forksafe.harness import check_module

    assert fixture_meta(FIXED / "FRK203_generator_file.py")["ONE_SHOT"] is True
    same = check_module(FIXED / "FRK203_generator_file.py", contexts=["fork"])
    assert same["fork"].verdict == "differs" and (same["fork"].n_expected, same["fork"].n_got) == (15, 30), str(same)
    fresh = check_module(FIXED / "FRK203_generator_file.py", contexts=["fork"], one_shot=True)
    assert fresh["fork"].verdict == "ok" and (fresh["fork"].n_expected, fresh["fork"].n_got) == (30, 30), str(fresh)
