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
from pathlib import Path

from rankmap.doctor.versions import Versions, compatibility

__all__ = ["Versions", "collect_python_versions", "compatibility", "torch_cuda_build"]

NCCL_WHEELS = ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11")
_CUDA_LINE = re.compile(r"^cuda\s*(?::[^=]*)?=\s*(?:['\"]([^'\"]*)['\"]|None)", re.MULTILINE)


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
