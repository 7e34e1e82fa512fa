"""Options shared by several subcommands, and the one way a command emits its report."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from rankmap.cli.context import AppContext
from rankmap.findings import Report
from rankmap.status import ExitStatus


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0 (``nan``/``inf``/``0``/``-1`` are refused)."""
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def non_negative(text: str) -> float:
    """argparse type: a finite number >= 0."""
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text!r}")
    return value


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print the rankmap/1 JSON report on stdout"
    )


def add_machine(parser: argparse.ArgumentParser, *, repeatable: bool = True) -> None:
    parser.add_argument(
        "--machine",
        "-m",
        action="append" if repeatable else "store",
        default=[] if repeatable else None,
        metavar="NAME|PATH",
        help="built-in profile (see `rankmap machines`), profile JSON from `doctor --save`, or "
        "pasted nvidia-smi output (-q -x XML, -L, --query-gpu CSV, the table)"
        + ("; repeat once per node" if repeatable else ""),
    )


def add_env(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env",
        "-e",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment to assume instead of / on top of the real one (repeatable)",
    )


def add_html(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--html", metavar="PATH", help="also write a self-contained HTML rank map to PATH"
    )


def emit(
    report: Report,
    ctx: AppContext,
    *,
    as_json: bool,
    render_text: Callable[[Report, AppContext], None],
    html: str | None = None,
) -> int:
    """Write ``report`` as JSON or text (and HTML when asked); return the exit status."""
    from rankmap.redact import redact_report

    report = redact_report(report)
    if html:
        from rankmap.adapters.output import write_html

        write_html(report, html)
    try:
        if as_json:
            from rankmap.render.json import report_json

            ctx.stdout.write(report_json(report))
        else:
            render_text(report, ctx)
        ctx.stdout.flush()
    except BrokenPipeError:
        pass  # the reader went away (`| head`); the exit status still tells the verdict
    return int(ExitStatus.FINDINGS if report.has_errors else ExitStatus.OK)


def quiet_torch_import_warnings() -> None:
    """Drop torch's "Failed to initialize NumPy" import warning in rankmap's own processes.

    NOTE: torch warns on import when numpy is absent; rankmap's probe and bench use no numpy,
    so the line is noise in their output (and breaks "errors are one line").
    """
    import warnings

    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
