"""Driver, CUDA, NCCL and PyTorch versions - without importing torch and without touching CUDA.

* torch: ``importlib.metadata.version("torch")``; the CUDA it was built with is read from
  ``torch/version.py`` *as text* (located with ``importlib.util.find_spec``, which does not run
  the package). ``import torch`` would cost seconds and may initialise CUDA state.
* NCCL: the ``nvidia-nccl-cu*`` wheel PyTorch loads by default (reference/pytorch_nccl.md §4 -
  the runtime NCCL may differ when a system libnccl is ``LD_PRELOAD``-ed; we say so).
* driver / CUDA driver version: from the inventory (NVML or the machine profile).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankmap.findings import Finding, Severity, finding

NCCL_WHEELS = ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")
_CUDA_LINE = re.compile(r"^cuda\s*(?::[^=]*)?=\s*(?:['\"]([^'\"]*)['\"]|None)", re.MULTILINE)


@dataclass(frozen=True)
class Versions:
    """Versions that decide whether driver, CUDA, NCCL and PyTorch fit together."""

    driver_version: str | None = None
    cuda_driver_version: str | None = None  # the newest CUDA the driver supports
    torch_version: str | None = None
    torch_cuda_version: str | None = None  # CUDA PyTorch was built with (None: CPU build)
    nccl_version: str | None = None
    nccl_source: str | None = None  # "nvidia-nccl-cu12 wheel"
    python_version: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "driver_version": self.driver_version,
            "cuda_driver_version": self.cuda_driver_version,
            "torch_version": self.torch_version,
            "torch_cuda_version": self.torch_cuda_version,
            "nccl_version": self.nccl_version,
            "nccl_source": self.nccl_source,
            "python_version": self.python_version,
        }


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def torch_cuda_build(torch_dir: Path | None = None) -> str | None:
    """``torch.version.cuda`` read from ``torch/version.py`` as text (``None``: CPU or absent)."""
    if torch_dir is None:
        try:
            spec = importlib.util.find_spec("torch")
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.origin:
            return None
        torch_dir = Path(spec.origin).parent
    try:
        source = (torch_dir / "version.py").read_text(encoding="utf-8")
    except OSError:
        return None
    match = _CUDA_LINE.search(source)
    return match.group(1) if match and match.group(1) else None


def collect_python_versions() -> Versions:
    """torch / NCCL / Python versions of this Python environment (no torch import)."""
    torch_version = _dist_version("torch")
    nccl = source = None
    for wheel in NCCL_WHEELS:
        nccl = _dist_version(wheel)
        if nccl:
            source = f"{wheel} wheel"
            break
    return Versions(
        torch_version=torch_version,
        torch_cuda_version=torch_cuda_build() if torch_version else None,
        nccl_version=nccl,
        nccl_source=source,
        python_version=".".join(str(p) for p in sys.version_info[:3]),
    )


def _major_minor(version: str) -> tuple[int, int] | None:
    match = re.match(r"^\s*(\d+)(?:\.(\d+))?", version)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


def compatibility(versions: Versions, *, hosts: tuple[str, ...] = ()) -> tuple[str, list[Finding]]:
    """(verdict, findings): ``ok`` / ``too_old`` / ``unknown`` for driver CUDA vs torch's CUDA.

    Rule: the driver's CUDA version must be >= the CUDA major.minor PyTorch was built with, else
    RM050. NOTE: CUDA's minor-version compatibility lets many builds for 12.x run on any 12.y
    driver, so a same-major shortfall is a warning, a major shortfall an error.
    """
    driver = _major_minor(versions.cuda_driver_version or "")
    build = _major_minor(versions.torch_cuda_version or "")
    if driver is None or build is None:
        return "unknown", []
    if driver >= build:
        return "ok", []
    same_major = driver[0] == build[0]
    detail = (
        f"driver {versions.driver_version or '?'} supports CUDA {versions.cuda_driver_version}; "
        f"torch {versions.torch_version} was built for CUDA {versions.torch_cuda_version}."
    )
    if same_major:
        detail += (
            " Same major version: CUDA minor-version compatibility may let it run, but "
            "features/PTX needing the newer driver fail."
        )
    return "too_old", [
        finding(
            "RM050",
            f"Driver supports CUDA {versions.cuda_driver_version}, "
            f"torch needs CUDA {versions.torch_cuda_version}",
            detail=detail,
            hosts=hosts,
            severity=Severity.WARNING if same_major else None,
        )
    ]
