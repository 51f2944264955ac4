"""The ``forksafe`` fixture, exercised by a real inner pytest run (pytester, in a subprocess)."""

import re
import textwrap

import pytest

pytest.importorskip("torch")

pytest_plugins = ["pytester"]  # here, not in conftest.py: pytest rejects it in a non-root conftest

INNER = textwrap.dedent('''\
    import threading

    import torch
    from torch.utils.data import Dataset


    class Squares(Dataset):
        def __init__(self, n):
            self.n = n

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            return torch.tensor(i * i)


    class Cached(Dataset):
        def __init__(self, n):
            self.n = n
            self.lock = threading.Lock()

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            with self.lock:
                return i


    def test_safe_dataset(forksafe):
        res = forksafe.check(Squares, 6)
        assert res.verdicts() == {"fork": "ok", "spawn": "ok"}


    def test_lock_on_dataset(forksafe):
        forksafe.check(Cached, 6)


    def test_fork_only_object_that_cannot_travel(forksafe):
        forksafe.check(Cached(3), contexts=["fork"])
    ''')


def _load_plugin():
    """Installed packages load the plugin through the pytest11 entry point; a source checkout needs -p."""
    from importlib.metadata import entry_points

    names = {ep.value for ep in entry_points(group="pytest11")}
    return [] if "flake8_forksafe.pytest_plugin" in names else ["-p", "flake8_forksafe.pytest_plugin"]


@pytest.mark.slow
def test_forksafe_fixture_in_a_real_pytest_run(pytester):
    pytester.makeini("[pytest]\nforksafe_contexts = fork,spawn\n")
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-rs", *_load_plugin())
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    out = result.stdout.str()
    assert re.search(r"(?m)^E\s+AssertionError: DataLoader is not multiprocessing-safe: test_inner\.Cached$", out), out
    assert re.search(r"(?m)^E\s+spawn: fails - TypeError: cannot pickle '_thread\.lock' object$", out), out
    assert not re.search(r"(?m)^E\s+fork:", out), out  # fork works for a free lock: not listed
    assert re.search(r"SKIPPED \[1\] .*forksafe: fork: not run - the dataset cannot be pickled", out), out
    # the harness's own frames are hidden: the failure points at the user's test
    assert re.search(r"(?m)^test_inner\.py:\d+: AssertionError$", out), out
    assert "runner.py" not in out and "pytest_plugin.py" not in out, out
