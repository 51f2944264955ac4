"""Which accelerator this runner has: ``cpu``, ``cuda`` or ``rocm`` (``torch.version.hip``).

Asked in a subprocess: in the caller's process, even ``torch.cuda.is_available()`` can mark later forks
as bad, and the caller may not have torch at all.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional, Tuple

_PROBE = r"""
import json, os
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
try:
    import torch
except ImportError:
    print(json.dumps({"kind": "none"})); raise SystemExit
hip = getattr(torch.version, "hip", None)
cuda = getattr(torch.version, "cuda", None)
avail = bool(torch.cuda.is_available())
d = {"kind": ("rocm" if hip else "cuda") if avail else "cpu", "torch": torch.__version__,
     "cuda_version": cuda, "hip_version": hip, "count": torch.cuda.device_count() if avail else 0, "name": ""}
if avail:
    try:
        d["name"] = torch.cuda.get_device_name(0)
    except Exception:
        pass
print(json.dumps(d))
"""


STARTUP_BASELINE = 2.0  # seconds: interpreter start + ``import torch`` on an idle machine (measured ~1.7 s)
MAX_SCALE = 8.0


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # "cpu" | "cuda" | "rocm" | "none" (no torch) | "unknown" (the probe failed: see ``error``)
    torch: str = ""
    cuda_version: Optional[str] = None
    hip_version: Optional[str] = None
    count: int = 0
    name: str = ""
    error: str = ""  # why the probe failed (both tries), one line
    startup: float = 0.0  # seconds the (last) probe took: interpreter start + import torch, under this load

    @property
    def accelerator(self) -> bool:
        return self.kind in ("cuda", "rocm")

    @property
    def failed(self) -> bool:
        return self.kind == "unknown"

    def __str__(self) -> str:
        if self.kind == "none":
            return "no torch"
        if self.failed:
            return f"unknown device (the device probe failed: {self.error})"
        if self.accelerator:
            ver = self.hip_version if self.kind == "rocm" else self.cuda_version
            return f"{self.kind} {ver} ({self.count} x {self.name or 'GPU'}), torch {self.torch}"
        build = "CPU-only build" if not (self.cuda_version or self.hip_version) else "no GPU visible"
        return f"cpu ({build}), torch {self.torch}"

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def _probe_once(timeout: float) -> Tuple[Optional[Dict[str, Any]], str, float]:
    """(the probe's answer, why it failed, seconds it took)."""
    from flake8_forksafe.harness.runner import _env, _kill_group

    t0 = time.monotonic()
    try:
        p = subprocess.Popen([sys.executable, "-c", _PROBE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=_env(), start_new_session=True)
    except OSError as exc:
        return None, f"cannot start {sys.executable}: {exc}", 0.0
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(p.pid)
        p.communicate()
        return None, f"timeout: no answer within {timeout:g} s", time.monotonic() - t0
    took = time.monotonic() - t0
    lines = [ln for ln in (out or "").splitlines() if ln.strip()]
    if p.returncode != 0:
        last = [ln.strip() for ln in (err or "").splitlines() if ln.strip()]
        kind = "import error" if ("ImportError" in (err or "") or "ModuleNotFoundError" in (err or "")
                                  or "import torch" in (err or "")) else "crash"
        return None, f"{kind}: exit status {p.returncode}: {last[-1][:200] if last else 'no output'}", took
    try:
        d = json.loads(lines[-1])
        if not isinstance(d, dict) or "kind" not in d:
            raise ValueError
    except (ValueError, IndexError):
        shown = lines[-1][:120] if lines else "(empty)"
        return None, f"unparseable output: {shown!r}", took
    return d, "", took


@functools.lru_cache(maxsize=1)
def detect_device(timeout: float = 120.0) -> DeviceInfo:
    """Detect the device once per process, in a subprocess (about as long as ``import torch``).

    A probe that times out, crashes or prints something unreadable is retried once (with twice the time);
    if that fails too the answer is ``DeviceInfo("unknown", error=...)``: never a silent ``cpu``."""
    whys = []
    took = 0.0
    for attempt, limit in enumerate((timeout, timeout * 2)):
        d, why, took = _probe_once(limit)
        if d is not None:
            known = {k: d[k] for k in ("kind", "torch", "cuda_version", "hip_version", "count", "name") if k in d}
            return DeviceInfo(**known, startup=round(took, 2))
        whys.append(f"try {attempt + 1}: {why}")
    return DeviceInfo("unknown", error="; ".join(whys), startup=round(took, 2))


def startup_scale() -> float:
    """How much slower than an idle machine this one starts ``python -c "import torch"`` now: the factor
    every default timeout of the harness is multiplied by (1 to 8; 8 when the probe failed)."""
    info = detect_device()
    if info.failed or not info.startup:
        return MAX_SCALE if info.failed else 1.0
    return round(min(MAX_SCALE, max(1.0, info.startup / STARTUP_BASELINE)), 2)
