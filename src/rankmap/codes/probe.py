"""Finding codes owned by `rankmap probe` (sub-range x60-x79 of each category).

Shared causes live in :mod:`rankmap.codes.core`; use those first.
"""

from __future__ import annotations

from rankmap.codes import define  # noqa: F401
