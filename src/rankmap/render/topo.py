"""Text of ``rankmap topo``: the nvidia-smi-like matrix per host, the legend, findings."""

from __future__ import annotations

from rankmap.findings import Report
from rankmap.render.console import Screen
from rankmap.topology import LEGEND, Topology


def render_matrix(name: str, topo: Topology) -> list[str]:
    """The nvidia-smi-like matrix of one host as text lines."""
    width = max([6, *(len(lab) + 2 for lab in topo.labels)])
    has_cpu = any(g.cpu_affinity for g in topo.gpus) or any(n.cpu_affinity for n in topo.nics)
    has_numa = any(g.numa_node is not None for g in topo.gpus)
    head = " " * width + "".join(f"{lab:<{width}}" for lab in topo.labels)
    head += f"{'CPU Affinity':<16}" if has_cpu else ""
    head += "NUMA Affinity" if has_numa else ""
    lines = [f"{name} ({topo.source})", head.rstrip()]
    locality: dict[str, tuple[str, str]] = {}
    for g in topo.gpus:
        locality[g.label] = (
            g.cpu_affinity or "N/A",
            "N/A" if g.numa_node is None else str(g.numa_node),
        )
    for n in topo.nics:
        locality[n.label] = (n.cpu_affinity or "", "" if n.numa_node is None else str(n.numa_node))
    for label, row in zip(topo.labels, topo.matrix, strict=True):
        cells = "".join(f"{(' X ' if c == 'X' else c):<{width}}" for c in row)
        cpu, numa = locality.get(label, ("", ""))
        tail = (f"{cpu:<16}" if has_cpu else "") + (numa if has_numa else "")
        lines.append(f"{label:<{width}}{cells}{tail}".rstrip())
    links = [
        f"  {g.label}: NVLink gen {g.nvlink.generation}, {g.nvlink.active}/{g.nvlink.links} links up"
        for g in topo.gpus
        if g.nvlink is not None and g.nvlink.links
    ]
    nic_names = [f"  {n.label}: {n.device}" for n in topo.nics if n.device and n.device != n.label]
    if nic_names:
        lines += ["", "NIC Legend:", *nic_names]
    if links and len({ln.split(":", 1)[1] for ln in links}) > 1:
        lines += ["", "NVLink:", *links]
    return lines


def render_topo(report: Report, ctx: Screen) -> None:
    from rankmap.render.console import strip_controls
    from rankmap.render.text import render_findings

    section = report.sections["topology"]["hosts"]
    from rankmap.topology import parse_topology

    for doc in section:
        topo = parse_topology(doc)
        lines = render_matrix(str(doc["hostname"]), topo)
        ctx.stdout.write(strip_controls("\n".join(lines)) + "\n\n")
    ctx.stdout.write("Legend:\n")
    for word, meaning in LEGEND:
        ctx.stdout.write(f"  {word:<4} = {meaning}\n")
    if report.findings:
        ctx.stdout.write("\n")
        ctx.stdout.flush()
        render_findings(ctx.console(), report.ordered_findings())
