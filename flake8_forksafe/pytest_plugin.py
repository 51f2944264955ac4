"""pytest plugin of flake8-forksafe: the ``forksafe`` fixture.

    def test_my_dataset(forksafe, tmp_path):
        forksafe.check(MyDataset, root=tmp_path)        # a factory: fork, spawn and forkserver all run
        forksafe.check(MyDataset(tmp_path))              # an object: pickled into the harness process

``check`` raises ``AssertionError`` naming each start method that fails, hangs, returns different items
or is flagged by a probe, and skips the test when a requested start method cannot run here (no CUDA
device, ...): "not run" is never a pass.

Loaded for every pytest user of the package, so it imports nothing heavy and never torch: the checks
run in subprocesses (see ``flake8_forksafe.harness``). Disable with ``-p no:forksafe``.
"""

from __future__ import annotations

from typing import Any, Iterable, List, Mapping, Optional, Union

import pytest

from flake8_forksafe.harness.results import CONTEXTS, CaseResult
from flake8_forksafe.harness.runner import (
    HarnessError,
    assert_dataloader_safe,
    check_dataset,
    check_script,
    raise_for,
)

__all__ = ["ForkSafe", "assert_dataloader_safe", "forksafe"]


def pytest_addoption(parser: Any) -> None:
    parser.addini("forksafe_contexts", "start methods the forksafe fixture checks (comma-separated)",
                  default="fork,spawn,forkserver")
    parser.addini("forksafe_timeout", "seconds allowed per start method by the forksafe fixture "
                  "(default: 30 for fork, 60 for spawn/forkserver)", default="")


class ForkSafe:
    """The object behind the ``forksafe`` fixture."""

    def __init__(self, contexts: Iterable[str] = CONTEXTS, timeout: Optional[float] = None):
        self.contexts = tuple(contexts)
        self.timeout = timeout
        self.results: List[CaseResult] = []

    def run(self, target: Any, *args: Any, contexts: Optional[Iterable[str]] = None,
            loader_kwargs: Optional[Mapping[str, Any]] = None, num_workers: int = 2,
            timeout: Union[None, float, Mapping[str, float]] = None, **kwargs: Any) -> CaseResult:
        """Run the check and return the :class:`CaseResult` without asserting anything."""
        __tracebackhide__ = True
        try:
            res = check_dataset(target, *args, contexts=contexts or self.contexts, loader_kwargs=loader_kwargs,
                                num_workers=num_workers, timeout=timeout or self.timeout, **kwargs)
        except HarnessError as exc:
            pytest.fail(f"forksafe: {exc}", pytrace=False)
        self.results.append(res)
        return res

    def check(self, target: Any, *args: Any, contexts: Optional[Iterable[str]] = None,
              loader_kwargs: Optional[Mapping[str, Any]] = None, num_workers: int = 2,
              timeout: Union[None, float, Mapping[str, float]] = None, **kwargs: Any) -> CaseResult:
        """Assert that ``DataLoader(target, num_workers=2, multiprocessing_context=ctx)`` gives the
        ``num_workers=0`` items under every start method, with no probe findings."""
        __tracebackhide__ = True
        res = self.run(target, *args, contexts=contexts, loader_kwargs=loader_kwargs, num_workers=num_workers,
                       timeout=timeout, **kwargs)
        return raise_for(res)

    def check_script(self, path: Any, *, contexts: Optional[Iterable[str]] = None,
                     timeout: Union[None, float, Mapping[str, float]] = None) -> CaseResult:
        """Assert that a script that starts workers runs under every start method."""
        __tracebackhide__ = True
        try:
            res = check_script(path, contexts=contexts or self.contexts, timeout=timeout or self.timeout)
        except HarnessError as exc:
            pytest.fail(f"forksafe: {exc}", pytrace=False)
        self.results.append(res)
        return raise_for(res)


@pytest.fixture
def forksafe(request: Any) -> ForkSafe:
    """Check datasets with real DataLoader workers under fork, spawn and forkserver."""
    cfg = request.config
    raw = cfg.getini("forksafe_contexts")
    contexts = [c.strip() for c in (raw if isinstance(raw, str) else ",".join(raw)).split(",") if c.strip()]
    t = str(cfg.getini("forksafe_timeout") or "").strip()
    try:
        timeout = float(t) if t else None
    except ValueError:
        raise pytest.UsageError(f"forksafe_timeout must be a number of seconds, not {t!r}") from None
    return ForkSafe(contexts or CONTEXTS, timeout)
