"""``rankmap explain [FILE...|-]``: read what a failed job printed; say what failed and why."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rankmap.cli.common import add_env, add_html, add_json, add_machine, emit
from rankmap.cli.context import AppContext
from rankmap.render.explain import render_explain


def register(sub: Any) -> None:
    """Add the ``explain`` subparser."""
    parser = sub.add_parser(
        "explain",
        help="explain a failed job's log: cause, ranks, physical GPU, fix",
        description="Read console output, tracebacks, NCCL_DEBUG logs, torchrun summaries or "
        "nccl-tests output (stdin when no FILE or '-') and say what failed, on which ranks, "
        "hosts and physical GPUs, the most likely cause with the evidence, and the fix.",
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help="log files ('-' = stdin)")
    parser.add_argument(
        "--launch", metavar="CMD", help="the launch command that produced the log, if known"
    )
    add_env(parser)
    add_machine(parser)
    parser.add_argument(
        "--script", metavar="PATH", help="the training script (parsed with ast, never run)"
    )
    add_json(parser)
    add_html(parser)


def run(args: argparse.Namespace, ctx: AppContext) -> int:
    """Run ``explain``; returns the exit status."""
    from rankmap.envspec import parse_env_assignments
    from rankmap.explain.engine import explain_files
    from rankmap.inventory import load_machines

    env = parse_env_assignments(args.env)
    machines = load_machines(args.machine, ctx.files)
    script = ctx.path(args.script) if args.script else None
    files = [f if f == "-" else str(ctx.path(f)) for f in args.files]
    if (not files or "-" in files) and _is_tty(ctx.stdin):
        ctx.stderr.write("rankmap: reading the log from stdin (paste it, then Ctrl-D)\n")
        ctx.stderr.flush()
    report = explain_files(
        [Path(f) if f != "-" else Path("-") for f in files] or [Path("-")],
        launch=args.launch,
        env=env,
        machines=machines,
        script=script,
        logs=ctx.logs(),
        files=ctx.files,
    )
    return emit(report, ctx, as_json=args.json, render_text=render_explain, html=args.html)


def _is_tty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):
        return False
