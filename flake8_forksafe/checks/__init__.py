"""The one place rules are registered. A rule is one class in one module of this package."""

from __future__ import annotations

from typing import List, Type

from flake8_forksafe.checks.frk101 import HandleOpenedInInit
from flake8_forksafe.engine import Rule

ALL_RULES: List[Type[Rule]] = [
    HandleOpenedInInit,
]

ALL_CODES = tuple(r.code for r in ALL_RULES)
BY_CODE = {r.code: r for r in ALL_RULES}
