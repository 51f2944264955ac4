"""Jupyter notebooks: ``.ipynb`` files checked cell by cell, and jupytext ``.py`` notebooks.

A notebook is read with the standard library's ``json`` (nbformat 4, and the list-of-lines or string
``source`` of nbformat 3/4). Its code cells are joined into one Python source, one blank line between
cells; markdown and raw cells are left out. IPython syntax that is not Python is neutralised so that
the source parses, keeping every line where it was (a finding's line maps back exactly):

- a line magic (``%time x = f()``), a shell escape (``!ls``), a help query (``obj?``) and an
  assignment from one (``files = !ls``) become ``pass`` / ``files = None`` at the same indentation;
- a cell magic cell (``%%bash``, ``%%writefile``...) becomes comments, except the magics whose body
  is Python run in the notebook's namespace (``%%time``, ``%%timeit``, ``%%capture``...), whose first
  line alone is neutralised;
- a cell that still does not parse is left out (reported in one line), the others are checked.

Positions: ``Source.position(line)`` gives (cell, line in cell). Cells are numbered from 1 over ALL
the notebook's cells in file order (the index in the ``cells`` array plus one), so markdown cells count:
"cell 3" is the third cell a reader scrolls past, and ``cells[2]`` in the JSON.

The code of a notebook runs in a ``__main__`` module that has no file (the kernel's namespace):
that is what FRK405 is about and why FRK401 does not apply.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

NOTEBOOK_SUFFIX = ".ipynb"

# Cell magics whose body is Python executed in the notebook namespace.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "pypy", "python", "python3"})

_ASSIGN_FROM_MAGIC = re.compile(r"^(\s*)([A-Za-z_][\w.,\s\[\]]*?)\s*=\s*[%!]")
_HELP = re.compile(r"^\s*[\w.%]+\s*\?\??\s*$|^\s*\?\??[\w.]+\s*$")


class NotebookError(Exception):
    """The file is not a notebook that can be checked; ``message`` is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class Source:
    """The notebook's code cells as one Python source, with each line's origin."""

    text: str
    origin: List[Tuple[int, int]]  # per line of ``text``: (cell, line in cell), (0, 0) for separators
    skipped: List[str] = field(default_factory=list)  # one line per code cell left out

    def position(self, line: int) -> Tuple[int, int]:
        """(cell, line in cell) of a 1-based line of ``text``; (0, line) when unknown."""
        if 1 <= line <= len(self.origin) and self.origin[line - 1][0]:
            return self.origin[line - 1]
        return 0, line


def _cell_lines(cell: dict) -> List[str]:
    src = cell.get("source", cell.get("input", ""))
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    if not isinstance(src, str):
        return []
    return src.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _neutralise_line(line: str) -> str:
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if stripped.startswith(("%", "!")):
        return f"{indent}pass  # {stripped[:1]}magic"
    m = _ASSIGN_FROM_MAGIC.match(line)
    if m is not None:
        return f"{m.group(1)}{m.group(2)} = None  # magic"
    if _HELP.match(line) and not stripped.startswith("#"):
        return f"{indent}pass  # help"
    return line


def neutralise(lines: List[str]) -> List[str]:
    """The cell's lines with IPython syntax replaced by Python of the same line count."""
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = lines[first].lstrip()[2:].split(None, 1)[0] if lines[first].lstrip()[2:].strip() else ""
        if name not in PYTHON_CELL_MAGICS:
            return ["# " + line if line.strip() else line for line in lines]
        lines = list(lines)
        lines[first] = "pass  # cell magic"
    return [_neutralise_line(line) for line in lines]


def _parses(text: str) -> bool:
    flags = ast.PyCF_ONLY_AST | getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
    try:
        compile(text, "<cell>", "exec", flags, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def load(data: bytes) -> dict:
    """The notebook's JSON object; NotebookError with one line otherwise."""
    try:
        nb = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise NotebookError(f"skipped: not a notebook: cannot decode as UTF-8 ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise NotebookError(f"skipped: not a notebook: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise NotebookError("skipped: not a notebook: JSON nested too deep") from None
    if not isinstance(nb, dict):
        raise NotebookError("skipped: not a notebook: the JSON is not an object")
    cells = nb.get("cells")
    if cells is None and isinstance(nb.get("worksheets"), list):  # nbformat 3
        cells = [c for ws in nb["worksheets"] if isinstance(ws, dict) for c in ws.get("cells", [])]
    if not isinstance(cells, list):
        raise NotebookError("skipped: not a notebook: no \"cells\" list")
    nb["cells"] = cells
    return nb


def language(nb: dict) -> str:
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    info = meta.get("language_info") if isinstance(meta.get("language_info"), dict) else {}
    kernel = meta.get("kernelspec") if isinstance(meta.get("kernelspec"), dict) else {}
    lang = info.get("name") or kernel.get("language") or "python"
    return str(lang).lower()


def source_of(data: bytes) -> Source:
    """The Python source of a notebook's code cells. NotebookError for bad JSON or a notebook whose
    kernel is not Python."""
    nb = load(data)
    lang = language(nb)
    if lang not in ("python", "python3", "ipython", "ipython3"):
        raise NotebookError(f"skipped: the notebook's language is {lang}, not Python")
    cells = [
        (number, "\n".join(_cell_lines(cell)))
        for number, cell in enumerate(nb["cells"], start=1)
        if isinstance(cell, dict) and cell.get("cell_type") == "code"
    ]
    return join_cells(cells)


def join_cells(cells: Sequence[Tuple[int, str]]) -> Source:
    """One Python source from (cell number, cell text) pairs in execution order: magics neutralised,
    empty cells dropped, a cell that does not parse left out (named in ``skipped``)."""
    lines: List[str] = []
    origin: List[Tuple[int, int]] = []
    skipped: List[str] = []
    for number, text in cells:
        cell_lines = neutralise(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
        if not any(line.strip() for line in cell_lines):
            continue
        if not _parses("\n".join(cell_lines) + "\n"):
            skipped.append(f"cell {number} skipped: syntax error")
            continue
        for i, line in enumerate(cell_lines, start=1):
            lines.append(line)
            origin.append((number, i))
        lines.append("")  # a separator: a cell's last statement never runs into the next cell
        origin.append((0, 0))
    return Source("\n".join(lines) + ("\n" if lines else ""), origin, skipped)


# ------------------------------------------------------------------------------------------ jupytext

_JUPYTEXT_HEAD = 40  # lines of the header looked at


def is_jupytext(text: str) -> bool:
    """A ``.py`` file in jupytext's percent format: a YAML header in comments (``# ---`` ...
    ``# jupyter:`` ... ``#   jupytext:`` ... ``# ---``) at the top, and ``# %%`` cell markers."""
    if "jupytext" not in text or "# %%" not in text:
        return False
    head = text.lstrip("\ufeff").splitlines()
    i = 0
    while i < len(head) and (not head[i].strip() or head[i].startswith("#!") or "coding" in head[i]):
        i += 1
    if i >= len(head) or head[i].rstrip() != "# ---":
        return False
    saw_jupytext = False
    for line in head[i + 1 : i + _JUPYTEXT_HEAD]:
        if line.rstrip() == "# ---":
            break
        if not line.startswith("#"):
            return False
        if line.lstrip("#").strip().startswith("jupytext:"):
            saw_jupytext = True
    else:
        return False
    if not saw_jupytext:
        return False
    return any(line.startswith("# %%") for line in head)


# ------------------------------------------------------------------------------------------ checking


def check_notebook(data: bytes, path: str, config=None):
    """(findings, notes) of a ``.ipynb`` file's bytes: findings carry ``cell`` and lines of that cell;
    notes are one line each (cells left out). NotebookError when the file cannot be read as one."""
    return check_cells(source_of(data), path, config)


def check_cells(src: Source, path: str, config=None):
    """(findings, notes) of a joined notebook source (``join_cells``): FRK405 applies, FRK401 not;
    each finding's ``cell``, lines and columns are those of its cell."""
    from dataclasses import replace

    from flake8_forksafe.engine import check_source

    if not src.text.strip():
        return [], src.skipped
    out = []
    for f in check_source(src.text, path, config, interactive=True):
        cell, line = src.position(f.line)
        end_cell, end_line = src.position(f.end_line) if f.end_line else (0, 0)
        if end_cell != cell:  # a region that runs past its cell: keep its start only
            end_line, end_col = line, f.col
        else:
            end_col = f.end_col
        out.append(replace(f, cell=cell, line=line, end_line=end_line, end_col=end_col))
    return out, src.skipped


# ------------------------------------------------------------------------------------------ fixing

_MARK = "# forksafe:cell "
_MARK_LINE = re.compile(r"^# forksafe:cell (\d+)$")


@dataclass
class NotebookFix:
    """What ``fix_notebook`` did: the notebook's bytes (the input when nothing changed), the findings
    of the input that are gone and those of the output (cell and line in cell), and per changed cell
    (number, old source, new source) for a diff."""

    source: bytes
    changed: bool = False
    fixed: list = field(default_factory=list)
    remaining: list = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    cells: List[Tuple[int, str, str]] = field(default_factory=list)


def _layout(data: bytes) -> Optional[Tuple[Optional[int], bool, str]]:
    """(indent, ensure_ascii, ending) with which ``json.dumps`` writes exactly these bytes again (as
    Jupyter's ``indent=1`` does), or None: a rewrite would reformat the whole file."""
    text = data.decode("utf-8-sig")
    try:
        nb = json.loads(text)
    except ValueError:
        return None
    body = text.rstrip("\n")
    ending = text[len(body):]
    for indent in (1, 2, 4, None, 3, 8):
        for ascii_ in (False, True):
            if json.dumps(nb, indent=indent, ensure_ascii=ascii_) == body:
                return indent, ascii_, ending
    return None


def fix_notebook(data: bytes, path: str, config=None, unsafe: bool = False) -> NotebookFix:
    """Fix a ``.ipynb`` file: its code cells are joined (each after a marker line), fixed as one
    notebook source (FRK405 applies, FRK401 not), then split back into their cells. Only the
    ``source`` of changed code cells is replaced; outputs, metadata, execution counts, the other cells
    and the JSON layout (indent, escaping, final newline, list-of-lines or string sources) stay.
    Magic lines come back as they were; a fix that would change one, or move code across cells, is
    declined with a note, as is a notebook whose JSON layout ``json`` cannot write again.
    NotebookError for a file that is not a Python notebook."""
    from dataclasses import replace

    from flake8_forksafe.config import Config
    from flake8_forksafe.fix import _gone, fix_rounds

    config = config or Config()
    unsafe = unsafe or config.unsafe_fixes
    findings, skipped = check_notebook(data, path, config)
    result = NotebookFix(source=data, remaining=findings, notes=list(skipped))
    nb = load(data)
    cells = nb["cells"]
    raw: dict = {}
    joined: List[str] = []
    origin: List[Tuple[int, int]] = []
    for number, cell in enumerate(cells, start=1):
        if not (isinstance(cell, dict) and cell.get("cell_type") == "code"):
            continue
        lines = _cell_lines(cell)
        neut = neutralise(lines)
        if not any(line.strip() for line in neut) or not _parses("\n".join(neut) + "\n"):
            continue
        raw[number] = (lines, neut)
        joined.append(f"{_MARK}{number}")
        origin.append((0, 0))
        joined += neut
        origin += [(number, i) for i in range(1, len(neut) + 1)]
    if not raw or not any(f.fix for f in findings):
        return result
    text = "\n".join(joined) + "\n"
    errors: List[str] = []
    notes: List[str] = []
    new_text, before, _ = fix_rounds(text, path, config, unsafe, errors=errors, notes=notes, interactive=True)
    result.errors += errors
    result.notes += notes
    if new_text == text:
        return result

    def declined(why: str) -> NotebookFix:
        result.notes.append(f"not rewritten: {why}; its findings are listed as they are")
        return result

    if "worksheets" in json.loads(data.decode("utf-8-sig")):
        return declined("an nbformat 3 notebook")
    layout = _layout(data)
    if layout is None:
        return declined("its JSON is not laid out as json.dumps writes it (a rewrite would reformat it all)")
    segments: dict = {}
    order: List[int] = []
    current: Optional[int] = None
    lead: List[str] = []
    for line in new_text.split("\n"):
        m = _MARK_LINE.match(line)
        if m is not None:
            current = int(m.group(1))
            order.append(current)
            segments[current] = lead if not segments else []
            lead = []
            continue
        (segments[current] if current is not None else lead).append(line)
    if order != list(raw):
        return declined("a fix would move code across cells")
    new_cells: dict = {}
    for number in order:
        lines, neut = raw[number]
        got = _strip_end(segments[number])
        if got == _strip_end(neut):
            continue
        out: List[str] = []
        sm = difflib.SequenceMatcher(None, neut, got, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                out += lines[i1:i2]
            elif any(neut[i] != lines[i] for i in range(i1, i2)):
                return declined(f"a fix would change a magic line of cell {number}")
            else:
                out += got[j1:j2]
        out = _strip_end(out) + [""] * (len(lines) - len(_strip_end(lines)))
        new_cells[number] = "\n".join(out)
    if not new_cells:
        return result
    fresh = json.loads(data.decode("utf-8-sig"))
    for number, src in new_cells.items():
        cell = fresh["cells"][number - 1]
        old = cell.get("source", "")
        cell["source"] = src.splitlines(keepends=True) if isinstance(old, list) else src
        old_text = "".join(old) if isinstance(old, list) else old
        result.cells.append((number, old_text, src))
    indent, ascii_, ending = layout
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    new = bom + (json.dumps(fresh, indent=indent, ensure_ascii=ascii_) + ending).encode("utf-8")
    remaining, notes_after = check_notebook(new, path, config)
    result.source, result.changed, result.remaining = new, True, remaining
    result.notes = list(notes_after) + notes
    mapped = []
    for f in before:
        cell, line = origin[f.line - 1] if 1 <= f.line <= len(origin) else (0, f.line)
        mapped.append(replace(f, cell=cell, line=line, end_line=line))
    result.fixed = _gone(mapped, remaining)
    return result


def _strip_end(lines: List[str]) -> List[str]:
    out = list(lines)
    while out and not out[-1].strip():
        out.pop()
    return out
