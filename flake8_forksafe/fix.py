"""``forksafe fix``: apply the rules' fixes, one rule at a time, until nothing fixable is left.

Each round parses the current text, runs the enabled rules, and lets the first rule (registry order)
that has fixable findings rewrite the module. The result of every round must parse; a rule whose fix
does not parse or does not change the text is not asked again. Encoding, BOM and line endings of the
input are kept; files are written atomically.
"""

from __future__ import annotations

import codecs
import io
import os
import tempfile
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Sequence, Set, Union

import libcst as cst

from flake8_forksafe.config import Config
from flake8_forksafe.engine import (
    SAFE,
    UNSAFE,
    Finding,
    SourceError,
    analyse,
    check_source,
    could_have_findings,
    decode,
    enabled_rules,
    locate,
    run_rules,
)

MAX_ROUNDS = 12


@dataclass
class FixResult:
    source: Union[str, bytes]  # the fixed source, same type as the input
    fixed: List[Finding] = field(default_factory=list)  # findings of the input that are gone
    remaining: List[Finding] = field(default_factory=list)  # findings of the output
    changed: bool = False
    errors: List[str] = field(default_factory=list)  # one line per fixer that failed
    notes: List[str] = field(default_factory=list)  # one line each: why findings were left (not a failure)


def applicable(fix: Optional[str], unsafe: bool) -> bool:
    return fix == SAFE or (unsafe and fix == UNSAFE)


def fix_text(
    text: str,
    path: str,
    config: Config,
    unsafe: bool,
    codes: Optional[Set[str]] = None,
    errors: Optional[List[str]] = None,
) -> str:
    """The fixing loop on decoded text (no BOM). A rule whose fix raises is reported in ``errors``
    (one line each) and not asked again: one broken fixer never costs the user the other fixes."""
    rules = [r for r in enabled_rules(config) if r.fix_applicability and (codes is None or r.code in codes)]
    stuck: Set[str] = set()
    for _ in range(MAX_ROUNDS):
        if not could_have_findings(text, config):
            break
        a = analyse(text, config, path)
        live = [r for r in rules if r.code not in stuck]
        located = locate(a, run_rules(a, live), path, text)
        todo = [(rule, rep) for f, rule, rep in located if rep.fixable and applicable(f.fix, unsafe)]
        if not todo:
            break
        rule = todo[0][0]
        reports = [rep for r, rep in todo if r is rule]
        try:
            new_text = rule.fix(a, reports).code
        except NotImplementedError:
            stuck.add(rule.code)
            continue
        except Exception as exc:  # a bug in one fixer: keep going, say so
            stuck.add(rule.code)
            if errors is not None:
                errors.append(f"internal error in the {rule.code} fix ({type(exc).__name__}: {exc}); finding left as is")
            continue
        if new_text == text or not _parses(new_text):
            stuck.add(rule.code)
            continue
        text = new_text
    return text


def _parses(text: str) -> bool:
    try:
        cst.parse_module(text)
        compile(text, "<fixed>", "exec", dont_inherit=True)
    except Exception:
        return False
    return True


def fix_source(
    source: Union[str, bytes],
    path: str = "<string>",
    config: Optional[Config] = None,
    *,
    unsafe: bool = False,
    select: Optional[Iterable[str]] = None,
) -> FixResult:
    """Fix one file's source. Raises SourceError for a file that cannot be checked."""
    config = config or Config().with_knowledge()
    unsafe = unsafe or config.unsafe_fixes
    is_bytes = isinstance(source, bytes)
    encoding = "utf-8"
    bom = False
    if is_bytes:
        bom = source.startswith(codecs.BOM_UTF8)
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        except SyntaxError as exc:
            raise SourceError(f"cannot decode: {exc}") from None
        if encoding == "utf-8-sig":
            encoding = "utf-8"
    else:
        bom = source.startswith("\ufeff")
    text = decode(source, path)
    before = check_source(text, path, config)
    codes = None
    if select is not None:
        codes = {c for c in (f.code for f in before) if any(c.startswith(s) for s in select)}
    from flake8_forksafe import slicing

    errors: List[str] = []
    notes: List[str] = []
    new_text = text
    if before and len(text) > slicing.MAX_ANALYSED:
        # a fix rewrites the whole module: libcst would need ~400x the file's size in memory
        notes.append(
            f"not fixed: {len(text) / 1e6:.1f} MB is over the {slicing.MAX_ANALYSED / 1e6:.0f} MB that a fix "
            f"rewrites per file; its findings are listed below"
        )
    elif before:
        new_text = fix_text(text, path, config, unsafe, codes, errors)
    remaining = check_source(new_text, path, config) if new_text != text else before
    fixed = _gone(before, remaining)
    out: Union[str, bytes]
    if is_bytes:
        if new_text == text:
            out = source
        else:
            out = (codecs.BOM_UTF8 if bom else b"") + new_text.encode(encoding)
    else:
        out = ("\ufeff" if bom else "") + new_text if new_text != text else source
    return FixResult(source=out, fixed=fixed, remaining=remaining, changed=new_text != text, errors=errors, notes=notes)


def _gone(before: Sequence[Finding], after: Sequence[Finding]) -> List[Finding]:
    left = Counter(f.code for f in after)
    out = []
    for f in before:
        if left[f.code] > 0:
            left[f.code] -= 1
        else:
            out.append(f)
    return out


def write_atomic(path: str, data: bytes) -> None:
    """Write via a temporary file in the same directory and rename: never a half-written file."""
    directory = os.path.dirname(os.path.abspath(path))
    st = os.stat(path)
    fd, tmp = tempfile.mkstemp(prefix=".forksafe-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, st.st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
