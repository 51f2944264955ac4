"""Imports added by fixes: reused when the file has one, else placed where isort puts them, under a
free name when the file binds or shadows the module's name (the code the fix adds then uses it)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.edit import ensure_imports
from flake8_forksafe.fix import fix_source


def added(src: str, *names: str) -> str:
    return ensure_imports(cst.parse_module(textwrap.dedent(src)), names).code


@pytest.mark.parametrize(
    "src,want",
    [
        # stdlib group, alphabetical among the plain imports
        ("import json\nimport sys\n\nimport torch\n", "import json\nimport os\nimport sys\n\nimport torch\n"),
        # before the group's `from` imports
        ("import json\nfrom pathlib import Path\n\nx = 1\n", "import json\nimport os\nfrom pathlib import Path\n\nx = 1\n"),
        # a file that sorts `from` and plain imports together keeps doing so
        ("from abc import ABC\nimport sys\n", "from abc import ABC\nimport os\nimport sys\n"),
        # no stdlib group: a new one before the third-party group, one blank line between
        ('"""Doc."""\n\nimport numpy as np\nimport torch\n', '"""Doc."""\n\nimport os\n\nimport numpy as np\nimport torch\n'),
        # after `from __future__`, in its own group
        ("from __future__ import annotations\n\nimport numpy\n",
         "from __future__ import annotations\n\nimport os\n\nimport numpy\n"),
        # no imports at all: after the docstring
        ('"""Doc."""\nx = 1\n', '"""Doc."""\n\nimport os\n\nx = 1\n'),
        # reused: `import os`, `import os.path`, `import os, lmdb`
        ("import os\nx = 1\n", "import os\nx = 1\n"),
        ("import os.path\nx = 1\n", "import os.path\nx = 1\n"),
        ("import os, lmdb\nx = 1\n", "import os, lmdb\nx = 1\n"),
        # rebound at module level, or shadowed in a function: a free alias
        ("import sys\n\nos = 'posix'\n", "import os as _os\nimport sys\n\nos = 'posix'\n"),
        ("import os\n\nos = 'posix'\n", "import os\nimport os as _os\n\nos = 'posix'\n"),
        ("import sys\n\n_os = 1\n\ndef f(os):\n    return os\n",
         "import os as _os_\nimport sys\n\n_os = 1\n\ndef f(os):\n    return os\n"),
    ],
)
def test_os_placement(src, want):
    assert added(src, "os") == want


def test_third_party_group():
    src = "import os\n\nimport numpy as np\nfrom torch.utils.data import DataLoader\n"
    assert added(src, "torch") == "import os\n\nimport numpy as np\nimport torch\nfrom torch.utils.data import DataLoader\n"
    assert added("import os\nimport sys\n\nx = 1\n", "torch") == "import os\nimport sys\n\nimport torch\n\nx = 1\n"


REBINDS_OS = '''\
import json

import lmdb
from torch.utils.data import Dataset


class DS(Dataset):
    def __init__(self, path):
        self.env = lmdb.open(path, readonly=True, lock=False)

    def __len__(self):
        return 4

    def __getitem__(self, i):
        with self.env.begin() as txn:
            return json.loads(txn.get(str(i).encode()) or b"null"), os


os = "posix"  # the file's own `os`, read by __getitem__
'''


def test_fix_in_a_module_that_rebinds_os_uses_the_alias():
    out = fix_source(REBINDS_OS, "ds.py", Config(select=("FRK101",)), unsafe=True).source
    assert out.startswith("import json\nimport os as _os\n\nimport lmdb\n")
    assert out.count("_os.getpid()") == 2 and " os.getpid()" not in out
    assert 'return json.loads(txn.get(str(i).encode()) or b"null"), os\n' in out
    assert out.endswith('os = "posix"  # the file\'s own `os`, read by __getitem__\n')
