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
from rankmap.render.topo import render_topo
from rankmap.topology import Topology


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
    return emit(report, ctx, as_json=args.json, render_text=render_topo)
