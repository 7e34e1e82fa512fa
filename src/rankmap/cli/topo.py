"""``rankmap topo``: the GPU / NIC / CPU matrix of ``nvidia-smi topo -m``, also as JSON.

Sources, first that applies: ``--topo-file`` (pasted ``nvidia-smi topo -m``), ``--machine``
(a profile's ``topology`` key), else this machine through NVML.
"""

from __future__ import annotations

import argparse
from typing import Any

from rankmap.cli.common import add_json, add_machine, emit
from rankmap.cli.context import AppContext
from rankmap.errors import UnavailableError
from rankmap.findings import Report
from rankmap.topology import LEGEND, Topology


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "topo",
        help="GPU/NIC/CPU topology matrix (like nvidia-smi topo -m), also as JSON",
        description="Show the link between every pair of GPUs and NICs (X, NV#, PIX, PXB, PHB, "
        "NODE, SYS), CPU and NUMA affinity, from NVML, a profile (--machine) or a pasted "
        "`nvidia-smi topo -m` (--topo-file). Rows and columns are NVML indices.",
    )
    add_machine(parser)
    parser.add_argument(
        "--topo-file",
        metavar="PATH",
        help="`nvidia-smi topo -m` output saved to a file ('-' reads stdin)",
    )
    add_json(parser)


def _read_topo_file(spec: str, ctx: AppContext) -> Topology:
    from rankmap.adapters.files import read_stdin
    from rankmap.inventory.topo_smi import parse_topo_matrix

    what = f"--topo-file {spec!r}"
    if spec == "-":
        text = read_stdin(ctx.stdin, kind="topo", what=what)
    else:
        text = ctx.files.read_text(ctx.path(spec), kind="topo", what=what)
    return parse_topo_matrix(text, source=spec)


def collect(args: argparse.Namespace, ctx: AppContext) -> list[tuple[str, Topology, Any]]:
    """(hostname, topology, host or None) for each requested machine."""
    from rankmap.topology import host_topology

    if args.topo_file:
        return [("topo-file", _read_topo_file(args.topo_file, ctx), None)]
    if args.machine:
        from rankmap.inventory import load_machine

        out = []
        for spec in args.machine:
            for host in load_machine(spec, ctx.files):
                topo = host_topology(host)
                if topo is None:
                    raise UnavailableError(
                        f"--machine {spec!r}: host {host.hostname} has no topology",
                        hint="add a 'topology' key (docs/topo.md) or use --topo-file",
                    )
                out.append((host.hostname, topo, host))
        return out
    from rankmap.adapters.nvml_topology import collect_topology

    return [(str(ctx.environ.get("HOSTNAME") or "localhost"), collect_topology(), None)]


def run(args: argparse.Namespace, ctx: AppContext) -> int:
    from rankmap.topology.rules import topology_findings

    entries = collect(args, ctx)
    report = Report(command="topo")
    for _name, _topo, host in entries:
        if host is not None:
            report.findings.extend(topology_findings(host, ()))
    report.sections["topology"] = {
        "hosts": [{"hostname": name, **topo.to_dict()} for name, topo, _ in entries]
    }
    return emit(report, ctx, as_json=args.json, render_text=_render_text)


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


def _render_text(report: Report, ctx: AppContext) -> None:
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
