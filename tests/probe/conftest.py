"""Fixtures of the probe tests (helpers live in probe_helpers.py)."""

from __future__ import annotations

from probe_helpers import need_torch  # noqa: F401 - re-exported fixture
