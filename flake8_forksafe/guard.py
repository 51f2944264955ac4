"""A guard that bounds what the parsers will do with a file, measured from its tokens.

libcst's native parser and the trees built from it recurse once per level of an expression chain:
``x.a.a.a...`` (8,000 long) crashes the native parser, 20,000 chained conditional expressions take
tens of GB. Brackets and indentation alone do not see such chains. ``expression_depth`` scans the
source once (strings and comments skipped) and returns an upper bound of the depth of the deepest
expression: within one logical line, every operator-like token (attribute dot, call or subscript
bracket, binary, boolean, comparison and unary operators, ``if``/``else``, ``lambda``, ``await``...)
adds a level to the chain it is part of; a comma, ``=`` or ``;`` ends that chain; brackets add
a level and keep the chain of the level around them. A file deeper than ``MAX_EXPRESSION_DEPTH``
is skipped before any parser sees it.
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

MAX_EXPRESSION_DEPTH = 500  # libcst's Python side hits the recursion limit near 600 anyway

# One alternation, tried left to right; group names say what matched.
_TOKEN = re.compile(
    r"""
    (?P<skip>
        \#[^\r\n]*                                       # comment
      | \\\r?\n                                          # explicit line continuation
      | (?:[rRbBuUfFtT]{0,2})(?:'''(?:\\.|'(?!'')|[^'\\])*(?:'''|\Z)
                              |\"\"\"(?:\\.|"(?!"")|[^"\\])*(?:\"\"\"|\Z)
                              |'(?:\\.|[^'\\\r\n])*(?:'|(?=[\r\n])|\Z)
                              |"(?:\\.|[^"\\\r\n])*(?:"|(?=[\r\n])|\Z))  # strings
      | \d[\w.]*(?:[eE][-+]\d[\w]*)?                     # numbers (1.5, 1e-3, 0x1F, 1_000j)
      | \.\d[\w]*(?:[eE][-+]\d\w*)?                      # .5
      | \.\.\.                                           # Ellipsis
    )
  | (?P<newline>\r\n|\r|\n)
  | (?P<open>[(\[{])
  | (?P<close>[)\]}])
  | (?P<sep>,|;|->|:=|(?:\*\*|//|>>|<<|[-+*/%@&|^])=|=(?!=))
  | (?P<op>\*\*|//|>>|<<|==|!=|<=|>=|<>|[-+*/%@&|^~<>.:])
  | (?P<name>[^\W\d]\w*)
    """,
    re.VERBOSE,
)

_CHAIN_KEYWORDS = frozenset({"and", "or", "not", "if", "in", "is", "lambda", "await", "for", "async", "yield", "from"})


def expression_depth(text: str, stop_above: Optional[int] = None) -> int:
    """An upper bound of the deepest expression in ``text`` (see the module docstring).
    ``stop_above``: return as soon as the depth exceeds it (the caller only needs to know that)."""
    limit = stop_above if stop_above is not None else -1
    stack = []  # the chain count of each enclosing bracket level
    cur = 0  # the chain count at the current level
    base = 0  # levels contributed by the enclosing brackets and their chains
    best = 0
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "skip":
            continue
        if kind == "name":
            if m.group() not in _CHAIN_KEYWORDS:
                continue
            kind = "op"
        if kind == "op":
            cur += 1
            d = base + cur
            if d > best:
                best = d
                if best > limit >= 0:
                    return best
        elif kind == "open":
            stack.append(cur)
            base += cur + 1
            cur = 0
            if base > best:
                best = base
                if best > limit >= 0:
                    return best
        elif kind == "close":
            if stack:
                cur = stack.pop()
                base -= cur + 1
                cur += 1  # a call, subscript or parenthesised operand is one more link of the chain
        elif kind == "sep":
            cur = 0
        elif kind == "newline" and not stack:
            cur = 0
    return best


# The last answer, by the text's hash (the text itself is not kept): the risk check, the gate and
# the parser ask in turn about the same text.
_LAST: List[Tuple[int, int, int, int]] = []


def depth_upto(text: str, limit: int = MAX_EXPRESSION_DEPTH) -> int:
    """``expression_depth(text)``, or a number over ``limit`` as soon as it is exceeded."""
    key = (hash(text), len(text), limit)
    if _LAST and _LAST[0][:3] == key:
        return _LAST[0][3]
    depth = expression_depth(text, stop_above=limit)
    _LAST[:] = [(*key, depth)]
    return depth


def too_deep(text: str, limit: int = MAX_EXPRESSION_DEPTH) -> Optional[str]:
    """None, or the one-line reason to skip ``text`` (without the file name)."""
    if depth_upto(text, limit) <= limit:
        return None
    return f"expression nested {expression_depth(text)} deep; skipped"
