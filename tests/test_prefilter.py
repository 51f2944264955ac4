"""The pre-filter never loses a finding: filtered and unfiltered runs agree.

Compared on every fixture, the held-out corpus (tests/corpus), the rules' own examples, generated
programs built from the shapes the ast gate reasons about (imports and aliases, starters reached
from module level or not, main guards, setters, "fork", dataset constructors, ``type()``), and the
installed torch package's own sources (found without importing torch).
``python benchmarks/prefilter_check.py`` runs the same comparison over the whole benchmark corpus
(torch, torchvision, timm, monai).
"""

from __future__ import annotations

import importlib.util
import os
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flake8_forksafe.config import Config
from flake8_forksafe.engine import check_source
from flake8_forksafe.model import SourceError
from flake8_forksafe.source import decode
from flake8_forksafe.prefilter import could_have_findings, text_gate
from tests.helpers import fixture_files

CORPUS = sorted(Path(__file__).parent.joinpath("corpus").rglob("*.py"))

ALL = Config(select=("FRK", "FRK501"))


def _torch_files():
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(list(spec.submodule_search_locations)[0])
    return sorted(root.rglob("*.py"))


TORCH = _torch_files()
CHUNKS = 12
# CI checks a quarter of torch's files (3 of 12 interleaved chunks: every part of the package);
# FORKSAFE_FULL_CORPUS=1 checks them all (minutes: libcst on ~2,200 files).
RUN_CHUNKS = range(CHUNKS) if os.environ.get("FORKSAFE_FULL_CORPUS") == "1" else range(0, CHUNKS, 4)


def _findings(data: bytes, path: str, prefilter: bool):
    try:
        return [(f.code, f.line, f.col) for f in check_source(data, path, ALL, prefilter=prefilter)]
    except SourceError as exc:
        return ["error", exc.message]


