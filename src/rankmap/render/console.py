"""Console factory: never a module-global Console, so tests and commands choose the stream."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console


def make_console(stream: TextIO, *, color: bool, width: int | None = None) -> Console:
    """A rich Console writing to ``stream``; no colour, no markup surprises when ``color`` is off."""
    from rich.console import Console

    return Console(
        file=stream,
        force_terminal=color,
        no_color=not color,
        color_system="auto" if color else None,
        width=width,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )
