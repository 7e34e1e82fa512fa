"""``rankmap probe``: run in every rank of a job; rank 0 prints the job-wide rank -> GPU map.

``torchrun --nproc-per-node 8 -m rankmap probe``, ``srun rankmap probe``, ``mpirun ... rankmap
probe``. Exit 0 clean, 1 error findings (every rank), 3 when ranks are missing or the store is
unreachable (within the timeout + 2 s).
"""

from __future__ import annotations

import argparse
from typing import Any

from rankmap.cli.common import add_html, add_json, add_machine, emit, positive_seconds
from rankmap.cli.context import AppContext
from rankmap.errors import RankMapError, UsageError
from rankmap.findings import Report
from rankmap.render.probe import render_probe
from rankmap.status import ExitStatus


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "probe",
        help="in-job probe: every rank reports its real GPU; rank 0 prints the map",
        description="Run under the job's launcher (torchrun ... -m rankmap probe, srun rankmap "
        "probe, mpirun rankmap probe). Ranks exchange records through the job's c10d store "
        "(no NCCL); rank 0 prints the rank -> node -> GPU map and findings.",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=60.0,
        metavar="S",
        help="seconds to wait for every rank (default 60); missing ranks -> exit 3",
    )
    parser.add_argument(
        "--device",
        metavar="INDEX",
        help="CUDA index each rank checks (default: cuda:LOCAL_RANK)",
    )
    add_json(parser)
    add_html(parser)
    add_machine(parser, repeatable=False)


def _device(value: str | None) -> Any:
    if value is None:
        return None
    text = value.strip()
    if text.isdecimal():
        return int(text)
    if text.startswith("cuda:") and text[5:].isdecimal():
        return text
    raise UsageError(f"--device {value!r}: expected a CUDA index such as 0 or cuda:0")


def run(args: argparse.Namespace, ctx: AppContext) -> int:
    from rankmap.adapters.job import local_ports
    from rankmap.probe import check_timeout, run_probe

    _quiet_torch_cpp_logs()
    try:
        timeout = check_timeout(args.timeout)
    except RankMapError as exc:
        raise UsageError(f"--timeout: {exc.message}") from None
    printed: list[int] = []

    def show(report: Report) -> None:
        printed.append(
            emit(report, ctx, as_json=args.json, render_text=render_probe, html=args.html)
        )

    outcome = run_probe(
        ctx.environ,
        ports=local_ports(job_reuses_store=False),  # the command exits after: nothing reuses it
        device=_device(args.device),
        machine=args.machine,
        timeout=timeout,
        allow_cuda_init=True,  # this process is ours: ask CUDA itself
        on_report=show,
    )
    report = outcome.report
    status = (
        printed[0] if printed else int(ExitStatus.FINDINGS if report.has_errors else ExitStatus.OK)
    )
    failed = next((f for f in report.findings if f.code == "RM061"), None)
    if failed is not None:  # rank 0 could not collate: exit 3 on every rank, the reason said
        if not outcome.is_reporter:
            ctx.stderr.write(f"rankmap: error: rank {outcome.rank}: {failed.title}\n")
        return int(ExitStatus.UNAVAILABLE)
    if outcome.missing:
        if not outcome.is_reporter:
            from rankmap.ranks import rank_phrase

            ctx.stderr.write(
                f"rankmap: error: rank {outcome.rank}: {rank_phrase(outcome.missing, max_runs=None)} never "
                "reported\n"
            )
        return int(ExitStatus.UNAVAILABLE)
    return status


def _quiet_torch_cpp_logs() -> None:
    """Keep c10d's C++ retry logs (~45 lines of stack frames per failed connect) out of the output.

    NOTE: only in rankmap's own probe process and only before torch is imported (torch reads
    TORCH_CPP_LOG_LEVEL when it loads); a value the user set wins. rankmap reports store problems
    itself, in one line.
    """
    import os
    import sys

    from rankmap.cli.common import quiet_torch_import_warnings

    quiet_torch_import_warnings()
    if "torch" not in sys.modules:
        os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