@pytest.mark.parametrize("path", fixture_files() + CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixtures_filtered_equals_unfiltered(path):
    data = path.read_bytes()
    assert could_have_findings(decode(data), ALL.knowledge) or not _findings(data, str(path), False)
    assert _findings(data, str(path), True) == _findings(data, str(path), False)


@pytest.mark.slow
@pytest.mark.skipif(not TORCH, reason="torch is not installed")
@pytest.mark.parametrize("chunk", RUN_CHUNKS)
def test_torch_sources_rejected_files_have_no_findings(chunk):
    """Every torch file the pre-filter rejects has no finding when checked without it."""
    rejected = 0
    for path in TORCH[chunk::CHUNKS]:
        data = path.read_bytes()
        try:
            text = decode(data)
        except SourceError:
            continue
        if could_have_findings(text, ALL.knowledge):
            continue
        rejected += 1
        result = _findings(data, str(path), False)
        assert result == [] or result[0] == "error", (path, result)
    assert rejected > 0


def test_text_gate_examples():
    k = ALL.knowledge
    assert text_gate("from torch.utils.data import Dataset", k)
    assert text_gate("import torch.multiprocessing as mp\nmp.spawn(f)", k)
    assert not text_gate("import torch.multiprocessing as mp\nx = mp.cpu_count()", k)
    assert not text_gate("class Pool2d(nn.Module): pass", k)
    ext = Config(extra_dataset_bases=("mylib.Records",)).knowledge
    assert text_gate("from mylib import Records", ext) and not text_gate("from mylib import Records", k)


def test_rule_examples_filtered_equals_unfiltered():
    from flake8_forksafe.checks import ALL_RULES

    n = 0
    for rule in ALL_RULES:
        for ex in (*rule.VALID, *rule.INVALID):
            code = textwrap.dedent(ex if isinstance(ex, str) else ex.code)
            data = code.encode()
            assert _findings(data, rule.code, True) == _findings(data, rule.code, False), (rule.code, code)
            n += 1
    assert n > 60


# -- generated programs ------------------------------------------------------------------------------
# Each piece is one shape the ast gate has to reason about; a program is a random mix of them.

MP_IMPORTS = [
    "import multiprocessing as mp",
    "import torch.multiprocessing as mp",
    "from multiprocessing import get_context, Pool, Process, set_start_method",
    "import multiprocessing",
    "from concurrent.futures import ProcessPoolExecutor as PPE",
    "from torch.multiprocessing import spawn",
    "from .mp import get_context",
]
STARTERS = [
    "mp.Pool(2)",
    "mp.Process(target=work).start()",
    "multiprocessing.Pool(2).map(work, range(4))",
    "Pool(2)",
    "PPE(2).submit(work, 1)",
    "spawn(work, nprocs=2)",
    'get_context("spawn").Pool(2)',
    'mp.get_context("fork").Process(target=work)',
    "Process(target=work).start()",
    "CTX.Pool(2)",
    "helper()",
    "Runner().go()",
    "W().start()",
    "torch.zeros(1).cuda()",
]
TOP = [
    "main()",
    "x = main()",
    "for _ in range(2):\n    main()",
    "R = Runner()",
    "R.go()",
    "helper()",
    "print(main)",
    "log = make_logger()",
    'CTX = mp.get_context("spawn")',
    "with open(__file__) as fh:\n    main()",
]
GUARDS = ['if __name__ == "__main__":', 'if "__main__" == __name__:', "if __name__ != '__main__':", "if True:"]
SETTERS = [
    'mp.set_start_method("spawn")',
    'set_start_method("forkserver", force=True)',
    'multiprocessing.set_start_method("fork")',
    "torch.multiprocessing.set_start_method(METHOD)",
]
DATASET_CALLS = [
    "ds = MyDataset(transform=lambda x: x)",
    'ds = CIFAR10("r", transform=lambda x: x)',
    'ds = torchvision.datasets.MNIST("r", transform=lambda x: x)',
    'ds = D.ImageFolder("r", loader=lambda p: p)',
    "ds = MetaDataset(fn)",
    'K = type("K", (Dataset,), {})',
    'K2 = type("Other", (tud.Dataset,), {"__len__": lambda self: 0})',
]
DATASET_IMPORTS = [
    "from mylib import MyDataset, MetaDataset",
    "from torchvision.datasets import CIFAR10",
    "import torchvision",
    "import torchvision.datasets as D",
    "from torch.utils.data import Dataset",
    "import torch.utils.data as tud",
]


@st.composite
def programs(draw):
    lines = ["import torch"] if draw(st.booleans()) else []
    lines += draw(st.lists(st.sampled_from(MP_IMPORTS + DATASET_IMPORTS), max_size=4))
    if draw(st.booleans()):
        lines.append(draw(st.sampled_from(SETTERS)))
    lines.append("def work(*a):\n    return a")
    body = draw(st.lists(st.sampled_from(STARTERS), max_size=2)) or ["pass"]
    lines.append("def main():\n" + "\n".join("    " + b for b in body))
    inner = draw(st.lists(st.sampled_from(STARTERS + SETTERS + DATASET_CALLS), max_size=1)) or ["pass"]
    lines.append("def helper():\n    def local(x):\n        return x\n" + "\n".join("    " + b for b in inner))
    if draw(st.booleans()):
        lines.append("class Runner:\n    def go(self):\n        " + draw(st.sampled_from(STARTERS)))
    if draw(st.booleans()):
        lines.append("class W(" + draw(st.sampled_from(["mp.Process", "Process", "multiprocessing.Process", "object"])) + "):\n    pass")
    lines += draw(st.lists(st.sampled_from(DATASET_CALLS), max_size=2))
    top = draw(st.lists(st.sampled_from(TOP + STARTERS + SETTERS), max_size=3))
    if top and draw(st.booleans()):
        guard = draw(st.sampled_from(GUARDS))
        lines.append(guard + "\n" + "\n".join("    " + ln.replace("\n", "\n    ") for ln in top))
    else:
        lines += top
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(src=programs())
def test_generated_programs_filtered_equals_unfiltered(src):
    data = src.encode()
    assert _findings(data, "gen.py", True) == _findings(data, "gen.py", False)


@pytest.mark.parametrize(
    "src",
    [
        # dataset constructors named in the file, not defined in it (FRK201)
        "from mylib import MyDataset\nds = MyDataset(transform=lambda x: x)\n",
        'from torchvision.datasets import CIFAR10\nds = CIFAR10("r", transform=lambda x: x)\n',
        # a starter reached from module level through a function and a class (FRK401)
        "import multiprocessing as mp\ndef f(x):\n    return x\ndef main():\n    mp.Pool(2).map(f, [1])\nmain()\n",
        "import multiprocessing as mp\nclass R:\n    def go(self):\n        mp.Pool(2)\nR().go()\n",
        # a setter at module level (FRK402/403) and in a function with "fork" (FRK404)
        'import torch\nimport multiprocessing as mp\nmp.set_start_method("spawn")\n',
        'import torch\nimport multiprocessing as mp\ndef f():\n    torch.zeros(1).cuda()\n    mp.set_start_method("fork")\n',
    ],
)
def test_gate_keeps_what_the_rules_find(src):
    data = src.encode()
    found = _findings(data, "x.py", False)
    assert found and found[0] != "error", found
    assert _findings(data, "x.py", True) == found


@pytest.mark.parametrize(
    "src",
    [
        # starters only inside functions nothing at module level refers to (a library module)
        "import multiprocessing as mp\ndef run():\n    return mp.get_context('spawn').Pool(2)\nlog = print\n",
        # a "data" module that is not a dataset module, and a look-alike get_context
        "from .ctx import code_context\nmaybe_data = None\nmaybe_data.get_size()\nx = code_context.get_context()\n",
    ],
)
def test_gate_rejects_library_shapes(src):
    assert not could_have_findings(src, ALL.knowledge)
