"""Which accelerator this runner has: ``cpu``, ``cuda`` or ``rocm`` (``torch.version.hip``).

Asked in a subprocess: in the caller's process, even ``torch.cuda.is_available()`` can mark later forks
as bad, and the caller may not have torch at all.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional

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


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # "cpu" | "cuda" | "rocm" | "none" (no torch)
    torch: str = ""
    cuda_version: Optional[str] = None
    hip_version: Optional[str] = None
    count: int = 0
    name: str = ""

    @property
    def accelerator(self) -> bool:
        return self.kind in ("cuda", "rocm")

    def __str__(self) -> str:
        if self.kind == "none":
            return "no torch"
        if self.accelerator:
            ver = self.hip_version if self.kind == "rocm" else self.cuda_version
            return f"{self.kind} {ver} ({self.count} x {self.name or 'GPU'}), torch {self.torch}"
        build = "CPU-only build" if not (self.cuda_version or self.hip_version) else "no GPU visible"
        return f"cpu ({build}), torch {self.torch}"

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


@functools.lru_cache(maxsize=1)
def detect_device(timeout: float = 120.0) -> DeviceInfo:
    """Detect the device once per process (in a subprocess; about as long as ``import torch``)."""
    from flake8_forksafe.harness.runner import _env

    try:
        out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=timeout,
                             env=_env(), start_new_session=True)
        d = json.loads(out.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, OSError, ValueError, IndexError):
        return DeviceInfo("cpu")
    return DeviceInfo(**d)
