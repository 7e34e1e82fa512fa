"""Which driver, CUDA and PyTorch versions fit together (the RM050 rule) - pure values.

The versions are collected by :mod:`rankmap.adapters.versions` (no torch import) or come from a
profile; this module only judges them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rankmap.findings import Finding, Severity, finding


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
