"""``rankmap`` command line: ``main(argv, ctx) -> exit status``.

Each subcommand lives in its own module with ``register(subparsers)`` and
``run(args, ctx) -> int``; modules keep heavy imports (rich, torch, pynvml) inside functions so
``rankmap --help`` and ``doctor --json`` start fast.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

from rankmap import __version__
from rankmap.cli.context import AppContext
from rankmap.errors import RankMapError, UsageError
from rankmap.status import ExitStatus

# Order shown in --help.
COMMANDS: tuple[str, ...] = (
    "doctor",
    "check",
    "explain",
    "probe",
    "run",
    "bench",
    "topo",
    "machines",
)


class _Exit(Exception):
    """``--help`` / ``--version`` finished: the text is written, ``status`` is the exit status."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting: UsageError (one line, exit 2) for bad usage,
    :class:`_Exit` once ``--help``/``--version`` wrote their text into the context's stdout."""

    out: TextIO | None = None  # where --help/--version write (build_parser binds it)

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, hint=f"see `{self.prog} --help`")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            raise UsageError(message.strip())
        raise _Exit(status)

    def _print_message(self, message: str, file: Any = None) -> None:
        if message:
            (self.out or sys.stdout).write(message)


def build_parser(out: TextIO | None = None, only: str | None = None) -> argparse.ArgumentParser:
    """The root parser with every available subcommand registered (or ``only`` that one: the
    others' modules are not imported); help/version go to ``out``."""
    parser_class: type[_Parser] = type("_BoundParser", (_Parser,), {"out": out})
    parser = parser_class(
        prog="rankmap",
        description="Which rank runs on which physical GPU - checked before NCCL does, "
        "and explained when it is wrong.",
    )
    parser.add_argument("--version", action="version", version=f"rankmap {__version__}")
    parser.add_argument("--traceback", action="store_true", help="show Python tracebacks of errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=parser_class)
    for name in (only,) if only in COMMANDS else COMMANDS:
        module = importlib.import_module(f"rankmap.cli.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None, ctx: AppContext | None = None) -> int:
    """Run one command; never raises for user errors - returns the exit status."""
    if ctx is None:
        try:
            ctx = AppContext.from_system()
        except RankMapError as exc:  # stdout closed: say so where we still can
            if sys.stderr is not None:
                sys.stderr.write(f"rankmap: error: {exc.message}\n")
            return int(exc.exit_status)
    args_list = list(sys.argv[1:] if argv is None else argv)
    # --traceback is rankmap's own option wherever it stands before a `--` (after one, it belongs
    # to the launch command): the commands' parsers never see it
    own = args_list.index("--") if "--" in args_list else len(args_list)
    show_traceback = "--traceback" in args_list[:own]
    if show_traceback:
        args_list = [a for a in args_list[:own] if a != "--traceback"] + args_list[own:]
    try:
        # the command named on the line is the only one whose module is needed (start-up time)
        named = next((a for a in args_list if not a.startswith("-")), None)
        parser = build_parser(ctx.stdout, only=named)
        try:
            args = parser.parse_args(args_list)
        except _Exit as done:
            ctx.stdout.flush()
            return done.status
        if not getattr(args, "command", None):
            parser.print_help(ctx.stdout)
            return int(ExitStatus.USAGE)
        module = importlib.import_module(f"rankmap.cli.{args.command}")
        return int(module.run(args, ctx))
    except RankMapError as exc:
        if show_traceback:
            raise
        _print_error(ctx, exc.message, exc.hint)
        return int(exc.exit_status)
    except KeyboardInterrupt:
        _print_error(ctx, "interrupted", None)
        return int(ExitStatus.INTERRUPTED)
    except BrokenPipeError:
        return int(ExitStatus.OK)
    except OSError as exc:  # an I/O failure no command turned into an InputError (EIO, ENOSPC...)
        if show_traceback:
            raise
        return _os_error(ctx, exc)
    except RecursionError:
        if show_traceback:
            raise
        _print_error(ctx, "input is nested too deeply to read", None)
        return int(ExitStatus.USAGE)
    except Exception as exc:  # noqa: BLE001 - last line of defence: one line, never a traceback
        if show_traceback:
            raise
        _print_error(
            ctx,
            f"internal error: {type(exc).__name__}: {exc}",
            "re-run with --traceback and report it",
        )
        return int(ExitStatus.UNAVAILABLE)


def _os_error(ctx: AppContext, exc: OSError) -> int:
    """One line for an OSError: a network failure means "could not look" (3), else bad I/O (2)."""
    import socket

    what = exc.strerror or str(exc) or type(exc).__name__
    where = f"{exc.filename}: " if exc.filename else ""
    if isinstance(exc, (ConnectionError, TimeoutError, socket.herror, socket.gaierror)):
        _print_error(ctx, f"network error: {where}{what}", None)
        return int(ExitStatus.UNAVAILABLE)
    _print_error(ctx, f"I/O error: {where}{what}", None)
    return int(ExitStatus.USAGE)


def _print_error(ctx: AppContext, message: str, hint: str | None) -> None:
    from rankmap.redact import redact_free_text
    from rankmap.render.console import strip_controls

    line = strip_controls(redact_free_text(" ".join(message.split())))
    ctx.stderr.write(f"rankmap: error: {line}\n")
    if hint:
        ctx.stderr.write(f"hint: {strip_controls(redact_free_text(' '.join(hint.split())))}\n")
    ctx.stderr.flush()


def console_main() -> None:
    """Console-script entry point."""
    status = main()
    try:
        sys.stdout.flush()
    except (BrokenPipeError, AttributeError, ValueError):
        # The reader went away: what is still buffered can never be written, and Python's
        # final flush would print "Exception ignored ... BrokenPipeError". Point fd 1 at
        # /dev/null so that flush succeeds quietly; the exit status is already decided.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    watchdog = sys.modules.get("rankmap.probe.watchdog")
    if watchdog is not None and watchdog.stalled_threads():
        # NOTE: a store call the probe abandoned is still blocked in torch's C++ code; a normal
        # interpreter exit then aborts ("terminate called without an active exception", -6)
        # instead of returning the probe's exit status. Everything is said and flushed.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.flush()
        os._exit(status)
    sys.exit(status)
