"""Console factory: never a module-global Console, so tests and commands choose the stream."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console


def make_console(stream: TextIO, *, color: bool, width: int | None = None) -> Console:
    """A rich Console writing to ``stream``; no colour, no markup surprises when ``color`` is off."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich's default points the *process's* fd 1 at /dev/null and raises SystemExit(1):
            # exit 1 means "error findings" here, and in-process callers lose their stdout.
            # Let main()/emit() decide the exit status instead.
            self.quiet = True
            raise BrokenPipeError(32, "Broken pipe")

    return _Console(
        file=stream,
        force_terminal=color,
        no_color=not color,
        color_system="auto" if color else None,
        width=width,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )
