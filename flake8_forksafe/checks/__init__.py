"""The one place rules are registered. A rule is one class in one module of this package."""

from __future__ import annotations

from typing import List, Type

from flake8_forksafe.checks.frk101 import HandleOpenedInInit
from flake8_forksafe.checks.frk102 import ModuleLevelHandle
from flake8_forksafe.checks.frk103 import LazyHandleOpenedByParent
from flake8_forksafe.checks.frk201 import LambdaInDataset
from flake8_forksafe.checks.frk202 import LocalFunctionInDataset
from flake8_forksafe.checks.frk203 import UnpicklableObjectOnDataset
from flake8_forksafe.checks.frk301 import CudaInDatasetInit
from flake8_forksafe.checks.frk302 import CudaInWorker
from flake8_forksafe.checks.frk401 import MissingMainGuard
from flake8_forksafe.checks.frk402 import StartMethodAfterTorchImport
from flake8_forksafe.checks.frk403 import StartMethodWithoutForce
from flake8_forksafe.checks.frk404 import ForkWithCuda
from flake8_forksafe.checks.frk501 import SpawnWorkersNotPersistent
from flake8_forksafe.checks.frk601 import RngCreatedInInit
from flake8_forksafe.checks.frk602 import ConstantWorkerSeed
from flake8_forksafe.engine import Rule

ALL_RULES: List[Type[Rule]] = [
    HandleOpenedInInit,
    ModuleLevelHandle,
    LazyHandleOpenedByParent,
    LambdaInDataset,
    LocalFunctionInDataset,
    UnpicklableObjectOnDataset,
    CudaInDatasetInit,
    CudaInWorker,
    MissingMainGuard,
    StartMethodAfterTorchImport,
    StartMethodWithoutForce,
    ForkWithCuda,
    SpawnWorkersNotPersistent,
    RngCreatedInInit,
    ConstantWorkerSeed,
]

ALL_CODES = tuple(r.code for r in ALL_RULES)
BY_CODE = {r.code: r for r in ALL_RULES}
