"""The one place rules are registered. A rule is one class in one module of this package.

The module of rule ``FRKnnn`` is ``checks/frknnn.py``. The rule classes (and libcst with them) are
imported on first use of ``ALL_RULES`` / ``BY_CODE``: a run whose files all fail the pre-filter,
or one that only validates codes, never pays for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Dict, List, Type

if TYPE_CHECKING:  # pragma: no cover
    from flake8_forksafe.model import Rule

# code -> class name, in catalogue order
REGISTRY: Dict[str, str] = {
    "FRK101": "HandleOpenedInInit",
    "FRK102": "ModuleLevelHandle",
    "FRK103": "LazyHandleOpenedByParent",
    "FRK201": "LambdaInDataset",
    "FRK202": "LocalFunctionInDataset",
    "FRK203": "UnpicklableObjectOnDataset",
    "FRK301": "CudaInDatasetInit",
    "FRK302": "CudaInWorker",
    "FRK401": "MissingMainGuard",
    "FRK402": "StartMethodAfterTorchImport",
    "FRK403": "StartMethodWithoutForce",
    "FRK404": "ForkWithCuda",
    "FRK405": "NotebookDefinitionReachesWorkers",
    "FRK501": "SpawnWorkersNotPersistent",
    "FRK601": "RngCreatedInInit",
    "FRK602": "ConstantWorkerSeed",
}

ALL_CODES = tuple(REGISTRY)


def _load() -> List["Type[Rule]"]:
    rules = []
    for code, cls in REGISTRY.items():
        rule = getattr(importlib.import_module(f"{__name__}.{code.lower()}"), cls)
        if rule.code != code:  # pragma: no cover - a registry typo
            raise RuntimeError(f"{__name__}.{code.lower()}.{cls} declares code {rule.code}, registered as {code}")
        rules.append(rule)
    return rules


def __getattr__(name: str):
    if name in ("ALL_RULES", "BY_CODE"):
        rules = _load()
        globals()["ALL_RULES"] = rules
        globals()["BY_CODE"] = {r.code: r for r in rules}
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
