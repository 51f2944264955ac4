"""The pre-filter never loses a finding: filtered and unfiltered runs agree on real code.

Real code = every fixture plus the installed torch package's own sources (found without importing
torch). The benchmark (benchmarks/bench.py --prefilter-check) runs the same comparison over the
whole benchmark corpus (torch, torchvision, timm, monai).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.engine import SourceError, check_source, decode
from flake8_forksafe.prefilter import could_have_findings, text_gate
from tests.helpers import fixture_files

ALL = Config(select=("FRK", "FRK501")).with_knowledge()


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


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
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
    ext = Config(extra_dataset_bases=("mylib.Records",)).with_knowledge().knowledge
    assert text_gate("from mylib import Records", ext) and not text_gate("from mylib import Records", k)
