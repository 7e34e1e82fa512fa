"""Text of ``rankmap explain``: verdict, findings with evidence, rank map, what was read."""

from __future__ import annotations

from rankmap.findings import Report
from rankmap.render.console import Screen


def render_explain(report: Report, ctx: Screen) -> None:
    """Human text: verdict, findings with evidence, rank map, what was read."""
    from rankmap.render.text import esc, render_findings, render_placements, render_verdict

    console = ctx.console()
    sec = report.sections.get("explain", {})
    inputs = ", ".join(sec.get("inputs") or []) or "input"
    render_verdict(console, report, f"rankmap explain {inputs}")
    render_findings(console, report.ordered_findings())
    if report.placements:
        render_placements(console, report.placements, title=_rank_map_title(report))
    version = sec.get("nccl_version")
    if version:
        console.print(f"[dim]NCCL {esc(version)} ({esc(sec.get('nccl_version_source'))})[/]")
    for note in sec.get("context_from_log") or ():
        console.print(f"[dim]note: {esc(note)}[/]")


# Where explain's placements come from (rankmap.explain.rankmap_builder, engine._warn_placements).
_PLACEMENT_SOURCES = {"nccl-log": "NCCL Init lines", "nccl-warn": "NCCL's Duplicate GPU WARN"}


def _rank_map_title(report: Report) -> str:
    """The rank map's title names the lines it was rebuilt from."""
    seen = dict.fromkeys(
        _PLACEMENT_SOURCES.get(p.source or "", p.source or "the log") for p in report.placements
    )
    return f"Rank map (from {' and '.join(seen)})"
