"""``rankmap run [options] -- LAUNCH...``: preflight, run with NCCL debug output, diagnose.

1. Preflight with ``rankmap.check.engine.check_launch`` (stop on error findings unless ``--force``).
2. Run the launch with NCCL_DEBUG=INFO etc. (:mod:`rankmap.adapters.runner`), streaming its output.
3. When it fails, ``rankmap.explain.engine.explain_files`` over everything captured, printed on
   stderr after the job's output. Exit with the job's exit code.
"""

from __future__ import annotations

import argparse
import codecs
import json
import shlex
from pathlib import Path
from typing import Any, TextIO

from rankmap.adapters.runner import Sink
from rankmap.cli.common import add_env
from rankmap.cli.context import AppContext
from rankmap.errors import RankMapError, UsageError
from rankmap.model import Host
from rankmap.redact import scrub, secret_values


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "run",
        help="run a launch with NCCL debug logs, then explain a failure",
        description="Check the launch first (like `rankmap check`), run it with NCCL_DEBUG=INFO "
        "and per-process NCCL debug files in a run directory, stream its output unchanged, and "
        "when it fails print rankmap's diagnosis after the job's output. Exits with the job's "
        "exit code.",
    )
    parser.add_argument("--force", action="store_true", help="run even if the preflight fails")
    parser.add_argument(
        "--run-dir", metavar="DIR", help="where logs go (default ./rankmap-runs/<timestamp>)"
    )
    parser.add_argument(
        "--machine",
        "-m",
        action="append",
        default=[],
        metavar="NAME|PATH",
        help="machine(s) for the preflight (default: this machine through NVML)",
    )
    add_env(parser)
    parser.add_argument("--script", metavar="PATH", help="training script for the preflight")
    parser.add_argument("launch", nargs=argparse.REMAINDER, help="-- LAUNCH COMMAND...")


def _sink(stream: TextIO) -> Sink:
    """Bytes to ``stream``: raw to its buffer when it has one, else decoded incrementally."""
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:

        def raw(data: bytes) -> None:
            buffer.write(data)
            buffer.flush()

        return raw
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def text(data: bytes) -> None:
        stream.write(decoder.decode(data))
        stream.flush()

    return text


def _machines(args: argparse.Namespace, ctx: AppContext) -> tuple[list[Host], str | None]:
    """Hosts for preflight and diagnosis, or a note why there are none."""
    if args.machine:
        from rankmap.inventory import load_machines

        return load_machines(args.machine, ctx.files), None
    host, _findings = ctx.local_host()
    return ([host], None) if host is not None else ([], "NVML unavailable; pass --machine")


def preflight(
    args: argparse.Namespace, ctx: AppContext, machines: list[Host], env: dict[str, str]
) -> tuple[Any, str | None]:
    """(check report or None, note why it was skipped)."""
    if not machines:
        return None, "no machine known"
    from rankmap.check.engine import check_launch

    script = ctx.path(args.script) if args.script else None
    try:
        report = check_launch(
            args.launch,
            machines=machines,
            env=env,
            script=script,
            cwd=ctx.cwd,
            files=ctx.files,
        )
    except UsageError as exc:
        return None, exc.message
    return report, None


def _print_findings(report: Any, stream: TextIO, ctx: AppContext, subject: str) -> None:
    from rankmap.redact import redact_free_text, redact_report

    report = redact_report(report)
    subject = redact_free_text(subject)
    from rankmap.render.console import make_console
    from rankmap.render.text import render_summary

    render_summary(make_console(stream, color=ctx.color, width=ctx.width), report, subject)


def _say(ctx: AppContext, line: str) -> None:
    ctx.stderr.write(f"rankmap: {line}\n")
    ctx.stderr.flush()


