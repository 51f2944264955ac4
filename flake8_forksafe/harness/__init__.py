"""Runtime harness: run a dataset under DataLoader workers with every start method and say what breaks.

Importable without torch (the caller's process never needs it: every case runs in a subprocess that
imports torch). See ``docs/harness.md``.

    >>> from flake8_forksafe.harness import check_dataset, assert_dataloader_safe
    >>> res = check_dataset(MyDataset, "/data/root")      # fork, spawn, forkserver
    >>> print(res)                                          # one line per start method
    >>> assert_dataloader_safe(MyDataset, root="/data/root")
"""

from flake8_forksafe.harness.device import DeviceInfo, detect_device
from flake8_forksafe.harness.results import (
    CONTEXTS,
    DIFFERS,
    ERROR,
    FAILS,
    FLAGGED,
    HANGS,
    NOT_RUN,
    OK,
    CaseResult,
    ContextResult,
    ErrorInfo,
    Finding,
)
from flake8_forksafe.harness.runner import (
    DEFAULT_TIMEOUTS,
    HarnessError,
    ModuleFactory,
    NotRunError,
    assert_dataloader_safe,
    check_dataset,
    check_fixture,
    check_module,
    check_script,
    fixture_meta,
)

__all__ = [
    "CONTEXTS",
    "DEFAULT_TIMEOUTS",
    "DIFFERS",
    "ERROR",
    "FAILS",
    "FLAGGED",
    "HANGS",
    "NOT_RUN",
    "OK",
    "CaseResult",
    "ContextResult",
    "DeviceInfo",
    "ErrorInfo",
    "Finding",
    "HarnessError",
    "ModuleFactory",
    "NotRunError",
    "assert_dataloader_safe",
    "check_dataset",
    "check_fixture",
    "check_module",
    "check_script",
    "detect_device",
    "fixture_meta",
]
