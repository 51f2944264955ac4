"""FRK403: set_start_method without force=True where spawned children re-run it."""

from __future__ import annotations

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from tests.rules._support import check_dedented, fix_dedented, run_script

CFG = Config(select=("FRK403",))
MESSAGE = (
    "set_start_method() without force=True at module level: spawned workers re-import this module "
    "with the start method already set and fail with 'RuntimeError: context has already been set'; "
    'pass force=True or call it under `if __name__ == "__main__":`'
)


def findings(src):
    return [(f.line, f.col, f.fix) for f in check_dedented(src, "job.py", CFG)]


def fixed(src):
    return fix_dedented(src, "job.py", CFG, unsafe=False)


def test_message():
    got = check_source("import multiprocessing\nmultiprocessing.set_start_method('spawn')\n", "job.py", CFG)
    assert [(f.line, f.col, f.message) for f in got] == [(2, 0, MESSAGE)]


@pytest.mark.parametrize(
    "line,want",
    [
        ("mp.set_start_method('spawn')", "mp.set_start_method('spawn', force=True)"),
        ("mp.set_start_method(method='spawn')", "mp.set_start_method(method='spawn', force=True)"),
        ("mp.set_start_method('spawn', force=False)", "mp.set_start_method('spawn', force=True)"),
        ("mp.set_start_method('spawn', False)", "mp.set_start_method('spawn', True)"),
        ("mp.set_start_method('spawn' )  # why", "mp.set_start_method('spawn', force=True )  # why"),
        ("mp.set_start_method(\n    'spawn',\n)", "mp.set_start_method(\n    'spawn',\n    force=True,\n)"),
        ("mp.set_start_method(\n    'spawn'  # c\n)", "mp.set_start_method(\n    'spawn',  # c\n    force=True\n)"),
    ],
)
def test_fix_styles(line, want):
    head = "import multiprocessing as mp\n"
    assert findings(head + line + "\n") == [(2, 0, "safe")]
    out = fixed(head + line + "\n")
    assert out == head + want + "\n"
    assert findings(out) == []


@pytest.mark.parametrize(
    "src",
    [
        "import multiprocessing as mp\nmp.set_start_method('spawn', force=True)\n",
        "import multiprocessing as mp\nmp.set_start_method('spawn', True)\n",
        "import multiprocessing as mp\nimport os\nmp.set_start_method('spawn', force=bool(os.environ.get('F')))\n",
        "import multiprocessing as mp\nkw = {}\nmp.set_start_method('spawn', **kw)\n",
        "import multiprocessing as mp\ntry:\n    mp.set_start_method('spawn')\nexcept RuntimeError:\n    pass\n",
        "import multiprocessing as mp\ntry:\n    mp.set_start_method('spawn')\nexcept (ValueError, RuntimeError):\n    pass\n",
        "import multiprocessing as mp\ntry:\n    mp.set_start_method('spawn')\nexcept BaseException:\n    pass\n",
        "import multiprocessing as mp\nimport contextlib\nwith contextlib.suppress(RuntimeError):\n    mp.set_start_method('spawn')\n",
        "import multiprocessing as mp\nif __name__ == '__main__':\n    mp.set_start_method('spawn')\n",
        "import multiprocessing as mp\ndef setup():\n    mp.set_start_method('spawn')\n",
        "import multiprocessing as mp\nmp.get_context('spawn')\n",
    ],
)
def test_not_flagged(src):
    assert findings(src) == []


@pytest.mark.parametrize(
    "src,want",
    [
        # only the try body is protected
        (
            "import multiprocessing as mp\ntry:\n    pass\nexcept RuntimeError:\n    mp.set_start_method('spawn')\n",
            [(5, 4, "safe")],
        ),
        ("import multiprocessing as mp\ntry:\n    mp.set_start_method('spawn')\nexcept ValueError:\n    pass\n", [(3, 4, "safe")]),
        # (from torch.multiprocessing it is FRK402's finding alone: see test_one_finding_with_frk402)
        ("from multiprocessing import set_start_method as ssm\nssm('forkserver')\n", [(2, 0, "safe")]),
        ("import sys\nimport multiprocessing as mp\nif sys.platform == 'darwin':\n    mp.set_start_method('spawn')\n", [(4, 4, "safe")]),
    ],
)
def test_flagged(src, want):
    assert findings(src) == want


# --------------------------------------------------------------------------------------------------
# runtime: the spawned worker re-runs the unforced call

SCRIPT = '''\
import multiprocessing

multiprocessing.set_start_method("spawn")

import torch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402


def main():
    loader = DataLoader(list(range(8)), batch_size=4, num_workers=2)
    print("total", sum(int(b.sum()) for b in loader))


if __name__ == "__main__":
    main()
'''


@pytest.mark.slow
def test_runtime_unforced_fails_fixed_runs(tmp_path):
    pytest.importorskip("torch")  # the scripts run DataLoader workers
    bad = tmp_path / "job_bad.py"
    bad.write_text(SCRIPT)
    assert findings(SCRIPT) == [(3, 0, "safe")]
    rc, out, err = run_script(bad)
    assert rc != 0
    assert "context has already been set" in err

    good = tmp_path / "job_good.py"
    good.write_text(fixed(SCRIPT))
    rc, out, err = run_script(good)
    assert rc == 0, err[-2000:]
    assert out == "total 28\n"


def test_one_finding_with_frk402():
    """A call after `import torch` that FRK402 moves (adding force=True) is FRK402's finding alone;
    one FRK402 cannot move (inside an `if`) keeps FRK403 and its force=True fix."""
    from flake8_forksafe.config import Config
    from flake8_forksafe.engine import check_source

    cfg = Config(select=("FRK4",))
    moved = "from torch.multiprocessing import set_start_method as ssm\nssm('forkserver')\n"
    assert [(f.code, f.line, f.fix) for f in check_source(moved, "m.py", cfg)] == [("FRK402", 2, "safe")]
    kept = "import sys\nimport torch.multiprocessing as mp\nif sys.platform == 'darwin':\n    mp.set_start_method('spawn')\n"
    assert [(f.code, f.line, f.fix) for f in check_source(kept, "m.py", cfg)] == [
        ("FRK402", 4, None),
        ("FRK403", 4, "safe"),
    ]
