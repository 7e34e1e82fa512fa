"""Finding codes owned by `rankmap check` (sub-range x20-x39 of each category).

Shared causes live in :mod:`rankmap.codes.core`; use those first.
"""

from __future__ import annotations

from rankmap.codes import define  # noqa: F401
