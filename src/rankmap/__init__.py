"""rankmap: which rank of a distributed job runs on which physical GPU.

``import rankmap`` is light: no torch, no NVML, no rich until a command or ``verify()`` needs it.
"""

from __future__ import annotations

from typing import Any

from rankmap.errors import RankMapError
from rankmap.version import __version__

__all__ = ["RankMapError", "__version__", "verify"]


def verify(
    device: Any = None, *, timeout: float = 60.0, machine: Any = None, strict: bool = False
) -> Any:
    """Check the whole job's rank -> GPU map from inside a training script (every rank calls it).

    See :func:`rankmap.probe.verify_job` (the engine) and :mod:`rankmap.adapters.job` (wiring).
    """
    from rankmap.adapters.job import verify as _verify

    return _verify(device, timeout=timeout, machine=machine, strict=strict)
