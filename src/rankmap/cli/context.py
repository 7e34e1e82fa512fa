"""AppContext: every stream, the environment and injectable sources, so main() runs in-process."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rankmap.adapters.files import LocalFiles
from rankmap.sources import Files

if TYPE_CHECKING:
    from rich.console import Console

    from rankmap.adapters.logs import LocalLogs


@dataclass
class AppContext:
    """What a command may touch. Tests build one with StringIO streams and a fixed environment."""

    stdout: TextIO
    stderr: TextIO
    stdin: TextIO
    environ: Mapping[str, str]
    color: bool = False
    width: int | None = None
    cwd: Path = field(default_factory=Path.cwd)
    # Injected ports (tests / dry runs). None = the real adapter.
    inventory_source: Callable[[], Any] | None = None
    system_facts: Callable[[], Any] | None = None
    files: Files = field(default_factory=LocalFiles)  # the input port (rankmap.sources)

    def logs(self) -> LocalLogs:
        """Log input for ``explain``: files, and ``-`` = this context's stdin."""
        from rankmap.adapters.logs import LocalLogs

        return LocalLogs(self.stdin)

    def path(self, value: str) -> Path:
        """A path the user typed, relative to :attr:`cwd`."""
        p = Path(value).expanduser()
        return p if p.is_absolute() else self.cwd / p

    @classmethod
    def from_system(cls) -> AppContext:
        """The real process: sys streams, os.environ, colour when stdout is a terminal."""
        from rankmap.errors import UsageError

        if sys.stdout is None:
            raise UsageError("stdout is closed: nothing could be printed (run without >&-)")
        env = dict(os.environ)
        tty = sys.stdout.isatty()
        color = tty and "NO_COLOR" not in env and env.get("TERM") != "dumb"
        # NOTE: piped output (logs, CI, bug reports) gets 120 columns instead of rich's 80, so
        # tables keep UUIDs and bus ids on one line; a terminal uses its own width.
        width = None if tty else _columns(env, default=120)
        return cls(
            stdout=sys.stdout,
            stderr=sys.stderr,
            stdin=sys.stdin if sys.stdin is not None else _ClosedStdin(),
            environ=env,
            color=color,
            width=width,
        )

    def local_host(self) -> tuple[Any, list[Any]]:
        """This machine through NVML (or the injected source): ``(Host | None, [Finding])``."""
        if self.inventory_source is not None:
            host, findings = self.inventory_source()
            return host, list(findings)
        from rankmap.adapters.nvml import collect_host

        host, findings = collect_host(self.environ)
        return host, list(findings)

    def console(self) -> Console:
        """Console for human output on stdout."""
        from rankmap.render.console import make_console

        return make_console(self.stdout, color=self.color, width=self.width)


class _ClosedStdin(io.StringIO):
    """Stands in for a closed stdin (``<&-``): reading it is a one-line usage error."""

    def read(self, size: int | None = -1) -> str:
        from rankmap.errors import UsageError

        raise UsageError("stdin is closed: pass the input as a FILE argument (or pipe it in)")


def _columns(env: Mapping[str, str], *, default: int) -> int:
    try:
        return max(40, int(env.get("COLUMNS", "")))
    except ValueError:
        return default
