"""Finding codes owned by `rankmap doctor` (sub-range x80-x89 of each category).

Shared causes live in :mod:`rankmap.codes.core`; use those first.
"""

from __future__ import annotations

from rankmap.codes import define  # noqa: F401
