"""Text of ``rankmap bench`` after the nccl-tests-like table: wrong values, bandwidth, link share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rankmap.findings import Report
from rankmap.render.console import Screen

if TYPE_CHECKING:
    from rankmap.bench.link import LinkBandwidth


def render_bench_tail(
    report: Report, ctx: Screen, avg: float, link: LinkBandwidth | None, frac: float | None
) -> None:
    wrong = sum(int(r["wrong"]) for r in report.sections["results"])
    ctx.stdout.write(f"# Out of bounds values : {wrong} {'OK' if not wrong else 'FAILED'}\n")
    ctx.stdout.write(f"# Avg bus bandwidth    : {avg:.4f} GB/s\n")
    if link is not None and frac is not None:
        ctx.stdout.write(
            f"# Link                 : {link.description} = {link.gbps:.1f} GB/s per direction; "
            f"avg busbw reaches {frac * 100:.1f}%\n"
        )
    if report.findings:
        from rankmap.render.text import render_findings

        ctx.stdout.write("\n")
        ctx.stdout.flush()
        render_findings(ctx.console(), report.ordered_findings())
