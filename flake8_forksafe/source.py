"""Source text: bytes -> text (encoding, BOM, coding cookie) and back, and text -> libcst module.

Every failure is a ``SourceError`` with a one-line message.
"""

from __future__ import annotations

import ast
import codecs
import io
import tokenize
from typing import TYPE_CHECKING, Tuple, Union

from flake8_forksafe.model import SourceError

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

# libcst (~0.3 s to import) is imported by ``parse``, so that a run whose files all fail the
# pre-filter never loads it.

MAX_NESTING = 150  # bracket / block depth beyond which a file is skipped (libcst recursion)




def encoding_of(source: Union[str, bytes]) -> Tuple[str, bool]:
    """(encoding, has BOM) of a file's source, so that a rewritten text can be written back alike."""
    if isinstance(source, str):
        return "utf-8", source.startswith("\ufeff")
    bom = source.startswith(codecs.BOM_UTF8)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as exc:
        raise SourceError(f"cannot decode: {exc}") from None
    return ("utf-8" if encoding == "utf-8-sig" else encoding), bom


def encode(text: str, like: Union[str, bytes], encoding: str, bom: bool) -> Union[str, bytes]:
    """``text`` (no BOM) in the form of ``like``: bytes in ``encoding`` or str, with the BOM if it had one."""
    if isinstance(like, bytes):
        return (codecs.BOM_UTF8 if bom else b"") + text.encode(encoding)
    return ("\ufeff" if bom else "") + text


def decode(source: Union[str, bytes], path: str = "<string>") -> str:
    """Decode bytes as Python does (BOM, coding cookie, UTF-8 default); one-line error otherwise."""
    if isinstance(source, str):
        return source[1:] if source.startswith("\ufeff") else source
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as exc:
        raise SourceError(f"skipped: cannot decode: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    try:
        text = source.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"skipped: cannot decode as {encoding}: {_one_line(exc)[:160]}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def nesting_depth(text: str) -> int:
    """Cheap upper bound of syntactic nesting: brackets plus indentation levels."""
    depth = best = 0
    for ch in text:
        if ch in "([{":
            depth += 1
            if depth > best:
                best = depth
        elif ch in ")]}":
            depth -= 1
    indent = 0
    for line in text.splitlines():
        stripped = line.lstrip(" \t")
        if stripped and not stripped.startswith("#"):
            width = len(line) - len(stripped)
            if width > indent:
                indent = width
    return max(best, indent // 4 if indent else 0)


def parse(text: str, path: str = "<string>") -> cst.Module:
    import libcst as cst

    if nesting_depth(text) > MAX_NESTING:
        raise SourceError(f"skipped: nesting deeper than {MAX_NESTING} levels")
    from flake8_forksafe.guard import too_deep

    deep = too_deep(text)
    if deep:
        raise SourceError(deep)
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise SourceError(_syntax_message(text, exc)) from None
    except cst.CSTValidationError as exc:  # e.g. identifiers newer than this Python's Unicode tables
        raise SourceError(f"skipped: syntax not supported: {_one_line(exc)[:160]}") from None
    except RecursionError:
        raise SourceError("skipped: nesting too deep to parse") from None
    except (ValueError, MemoryError) as exc:
        raise SourceError(f"skipped: syntax error: {_one_line(exc)[:160]}") from None


def _syntax_message(text: str, exc: cst.ParserSyntaxError) -> str:
    """Python's own wording and position (as flake8's E999), computed only for broken files."""
    try:
        compile(text, "<checked>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as err:
        return f"skipped: syntax error at line {err.lineno}, column {err.offset or 0}: {err.msg}"
    except ValueError as err:  # a null byte, before Python 3.12
        return f"skipped: syntax error: {_one_line(err)[:160]}"
    except (RecursionError, MemoryError):
        return "skipped: syntax error: nesting too deep"
    first = (exc.message or "invalid syntax").splitlines()[0]
    return f"skipped: syntax not supported by the parser at line {exc.raw_line}: {first[:160]}"


