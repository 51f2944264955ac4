"""``forksafe fix`` on notebooks: fixes applied to the code cells and written back as the same JSON
(outputs, metadata, execution counts, other cells, indent, escaping, final newline kept; magics
restored), ``--diff`` per cell, standard input, idempotence, and the layouts it declines to rewrite.
Real subprocess runs of the CLI."""

from __future__ import annotations

import json
import subprocess

from flake8_forksafe.config import Config
from flake8_forksafe.notebook import check_notebook, fix_notebook
from tests.conftest import tool

CFG = Config(select=("FRK", "FRK501"), unsafe_fixes=True)  # FRK501's fix is unsafe
IMPORTS = "%matplotlib inline\nimport lmdb\nfrom torch.utils.data import DataLoader, Dataset\nfrom mydata import Frames"
DATASET = (
    "class LmdbFrames(Dataset):\n"
    "    def __init__(self, root):\n"
    "        self.env = lmdb.open(root, readonly=True)\n"
    "\n"
    "    def __getitem__(self, i):\n"
    "        with self.env.begin() as txn:\n"
    "            return txn.get(b'%d' % i)\n"
)
LOADER = "!ls data\nloader = DataLoader(Frames('x'), num_workers=2, multiprocessing_context='spawn')"


def notebook(*cells, indent=1, ensure_ascii=False, as_lines=True) -> bytes:
    out = []
    for c in cells:
        kind, src = ("code", c) if isinstance(c, str) else c
        cell = {"cell_type": kind, "metadata": {"tags": ["keep"]}, "source": src.splitlines(keepends=True) if as_lines else src}
        if kind == "code":
            cell["execution_count"] = 7
            cell["outputs"] = [{"name": "stdout", "output_type": "stream", "text": ["héllo ✓\n"]}]
        out.append(cell)
    nb = {"cells": out, "metadata": {"kernelspec": {"language": "python", "name": "python3"}, "language_info": {"name": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii) + "\n").encode()


def sources(data: bytes):
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in json.loads(data)["cells"]]


def test_fixes_are_written_back_into_their_cells_and_nothing_else_changes():
    data = notebook(("markdown", "# Explore ✓\n"), IMPORTS, DATASET, LOADER)
    res = fix_notebook(data, "nb.ipynb", CFG)
    assert res.changed and not res.errors
    new = json.loads(res.source)
    old = json.loads(data)
    # only the sources of three code cells changed; outputs, metadata, counts and the markdown cell did not
    for a, b in zip(old["cells"], new["cells"]):
        assert {k: v for k, v in a.items() if k != "source"} == {k: v for k, v in b.items() if k != "source"}
    assert new["metadata"] == old["metadata"] and new["nbformat"] == 4
    got = sources(res.source)
    assert got[0] == "# Explore ✓\n"
    assert got[1] == "import os\n\n" + IMPORTS  # the magic line comes back as it was
    assert got[2].startswith(
        "class LmdbFrames(Dataset):\n    def __init__(self, root):\n        self._env_args = (root,)\n"
    )
    assert "    @property\n    def env(self):\n" in got[2] and got[2].endswith("        return state\n")
    assert got[3] == (
        "!ls data\n"
        "loader = DataLoader(\n"
        "    Frames('x'), num_workers=2, multiprocessing_context='spawn', persistent_workers=True\n"
        ")"
    )
    # the same JSON layout: Jupyter's indent=1, non-ASCII kept as it is, the final newline
    assert res.source == (json.dumps(new, indent=1, ensure_ascii=False) + "\n").encode()
    assert "✓".encode() in res.source
    # what is left: FRK405 (no automatic fix), in its cell; the fixed findings carry their cells too
    assert [(f.code, f.cell, f.line) for f in res.remaining] == [("FRK405", 3, 1)]
    assert sorted((f.code, f.cell) for f in res.fixed) == [("FRK101", 3), ("FRK501", 4)]
    again = fix_notebook(res.source, "nb.ipynb", CFG)
    assert not again.changed and again.source == res.source


def test_string_sources_and_other_indents_are_kept():
    data = notebook(IMPORTS, DATASET, indent=2, ensure_ascii=True, as_lines=False)
    res = fix_notebook(data, "nb.ipynb", CFG)
    assert res.changed
    new = json.loads(res.source)
    assert all(isinstance(c["source"], str) for c in new["cells"])
    assert res.source == (json.dumps(new, indent=2, ensure_ascii=True) + "\n").encode()


def test_a_layout_json_cannot_write_again_is_declined_with_a_note():
    nb = json.loads(notebook(IMPORTS, DATASET))
    data = json.dumps(nb, separators=(",", ":")).encode() + b"\n\n\n"
    data = data.replace(b'"cells":', b'"cells" :')  # hand-edited spacing
    res = fix_notebook(data, "nb.ipynb", CFG)
    assert not res.changed and res.source == data
    assert any("not rewritten: its JSON is not laid out as json.dumps writes it" in n for n in res.notes)
    assert [f.code for f in res.remaining] == [f.code for f in check_notebook(data, "nb.ipynb", CFG)[0]]


def test_an_import_added_above_a_leading_magic_keeps_the_magic():
    # FRK101's fix adds `import os` to the first code cell; when that cell starts with a magic
    # (neutralised to `pass` while fixing) the import goes above it and the magic comes back as it was
    data = notebook("%load_ext autoreload\nimport lmdb\nfrom torch.utils.data import Dataset", DATASET)
    res = fix_notebook(data, "nb.ipynb", CFG)
    assert res.changed
    assert sources(res.source)[0] == "import os\n\n%load_ext autoreload\nimport lmdb\nfrom torch.utils.data import Dataset"


def test_cli_fix_writes_the_notebook_diff_labels_cells_and_stdin_returns_it(tmp_path):
    data = notebook(IMPORTS, DATASET, LOADER)
    nb = tmp_path / "explore.ipynb"
    nb.write_bytes(data)
    forksafe = tool("forksafe")
    r = subprocess.run([forksafe, "fix", "--diff", "--extend-select", "FRK501", "--unsafe-fixes", "explore.ipynb"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 1 and nb.read_bytes() == data  # --diff writes nothing; FRK405 remains
    assert "--- a/explore.ipynb:cell 1\n+++ b/explore.ipynb:cell 1\n" in r.stdout
    assert "--- a/explore.ipynb:cell 2\n+++ b/explore.ipynb:cell 2\n" in r.stdout
    assert "+    Frames('x'), num_workers=2, multiprocessing_context='spawn', persistent_workers=True\n" in r.stdout
    r = subprocess.run([forksafe, "fix", "--extend-select", "FRK501", "--unsafe-fixes", "explore.ipynb"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert "Fixed 2 findings in 1 file." in r.stdout
    assert "explore.ipynb:cell 2:1:1: FRK405 class LmdbFrames" in r.stdout
    written = nb.read_bytes()
    assert written == fix_notebook(data, str(nb), Config(select=("FRK",), extend_select=("FRK501",), unsafe_fixes=True)).source
    r = subprocess.run([forksafe, "fix", "--extend-select", "FRK501", "--unsafe-fixes", "explore.ipynb"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert nb.read_bytes() == written and "Fixed" not in r.stdout  # idempotent
    r = subprocess.run([forksafe, "fix", "--extend-select", "FRK501", "--unsafe-fixes", "--stdin-filename", "nb.ipynb", "-"],
                       input=data, cwd=tmp_path, capture_output=True)
    assert r.stdout == written
