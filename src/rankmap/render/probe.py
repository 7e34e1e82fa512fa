"""Text of ``rankmap probe``: verdict, the rank map (node layouts for large jobs), findings."""

from __future__ import annotations

from rankmap.findings import Report
from rankmap.render.console import Screen

# Above this many ranks the text report groups nodes by layout instead of listing every rank.
DETAIL_MAX_RANKS = 64


def render_probe(report: Report, ctx: Screen) -> None:
    """Verdict, the map (grouped by node layout for large jobs), findings."""
    from rankmap.render.text import esc, render_findings, render_placements, render_verdict

    console = ctx.console()
    nodes = report.sections.get("nodes", [])
    world = report.sections.get("world_size", len(report.placements))
    render_verdict(console, report, f"rankmap probe: {world} rank(s) on {len(nodes)} node(s)")
    if len(report.placements) <= DETAIL_MAX_RANKS:
        render_placements(console, report.placements, title="Rank map (from the ranks themselves)")
    else:
        groups = report.sections.get("node_groups", [])
        console.print("[bold]Node layouts[/] (identical nodes grouped; outliers listed after)")
        for i, g in enumerate(groups):
            names = g["nodes"]
            shown = ", ".join(names[:4]) + (f", +{len(names) - 4} more" if len(names) > 4 else "")
            tag = "" if i == 0 else "[yellow]outlier[/] "
            console.print(
                f"  {tag}{g['count']} node(s) x {g['ranks_per_node']} ranks: {esc(shown)}"
            )
            console.print(f"      local_rank->cuda->GPU: {esc(g['layout'])}")
    render_findings(console, report.ordered_findings())
    if report.sections.get("store"):
        console.print(f"[dim]exchanged through {esc(report.sections['store'])}[/]")
