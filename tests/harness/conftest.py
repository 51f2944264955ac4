"""Harness tests. (``pytest_plugins = ["pytester"]`` lives in test_plugin.py: pytest refuses it in a
non-root conftest when the whole suite runs.)"""

import os
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "fixtures" / "runtime"
FIXED = RUNTIME / "fixed"


@pytest.fixture
def runtime_dir():
    return RUNTIME


def has_proc() -> bool:
    return os.path.isdir("/proc/self/fd")