def run(args: argparse.Namespace, ctx: AppContext) -> int:
    from rankmap.adapters.runner import (
        BoundedCapture,
        build_run_env,
        default_run_dir,
        make_run_dir,
        run_job,
    )
    from rankmap.envspec import parse_env_assignments
    from rankmap.launchers import split_env_prefix

    launch = list(args.launch)
    if launch and launch[0] == "--":
        launch = launch[1:]
    if not launch:
        raise UsageError("no launch command", hint="rankmap run -- torchrun ... train.py")
    args.launch = launch
    overrides = parse_env_assignments(args.env)
    machines, machine_note = _machines(args, ctx)
    report, skipped = preflight(args, ctx, machines, {**ctx.environ, **overrides})
    if report is None:
        _say(ctx, f"preflight skipped: {skipped or machine_note}")
    elif report.has_errors and not args.force:
        _print_findings(report, ctx.stdout, ctx, "preflight: " + shlex.join(launch))
        _say(ctx, "not running the job (fix the errors above, or pass --force)")
        return 1
    elif report.findings:
        _print_findings(report, ctx.stderr, ctx, "preflight")
    else:  # say that it ran (review 19: silence read as "skipped")
        _say(ctx, "preflight: no findings")
    run_dir = Path(args.run_dir) if args.run_dir else default_run_dir(ctx.cwd)
    run_dir = make_run_dir(run_dir if run_dir.is_absolute() else ctx.cwd / run_dir)
    # ``HF_TOKEN=x torchrun ...``: the prefix is the job's environment, as a shell would do.
    prefix, program = split_env_prefix(launch)
    if not program:
        raise UsageError("no program after the environment assignments")
    env, added = build_run_env(ctx.environ, {**overrides, **prefix}, run_dir)
    _say(ctx, f"run dir {run_dir} (NCCL debug files nccl.<host>.<pid>.log)")
    secrets = secret_values({**ctx.environ, **overrides, **prefix}, launch)
    capture = BoundedCapture(run_dir / "output.log", redact=lambda text: scrub(text, secrets))
    result = run_job(
        program,
        env,
        cwd=ctx.cwd,
        capture=capture,
        stdout=_sink(ctx.stdout),
        stderr=_sink(ctx.stderr),
    )
    _write_summary(run_dir, launch, {**overrides, **prefix}, added, result, ctx)
    if result.exit_code != 0:
        _diagnose(args, ctx, run_dir, machines, {**overrides}, result.exit_code)
    return result.exit_code


def _write_summary(
    run_dir: Path,
    launch: list[str],
    overrides: dict[str, str],
    added: dict[str, str],
    result: Any,
    ctx: AppContext,
) -> None:
    from rankmap.redact import redact_env, redact_free_text, redact_text

    doc = {
        "schema": "rankmap/1",
        "command": "run",
        "launch": redact_free_text(redact_text(shlex.join(launch), {**ctx.environ, **overrides})),
        "env": redact_env(overrides),
        "env_defaults": redact_env(added),
        "exit_code": result.exit_code,
        "signal": result.signal,
        "seconds": round(result.seconds, 3),
        "captured_bytes": result.captured_bytes,
        "truncated": result.truncated,
    }
    (run_dir / "run.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def _diagnose(
    args: argparse.Namespace,
    ctx: AppContext,
    run_dir: Path,
    machines: list[Host],
    env: dict[str, str],
    code: int,
) -> None:
    from rankmap.adapters.runner import captured_logs
    from rankmap.explain.engine import explain_files
    from rankmap.render.json import report_json

    script = ctx.path(args.script) if args.script else None
    try:
        report = explain_files(
            captured_logs(run_dir),
            launch=shlex.join(args.launch),
            env=env,
            machines=machines,
            script=script,
            logs=ctx.logs(),
            files=ctx.files,
        )
    except RankMapError as exc:
        _say(ctx, f"the job exited with code {code}; diagnosis failed: {exc.message}")
        return
    except Exception as exc:  # noqa: BLE001 - never lose the job's exit code to a diagnosis bug
        _say(ctx, f"the job exited with code {code}; diagnosis failed: {type(exc).__name__}: {exc}")
        return
    from rankmap.redact import redact_report

    report = redact_report(report)
    (run_dir / "diagnosis.json").write_text(report_json(report), encoding="utf-8")
    ctx.stderr.write("\n")
    _say(ctx, f"the job exited with code {code}; diagnosis (also in {run_dir}/diagnosis.json):")
    if code and report.verdict == "ok":  # "OK" next to a failed job read as success (review 19)
        _say(ctx, "no cause of this family found in the job's output; what was read:")
    _print_findings(report, ctx.stderr, ctx, "diagnosis")
