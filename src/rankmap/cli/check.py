"""``rankmap check [opts] -- LAUNCH...``: predict every rank's GPU before anything runs."""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rankmap.cli.common import add_env, add_html, add_json, add_machine, emit
from rankmap.cli.context import AppContext
from rankmap.errors import UsageError
from rankmap.findings import Report
from rankmap.ranks import rank_ranges

if TYPE_CHECKING:
    from rich.console import Console

    from rankmap.model import Host

# Variables that only locate config files (accelerate's default config); taken from the real
# environment unless --env overrides them. They never change the GPU mapping.
_LOCATION_VARS = ("HOME", "HF_HOME", "XDG_CACHE_HOME")
MAX_GROUPS_SHOWN = 4


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "check",
        help="simulate a launch command: which rank gets which physical GPU",
        description="Simulate a launch command (torchrun, python -m torch.distributed.run/launch, "
        "accelerate launch, deepspeed, srun, mpirun/mpiexec, a shell loop) on a machine without "
        "running it: every rank's environment, visible devices, selected CUDA index and physical "
        "GPU; findings, the errors the job would print, and a corrected command.",
        epilog="example: rankmap check --machine dgx-h100 --env CUDA_VISIBLE_DEVICES=0,1,2,3 -- "
        "torchrun --nproc-per-node 8 train.py",
    )
    add_machine(parser)
    parser.add_argument(
        "--nodes", type=int, metavar="N", help="number of nodes (one --machine is cloned per node)"
    )
    add_env(parser)
    parser.add_argument(
        "--inherit-env",
        action="store_true",
        help="start from this shell's environment (default: only --env values)",
    )
    parser.add_argument(
        "--script", metavar="PATH", help="training script to read statically (never run)"
    )
    parser.add_argument(
        "--shell", metavar="FILE", help="shell/sbatch script with the launch line(s)"
    )
    add_json(parser)
    add_html(parser)
    parser.add_argument("launch", nargs=argparse.REMAINDER, help="-- LAUNCH COMMAND...")


def run(args: argparse.Namespace, ctx: AppContext) -> int:
    from rankmap.check.engine import check_launch
    from rankmap.envspec import effective_env, parse_env_assignments
    from rankmap.launchers import SUPPORTED

    launch = list(args.launch)
    if launch and launch[0] != "--":
        raise UsageError(
            f"put the launch command after `--` (got {launch[0]!r}); supported launchers: "
            + ", ".join(SUPPORTED),
            hint="rankmap check --machine dgx-h100 -- torchrun --nproc-per-node 8 train.py",
        )
    launch = launch[1:]
    if not launch and not args.shell:
        raise UsageError(
            "missing launch command after `--`; supported launchers: " + ", ".join(SUPPORTED),
            hint="rankmap check --machine dgx-h100 -- torchrun --nproc-per-node 8 train.py",
        )
    overrides = parse_env_assignments(args.env)
    base = (
        dict(ctx.environ)
        if args.inherit_env
        else {k: ctx.environ[k] for k in _LOCATION_VARS if k in ctx.environ}
    )
    env = effective_env(base, overrides)
    machines = _machines(args.machine, ctx)
    report = check_launch(
        launch,
        machines=machines,
        env=env,
        script=_path(args.script, ctx),
        nodes=args.nodes,
        shell_file=_path(args.shell, ctx),
        cwd=ctx.cwd,
    )
    return emit(report, ctx, as_json=args.json, render_text=render_check, html=args.html)


def _path(value: str | None, ctx: AppContext) -> Path | None:
    if value is None:
        return None
    p = Path(value).expanduser()
    p = p if p.is_absolute() else ctx.cwd / p
    if not p.is_file():
        from rankmap.errors import InputError

        if p.is_dir():
            raise InputError(f"{value!r} is a directory, not a file")
        if p.exists():  # /dev/zero, a FIFO, a socket: nothing a script or sbatch file can be
            raise InputError(f"{value!r} is not a regular file")
        raise InputError(f"{value!r}: no such file")
    return p


def _machines(specs: list[str], ctx: AppContext) -> list[Host]:
    from rankmap.inventory import load_machines

    if specs:
        return load_machines(specs)
    host, _ = ctx.local_host()
    if host is not None:
        return [host]
    from rankmap.errors import UnavailableError

    raise UnavailableError(
        "no --machine given and this machine's GPUs could not be read through NVML",
        hint="pass --machine NAME (see `rankmap machines`) or pasted nvidia-smi output",
    )


def render_check(report: Report, ctx: AppContext) -> None:
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
    head = (
        f"launch: {launch.get('launcher')} — {launch.get('nnodes')} node(s) × "
        f"{launch.get('nproc_per_node')} process(es) = world size {launch.get('world_size')}"
    )
    if worlds and worlds > 1:
        head += f" ({worlds} independent worlds)"
    sel = launch.get("device_selection")
    script = launch.get("script") or launch.get("module") or "no script"
    how = f"; {script}: device selection {sel}"
    if launch.get("device_selection_call"):
        line = launch.get("device_selection_line")
        where = f"line {line}: " if line else "assumed: "
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
