"""The finding categories of the contract and the severities: plain values every layer shares."""

from __future__ import annotations

from enum import Enum


class Severity(str, Enum):
    """How bad a finding is. ``error`` makes commands exit 1."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """0 for error, 1 for warning, 2 for info (sort key)."""
        return {"error": 0, "warning": 1, "info": 2}[self.value]


CATEGORIES: tuple[str, ...] = (
    "oversubscribed",
    "visible_devices_mismatch",
    "no_set_device",
    "global_rank_as_device",
    "per_process_visible_devices",
    "mig",
    "container_mapping",
    "host_identity",
    "launcher_config",
    "version_mismatch",
    "other",
)
