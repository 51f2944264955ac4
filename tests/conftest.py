import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    """A console script of the environment running the tests."""
    p = BIN / name
    return str(p) if p.exists() else name


@pytest.fixture
def run_env():
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env
