"""Report -> ``rankmap/1`` JSON text (stable key order, UTF-8, one trailing newline)."""

from __future__ import annotations

import json as _json
from typing import Any

from rankmap.findings import Report


def dumps(doc: Any) -> str:
    """JSON text for any JSON-ready value."""
    return _json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def report_json(report: Report) -> str:
    """The report as ``rankmap/1`` JSON."""
    return dumps(report.to_dict())
