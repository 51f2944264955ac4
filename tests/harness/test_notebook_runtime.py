"""FRK405 at runtime: a real notebook's code cells executed in order in a ``__main__`` that has no
file (``python -c``, as a Jupyter kernel runs them), with DataLoader workers under spawn and
forkserver. A dataset class defined in the notebook cannot be found by the workers; the same notebook
importing the class from a module next to it runs. The linter agrees on both notebooks."""

from __future__ import annotations

import re

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.notebook import check_notebook
from tests.rules._support import clean_env, run_python

from .conftest import RUNTIME

pytest.importorskip("torch")

NOTEBOOKS = RUNTIME / "notebooks"

# Reads the notebook with the standard library and runs its code cells one after the other in the
# namespace of this file-less __main__, like a kernel. No linter code is involved.
RUNNER = """
import json, sys
nb = json.load(open(sys.argv[1], encoding="utf-8"))
for cell in nb["cells"]:
    if cell["cell_type"] == "code":
        exec(compile("".join(cell["source"]), "<cell>", "exec"), globals())
"""


def run_notebook(name: str, method: str):
    return run_python(
        ["-c", RUNNER, name], NOTEBOOKS, clean_env(FORKSAFE_START_METHOD=method), 150,
        lambda out, err: f"{name} under {method} did not finish:\n{err[-2000:]}",
    )


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_class_defined_in_the_notebook_is_not_found_by_workers(method):
    proc = run_notebook("defined_in_notebook.ipynb", method)
    assert proc.returncode != 0
    # the module's repr is "(built-in)" up to Python 3.11 and names its loader from 3.12 (seen on the
    # GPU machine's 3.12.3): match the meaning, not one version's text
    assert re.search(r"AttributeError: Can't get attribute 'Squares' on <module '__main__' "
                     r"\((?:built-in|<class '_frozen_importlib\.BuiltinImporter'>)\)>", proc.stderr), proc.stderr[-2000:]
    assert "batches" not in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_class_imported_from_a_module_next_to_the_notebook_works(method):
    proc = run_notebook("imported_from_module.ipynb", method)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["batches [[0.0, 1.0, 4.0, 9.0], [16.0, 25.0, 36.0, 49.0]]"]


@pytest.mark.slow
def test_fork_runs_the_notebook_defined_class():
    """Only fork hides the hazard (Linux before Python 3.14): the workers inherit the namespace."""
    proc = run_notebook("defined_in_notebook.ipynb", "fork")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["batches [[0.0, 1.0, 4.0, 9.0], [16.0, 25.0, 36.0, 49.0]]"]


def test_the_linter_flags_exactly_the_failing_notebook():
    cfg = Config(select=("FRK", "FRK501"))
    bad, _ = check_notebook((NOTEBOOKS / "defined_in_notebook.ipynb").read_bytes(), "defined_in_notebook.ipynb", cfg)
    good, _ = check_notebook((NOTEBOOKS / "imported_from_module.ipynb").read_bytes(), "imported_from_module.ipynb", cfg)
    assert [(f.code, f.cell, f.line) for f in bad] == [("FRK405", 3, 1)]
    assert good == []
