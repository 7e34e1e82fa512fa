"""Console factory: never a module-global Console, so tests and commands choose the stream."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol, TextIO

if TYPE_CHECKING:
    from rich.console import Console


class Screen(Protocol):
    """Where a renderer writes: the raw stream and a console on it (``cli``'s AppContext)."""

    stdout: TextIO

    def console(self) -> Console: ...


# C0 controls except tab and newline, DEL and C1 controls (0x9b is a one-byte CSI).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_controls(text: str) -> str:
    """``text`` without terminal control characters (for output written without rich)."""
    return _CONTROL.sub("", text)


def make_console(stream: TextIO, *, color: bool, width: int | None = None) -> Console:
    """A rich Console writing to ``stream``; no colour, no markup surprises when ``color`` is off."""
    from rich.console import Console
    from rich.segment import Segment

    class _Console(Console):
        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            # Text that came from input (a hostname in a profile, a GPU name, a log line) may
            # carry terminal control sequences (OSC title, clear screen...): they are dropped
            # from text segments here; rich's own styling comes from styles, not from text.
            return super()._render_buffer(
                seg if seg.control else Segment(_CONTROL.sub("", seg.text), seg.style)
                for seg in buffer
            )

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
