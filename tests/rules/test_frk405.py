"""FRK405 and notebooks: exact findings with cell and line, magics, jupytext, bad notebooks, the CLI."""

from __future__ import annotations

import json
import subprocess

import pytest

from flake8_forksafe.config import Config
from flake8_forksafe.notebook import NotebookError, check_notebook, is_jupytext, neutralise, source_of
from tests.conftest import tool
from tests.helpers import ROOT
from tests.rules._support import check_dedented

CFG = Config(select=("FRK",))
JUPYTEXT_HEAD = """\
# ---
# jupyter:
#   jupytext:
#     text_representation:
#       format_name: percent
# ---

"""


def notebook(*cells, language="python") -> bytes:
    """nbformat-4 JSON with the given cells: a string is a code cell, ("markdown", text) another kind."""
    out = []
    for c in cells:
        kind, src = ("code", c) if isinstance(c, str) else c
        out.append({"cell_type": kind, "metadata": {}, "source": src.splitlines(keepends=True)})
    meta = {"language_info": {"name": language}}
    return json.dumps({"cells": out, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}, indent=1).encode()


DATASET = """\
class Squares(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return i * i
"""
IMPORTS = "import torch\nfrom torch.utils.data import DataLoader, Dataset\n"


def codes(findings):
    return [(f.code, f.cell, f.line, f.col) for f in findings]


def test_notebook_positions_are_cell_and_line():
    data = notebook(
        ("markdown", "# title\n"),
        "%matplotlib inline\n" + IMPORTS,
        "x = 1\n\n" + DATASET,
        "loader = DataLoader(Squares(), num_workers=2)\nfor b in loader:\n    print(b)\n",
    )
    findings, notes = check_notebook(data, "nb.ipynb", CFG)
    assert codes(findings) == [("FRK405", 3, 3, 0)]  # no FRK401: a guard does nothing in a notebook
    assert notes == []
    (f,) = findings
    assert f.end_line == 8 and "Can't get attribute 'Squares' on <module '__main__' ...>" in f.message
    assert f.message.endswith("move it into a module next to the notebook and import it")


def test_magics_are_neutralised_line_for_line():
    lines = ["%time x = f()", "    !ls -l", "files = !ls", "obj?", "y = 2 % 3"]
    assert neutralise(lines) == ["pass  # %magic", "    pass  # !magic", "files = None  # magic", "pass  # help", "y = 2 % 3"]
    assert neutralise(["%%bash", "echo (", ""]) == ["# %%bash", "# echo (", ""]
    assert neutralise(["%%time", "z = 1"]) == ["pass  # cell magic", "z = 1"]


def test_a_cell_that_does_not_parse_is_left_out_and_named():
    data = notebook(IMPORTS, "def broken(:\n", DATASET, "DataLoader(Squares(), num_workers=2)\n")
    findings, notes = check_notebook(data, "nb.ipynb", CFG)
    assert codes(findings) == [("FRK405", 3, 1, 0)]
    assert notes == ["cell 2 skipped: syntax error"]


@pytest.mark.parametrize(
    "data,message",
    [
        (b"{not json", "skipped: not a notebook: invalid JSON at line 1, column 2: Expecting property name enclosed in double quotes"),
        (b"[1, 2]", "skipped: not a notebook: the JSON is not an object"),
        (b'{"metadata": {}}', 'skipped: not a notebook: no "cells" list'),
        (b"\xff\xfe{", "skipped: not a notebook: cannot decode as UTF-8 (invalid start byte)"),
    ],
)
def test_bad_notebooks_raise_one_line(data, message):
    with pytest.raises(NotebookError) as exc:
        source_of(data)
    assert exc.value.message == message


def test_other_kernels_are_skipped():
    with pytest.raises(NotebookError, match="language is r, not Python"):
        source_of(notebook("x <- 1", language="R"))


def test_exemptions():
    fork = notebook(IMPORTS, DATASET, "DataLoader(Squares(), num_workers=2, multiprocessing_context='fork')\n")
    zero = notebook(IMPORTS, DATASET, "DataLoader(Squares(), num_workers=0)\n")
    global_fork = notebook("import multiprocessing as mp\nmp.set_start_method('fork', force=True)\n" + IMPORTS, DATASET,
                           "DataLoader(Squares(), num_workers=2)\n")
    imported = notebook("from torch.utils.data import DataLoader\nfrom data import Squares, collate\n",
                        "DataLoader(Squares(), num_workers=2, collate_fn=collate)\n")
    for data in (fork, zero, global_fork, imported):
        assert check_notebook(data, "nb.ipynb", CFG)[0] == []


def test_spawn_context_is_not_an_exemption_and_partial_collate_is_followed():
    data = notebook(
        IMPORTS + "import functools\nfrom data import Squares\n",
        "def collate(batch, pad):\n    return batch\n",
        "DataLoader(Squares(), num_workers=2, multiprocessing_context='spawn',\n"
        "           collate_fn=functools.partial(collate, pad=0))\n",
    )
    assert codes(check_notebook(data, "nb.ipynb", CFG)[0]) == [("FRK405", 2, 1, 0)]


