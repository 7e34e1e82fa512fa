"""Text of ``rankmap check``: verdict, launch summary, findings, predicted errors, rank map."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from rankmap.findings import Report
from rankmap.ranks import rank_ranges
from rankmap.render.console import Screen

if TYPE_CHECKING:
    from rich.console import Console

MAX_GROUPS_SHOWN = 4


def render_check(report: Report, ctx: Screen) -> None:
    """Human report: verdict, launch summary, findings, predicted errors, summarised rank map."""
    from rankmap.render.text import esc, render_findings, render_verdict

    console = ctx.console()
    launch = report.sections.get("launch", {})
    render_verdict(console, report, f"rankmap check ({launch.get('launcher', '?')})")
    console.print(esc(_launch_line(launch)))
    render_findings(console, report.ordered_findings())
    predicted = report.sections.get("predicted_errors", [])
    if predicted:
        console.print("[bold]Predicted errors[/] (what the job would print):")
        for line in predicted[:12]:
            console.print(f"  {esc(line)}")
        if len(predicted) > 12:
            console.print(f"  … {len(predicted) - 12} more lines (see --json)")
    render_rank_map(console, report.sections.get("ranks", []))
    for note in launch.get("notes", [])[:6]:
        console.print(f"[dim]note:[/] {esc(note)}")


def _launch_line(launch: dict[str, Any]) -> str:
    worlds = launch.get("worlds", 1)
    launcher, tasks = launch.get("launcher"), launch.get("outer_tasks_per_node") or 1
    if launch.get("outer") and tasks > 1:  # e.g. srun starting 8 torchrun agents on each node
        nodes = (launch.get("nnodes") or tasks) // tasks
        count = f"{launch['outer']} → {launcher} — {nodes} node(s) × {tasks} {launcher} per node"
    else:
        count = f"{launcher} — {launch.get('nnodes')} node(s)"
    head = (
        f"launch: {count} × {launch.get('nproc_per_node')} process(es) = world size "
        f"{launch.get('world_size')}"
    )
    if worlds and worlds > 1 and launch.get("joined"):
        head += f" (one world started by hand in {worlds} launch lines)"
    elif worlds and worlds > 1:
        head += f" ({worlds} independent worlds)"
    sel = launch.get("device_selection")
    script = launch.get("script") or launch.get("module") or "no script"
    how = f"; {script}: device selection {sel}"
    if launch.get("device_selection_call"):
        line = launch.get("device_selection_line")
        where = f"line {line}: " if line else "assumed: "
        other = launch.get("device_selection_file")
        if line and other:
            where = f"{other}:{line}: "  # the selection lives in a module the script imports
        how += f" ({where}{launch['device_selection_call']})"
    return head + how


def node_groups(rows: list[dict[str, Any]]) -> list[tuple[list[str], list[dict[str, Any]]]]:
    """Nodes with identical per-local-rank outcomes grouped: [(node names, rows of the first)]."""
    by_node: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_node[r["node"]].append(r)
    groups: dict[tuple[object, ...], tuple[list[str], list[dict[str, Any]]]] = {}
    for node, rs in by_node.items():
        sig = tuple(
            (
                r["world"],
                r["local_rank"],
                r["cuda_index"],
                tuple(r["visible"]),
                r["error"],
                r["env"].get("CUDA_VISIBLE_DEVICES"),
                r.get("pci_bus_id"),  # pods of one machine: same indices, different GPUs
            )
            for r in rs
        )
        if sig in groups:
            groups[sig][0].append(node)
        else:
            groups[sig] = ([node], rs)
    return sorted(groups.values(), key=lambda g: -len(g[0]))


def _sharing(rows: list[dict[str, Any]]) -> dict[int, list[int]]:
    """rank -> the other ranks of its world on the same GPU of this node (collisions)."""
    by_gpu: dict[tuple[object, object], list[int]] = defaultdict(list)
    for r in rows:
        if r.get("pci_bus_id") and not r["error"]:
            by_gpu[(r["world"], r["pci_bus_id"])].append(r["rank"])
    return {
        rank: [o for o in ranks if o != rank]
        for ranks in by_gpu.values()
        if len(ranks) > 1
        for rank in ranks
    }


def render_rank_map(console: Console, rows: list[dict[str, Any]]) -> None:
    """The rank map, identical nodes grouped, outlier groups listed."""
    from rich.table import Table

    from rankmap.render.text import esc

    if not rows:
        return
    groups = node_groups(rows)
    nodes_total = sum(len(n) for n, _ in groups)
    for names, rs in groups[:MAX_GROUPS_SHOWN]:
        title = f"Rank map: {names[0]}"
        if len(names) > 1:
            title = f"Rank map: {len(names)} identical nodes ({names[0]} … {names[-1]}); ranks of {names[0]} shown"
        elif nodes_total > 1 and len(groups) > 1:
            title += " (differs from the other nodes)"
        table = Table(title=esc(title), title_justify="left", show_edge=False, pad_edge=False)
        worlds = any(r["world"] for r in rs)
        cols = ("world", "rank", "local", "CVD", "selects", "cuda", "nvml", "pci_bus_id", "note")
        for col in cols if worlds else cols[1:]:
            table.add_column(col, overflow="fold", no_wrap=col in ("pci_bus_id", "cuda"))
        sharing = _sharing(rs)
        for r in rs[:64]:
            vis = r["visible"]
            others = sharing.get(r["rank"])
            cvd = r["env"].get("CUDA_VISIBLE_DEVICES")
            ok = not r["error"] and r["cuda_index"] is not None
            nvml = str(vis[r["cuda_index"]]) if ok else "-"
            table.add_row(
                *([str(r["world"])] if worlds else []),
                str(r["rank"]),
                str(r["local_rank"]),
                "(unset)" if cvd is None else esc(cvd),
                esc(r["selected_by"]),
                "-" if r["cuda_index"] is None else f"cuda:{r['cuda_index']}",
                nvml,
                esc(r.get("pci_bus_id") or "-"),
                esc(r["error"] or "")
                or (
                    f"COLLIDES with rank{'s' if len(others) > 1 else ''} {rank_ranges(others)}"
                    if others
                    else ""
                ),
                style="bold red" if others else None,
            )
        if len(rs) > 64:
            table.add_row(
                *([""] if worlds else []), "…", "", "", f"{len(rs) - 64} more ranks", "", "", "", ""
            )
        console.print(table)
    if len(groups) > MAX_GROUPS_SHOWN:
        rest = groups[MAX_GROUPS_SHOWN:]
        names = [n for g, _ in rest for n in g]
        console.print(
            f"… {len(rest)} more node group(s): {esc(', '.join(names[:8]))}{' …' if len(names) > 8 else ''}"
        )
