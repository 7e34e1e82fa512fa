"""Files rankmap writes on request (``--html PATH``): the renderers return text, this writes it."""

from __future__ import annotations

from pathlib import Path

from rankmap.errors import InputError
from rankmap.findings import Report


def write_html(report: Report, path: str) -> None:
    """Write the self-contained HTML rank map of ``report`` to ``path``."""
    from rankmap.render.html import render_html

    try:
        Path(path).write_text(render_html(report), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--html {path!r}: cannot write: {exc.strerror}") from None