def test_jupytext_detection():
    assert is_jupytext(JUPYTEXT_HEAD + "# %%\nx = 1\n")
    assert not is_jupytext("# %%\nx = 1\n")  # cells without a jupytext header: a plain script
    assert not is_jupytext(JUPYTEXT_HEAD + "x = 1\n")  # the light format has no # %% cells
    assert not is_jupytext("import os\n" + JUPYTEXT_HEAD + "# %%\n")


def test_jupytext_file_gets_frk405_not_frk401_and_plain_script_the_reverse():
    body = IMPORTS + "\n\n# %%\n" + DATASET + "\n\n# %%\nloader = DataLoader(Squares(), num_workers=2)\nfor b in loader:\n    pass\n"
    as_notebook = check_dedented(JUPYTEXT_HEAD + "# %%\n" + body, "nb.py", CFG)
    assert [(f.code, f.line) for f in as_notebook] == [("FRK405", 14)]
    as_script = check_dedented(body.replace("# %%\n", ""), "train.py", CFG)
    assert [f.code for f in as_script] == ["FRK401"]


def test_cli_text_json_sarif_and_fix(tmp_path):
    nb = tmp_path / "explore.ipynb"
    nb.write_bytes(notebook(IMPORTS, DATASET, "loader = DataLoader(Squares(), num_workers=2)\n"))
    (tmp_path / "broken.ipynb").write_bytes(b"{")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "copy.ipynb").write_bytes(nb.read_bytes())
    forksafe = tool("forksafe")
    r = subprocess.run([forksafe, "check", "--no-cache", str(tmp_path)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1
    lines = [line for line in r.stdout.splitlines() if " FRK" in line]  # findings, not the summary
    assert [line.split(" class Squares ")[0] for line in lines] == [
        f"{tmp_path}/explore.ipynb:cell 2:1:1: FRK405",
        f"{tmp_path}/sub/copy.ipynb:cell 2:1:1: FRK405",
    ]
    assert r.stderr == f"forksafe: {tmp_path}/broken.ipynb: skipped: not a notebook: invalid JSON at line 1, column 2: Expecting property name enclosed in double quotes\n"
    r = subprocess.run([forksafe, "check", "--no-cache", "--format", "json", "explore.ipynb"], capture_output=True, text=True, cwd=tmp_path)
    (row,) = json.loads(r.stdout)
    assert (row["path"], row["cell"], row["line"], row["column"], row["code"]) == ("explore.ipynb", 2, 1, 1, "FRK405")
    r = subprocess.run([forksafe, "check", "--no-cache", "--format", "sarif", "explore.ipynb"], capture_output=True, text=True, cwd=tmp_path)
    (res,) = json.loads(r.stdout)["runs"][0]["results"]
    assert res["properties"] == {"fix": "none", "notebookCell": 2}  # FRK405 has no automatic fix
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 1
    assert res["message"]["text"].startswith("cell 2, line 1: class Squares is defined in the notebook")
    before = nb.read_bytes()
    r = subprocess.run([forksafe, "fix", "explore.ipynb"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1 and nb.read_bytes() == before  # FRK405 has no fix: nothing to write
    assert "explore.ipynb:cell 2:1:1: FRK405 class Squares" in r.stdout


def test_fixture_notebooks_match_their_annotations():
    """The `# FRK405: col` comments inside the fixture notebooks' cells are the expected findings."""
    from tests.helpers import EXPECT

    for path in sorted((ROOT / "fixtures").rglob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        want = []
        for number, cell in enumerate(nb["cells"], start=1):
            if cell["cell_type"] == "code":
                for i, line in enumerate("".join(cell["source"]).splitlines(), start=1):
                    want += [(code, number, i, int(col)) for code, col in EXPECT.findall(line)]
        got, _ = check_notebook(path.read_bytes(), str(path), Config(select=("FRK", "FRK501")))
        assert sorted(codes(got)) == sorted(want), path


def test_fix_on_standard_input_gives_the_notebook_back_unchanged(tmp_path):
    data = notebook(IMPORTS, DATASET, "loader = DataLoader(Squares(), num_workers=2)\n")
    r = subprocess.run([tool("forksafe"), "fix", "--stdin-filename", "nb.ipynb", "-"], input=data, capture_output=True, cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout == data
    assert b"nb.ipynb:cell 2:1:1: FRK405 class Squares" in r.stderr


def test_a_notebook_lambda_reaching_workers_is_one_finding_frk405s():
    """One finding per hazard: FRK201's fix (a module-level def) would still live in the notebook's
    __main__, so in a notebook the lambda is FRK405's alone; the same code as a script is FRK201's."""
    cells = (
        "from torch.utils.data import DataLoader\nfrom mydata import ImageDataset\n",
        "loader = DataLoader(ImageDataset('data/'), num_workers=4, collate_fn=lambda b: b)\n",
    )
    both = Config(select=("FRK201", "FRK405"))
    assert codes(check_notebook(notebook(*cells), "nb.ipynb", both)[0]) == [("FRK405", 2, 1, 69)]
    as_script = check_dedented("".join(cells), "train.py", both)
    assert [(f.code, f.line, f.col) for f in as_script] == [("FRK201", 3, 69)]
    # a lambda FRK405 does not report (the loader forks explicitly) stays FRK201's
    fork = cells[1].replace("num_workers=4,", "num_workers=4, multiprocessing_context='fork',")
    got = codes(check_notebook(notebook(cells[0], fork), "nb.ipynb", both)[0])
    assert [c[0] for c in got] == ["FRK201"]
