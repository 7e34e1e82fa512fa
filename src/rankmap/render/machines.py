"""Text of ``rankmap machines``: one table row per built-in profile."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rankmap.render.console import Screen


def render_machines(rows: Sequence[Mapping[str, Any]], ctx: Screen) -> None:
    """name / gpus / description of each profile."""
    from rich.table import Table

    table = Table(show_edge=False, pad_edge=False)
    for col in ("name", "gpus", "description"):
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(str(row["name"]), str(row["gpus"]), str(row["description"]))
    ctx.console().print(table)
