"""FRK402: the start method set after `import torch`; the fix moves it above the first torch import."""

from __future__ import annotations

import textwrap

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.fix import fix_source
from tests.rules._support import check_dedented, fix_dedented

CFG = Config(select=("FRK402",))
BOTH = Config(select=("FRK402", "FRK403"))
MESSAGE = (
    "set_start_method() runs at module level after `import torch`: the start method must be chosen "
    "before torch (and what it imports) uses multiprocessing, and spawned workers re-run it; call "
    "multiprocessing.set_start_method(..., force=True) above the first torch import, or inside "
    '`if __name__ == "__main__":`'
)


def findings(src, cfg=CFG):
    return [(f.code, f.line, f.col, f.fix) for f in check_dedented(src, "job.py", cfg)]


def fixed(src, cfg=CFG):
    return fix_dedented(src, "job.py", cfg, unsafe=False)


def test_message_and_position():
    src = "import torch\nimport multiprocessing as mp\nmp.set_start_method('spawn', force=True)\n"
    got = check_source(src, "job.py", CFG)
    assert [(f.line, f.col, f.message) for f in got] == [(3, 0, MESSAGE)]


@pytest.mark.parametrize(
    "src",
    [
        # before torch
        "import multiprocessing as mp\nmp.set_start_method('spawn', force=True)\nimport torch\n",
        # inside the guard (also nested in it)
        "import torch\nimport multiprocessing as mp\nif __name__ == '__main__':\n    mp.set_start_method('spawn')\n",
        "import torch\nimport multiprocessing as mp\nif __name__ == '__main__':\n    try:\n        mp.set_start_method('spawn')\n"
        "    except RuntimeError:\n        pass\n",
        # in a function
        "import torch\nimport multiprocessing as mp\ndef main():\n    mp.set_start_method('spawn')\n",
        # torch only imported in functions
        "import multiprocessing as mp\ndef f():\n    import torch\nmp.set_start_method('spawn', force=True)\n",
        # not a setter
        "import torch\nimport multiprocessing as mp\nprint(mp.get_start_method())\n",
    ],
)
def test_not_flagged(src):
    assert findings(src) == []


def test_whole_statement_is_moved_with_its_comment_and_force():
    src = '''\
    """Job."""
    import os

    # torch and friends
    import torch
    import torch.multiprocessing as mp

    # spawn for CUDA
    mp.set_start_method("spawn")  # needed on macOS
    QUEUE = mp.Queue
    '''
    assert fixed(src, BOTH) == textwrap.dedent('''\
    """Job."""
    import multiprocessing
    import os

    # spawn for CUDA
    multiprocessing.set_start_method("spawn", force=True)  # needed on macOS

    # torch and friends
    import torch  # noqa: E402
    import torch.multiprocessing as mp  # noqa: E402

    QUEUE = mp.Queue
    ''')


def test_unused_imports_are_dropped_and_an_existing_stdlib_import_reused():
    src = """\
    import multiprocessing
    import torch
    from torch.multiprocessing import set_start_method, Queue

    set_start_method("forkserver", force=True)
    multiprocessing.set_forkserver_preload(["torch"])
    q = Queue()
    """
    assert fixed(src) == textwrap.dedent("""\
    import multiprocessing

    multiprocessing.set_start_method("forkserver", force=True)
    multiprocessing.set_forkserver_preload(["torch"])

    import torch  # noqa: E402
    from torch.multiprocessing import Queue  # noqa: E402

    q = Queue()
    """)


def test_a_later_stdlib_import_is_not_duplicated():
    src = "import torch\nimport multiprocessing\n\nmultiprocessing.set_start_method('spawn', force=True)\nprint(multiprocessing.cpu_count())\n"
    assert fixed(src) == (
        "import multiprocessing\n\nmultiprocessing.set_start_method('spawn', force=True)\n\nimport torch  # noqa: E402\n\n"
        "print(multiprocessing.cpu_count())\n"
    )


@pytest.mark.parametrize(
    "src",
    [
        # not a whole statement
        "import torch\nimport multiprocessing as mp\ntry:\n    mp.set_start_method('spawn')\nexcept RuntimeError:\n    pass\n",
        "import torch\nimport multiprocessing as mp\nif True:\n    mp.set_start_method('spawn', force=True)\n",
        "import torch\nimport multiprocessing as mp\nok = mp.set_start_method('spawn', force=True)\n",
        # dill's multiprocess has a context of its own
        "import torch\nimport multiprocess\nmultiprocess.set_start_method('spawn', force=True)\n",
        # on the torch import's own line
        "import multiprocessing as mp\nimport torch; mp.set_start_method('spawn', force=True)\n",
    ],
)
def test_reported_without_fix(src):
    got = findings(src)
    assert len(got) == 1 and got[0][3] is None
    assert not fix_source(src, "job.py", CFG).changed


def test_idempotent():
    src = "import torch\nimport torch.multiprocessing as mp\nmp.set_start_method('spawn')\nmp.Queue()\n"
    once = fixed(src, BOTH)
    assert findings(once, BOTH) == []
    assert fixed(once, BOTH) == once
