"""``check_launch``: a launch command on simulated machines -> every rank's physical GPU + findings.

Pipeline (all pure): launcher simulation (:mod:`rankmap.launchers`) -> per-rank environment ->
what the rank sees (:func:`rankmap.visibility.resolve_visible`) -> the CUDA index its script
selects (:mod:`rankmap.check.script_scan`) -> physical GPU -> :class:`~rankmap.model.Placement`s ->
findings and the exact errors the job would print (:mod:`rankmap.check.rules`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankmap.check.index_select import branch_kind, own_visible, select_index, with_mod
from rankmap.check.script_scan import ASSUMED, DeviceSelection, scan_path
from rankmap.errors import UsageError
from rankmap.findings import Report
from rankmap.launchers import SUPPORTED, LaunchContext, LaunchPlan, Proc
from rankmap.model import Host, Placement
from rankmap.redact import redact_report, redact_value, secret_values
from rankmap.sources import Files, NoFiles
from rankmap.visibility import VisibleView, resolve_visible

_VIS_KEYS = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "SLURM_STEP_GPUS",
    "SLURM_JOB_GPUS",
)
MAX_RANK_ROWS = 65536  # per-rank "ranks" section entries kept in JSON


@dataclass(frozen=True)
class RankOutcome:
    """One simulated rank: its process, what it sees, what it selects and what happens."""

    proc: Proc
    host: Host
    view: VisibleView
    cuda_index: int | None
    error: str | None  # "invalid device ordinal", "KeyError: 'LOCAL_RANK'", ...
    reason: str  # how the index was chosen: "LOCAL_RANK=3", "default device", ...
    from_default: bool = False  # index came from a default because the variable was missing

    def lookup(self, name: str, node_env: Mapping[str, str]) -> str | None:
        return self.proc.env.get(name, node_env.get(name))


def check_launch(
    argv: Sequence[str],
    *,
    machines: Sequence[Host],
    env: Mapping[str, str],
    script: Path | None = None,
    nodes: int | None = None,
    shell_file: Path | None = None,
    cwd: Path | None = None,
    files: Files | None = None,
) -> Report:
    """Simulate ``argv`` (a launch command) on ``machines``; the ``check`` report.

    Raises :class:`~rankmap.errors.UsageError` for an unknown launcher or a missing command and
    :class:`~rankmap.errors.InputError` for unreadable/malformed config files.
    """
    from rankmap.check import nccl as plan_nccl
    from rankmap.check import rules as plan_rules
    from rankmap.check import topo as plan_topo
    from rankmap.launchers.dispatch import script_path, simulate_launch

    cwd = cwd or Path.cwd()
    if nodes is not None and nodes < 1:
        raise UsageError(f"--nodes must be >= 1, got {nodes}")
    files = files or NoFiles()
    ctx = LaunchContext(
        machines=machines,
        env=dict(env),
        cwd=cwd,
        nodes=nodes,
        simulate=simulate_launch,
        files=files,
    )
    if shell_file is not None:
        from rankmap.launchers import shell

        plan = shell.simulate_shell(shell_file, ctx, argv=argv)
    elif not argv:
        raise UsageError(
            "missing launch command after `--`; supported launchers: " + ", ".join(SUPPORTED),
            hint="rankmap check --machine dgx-h100 -- torchrun --nproc-per-node 8 train.py",
        )
    else:
        plan = simulate_launch(argv, ctx)
    path = script or script_path(plan, ctx)
    selection = _selection(path, files, tuple(plan.script_args))
    outcomes = evaluate(plan, selection, ctx.env)
    report = Report(command="check")
    report.findings = plan_rules.findings_for(plan, selection, outcomes, ctx.env, path)
    report.placements = [_placement(o) for o in outcomes]
    report.findings += plan_topo.topology_findings_for(plan, outcomes, report.placements, ctx.env)
    report.sections.update(_sections(plan, selection, outcomes, ctx.env, path, cwd))
    report.sections.update(plan_nccl.predicted_errors(plan, outcomes, ctx.env, selection))
    return redact_report(report, secret_values(ctx.env, list(argv) + list(plan.argv)))


def _selection(
    path: Path | None, files: Files, script_args: tuple[str, ...] = ()
) -> DeviceSelection:
    if path is None:
        return ASSUMED
    data = files.read_bytes(path, kind="script", what=f"--script {str(path)!r}")
    text = data.decode("utf-8", errors="replace")
    if b"\x00" in data:
        from dataclasses import replace

        return replace(ASSUMED, parse_error=f"{path}: binary file, not Python", path=str(path))
    return scan_path(path, text, script_args, files)


def node_env(plan: LaunchPlan, env: Mapping[str, str], node: int) -> Mapping[str, str]:
    """The environment every process of ``node`` inherits (assumed env + per-node launcher env)."""
    extra = plan.node_env.get(node)
    return {**env, **extra} if extra else env


def evaluate(
    plan: LaunchPlan, selection: DeviceSelection, env: Mapping[str, str]
) -> list[RankOutcome]:
    """Every process of ``plan``: visible devices, selected CUDA index and its failure, if any."""
    hosts = plan.hosts
    cache: dict[tuple[object, ...], VisibleView] = {}
    envs = {n: node_env(plan, env, n) for n in {p.node for p in plan.procs}}
    out: list[RankOutcome] = []
    for proc in plan.procs:
        base = envs[proc.node]
        host = hosts[proc.node]
        # Cloned nodes share one GPU tuple: one resolution serves them all.
        key = (
            id(host.gpus),
            host.view,
            host.cuda_fastest_first,
            *(proc.env.get(k, base.get(k)) for k in _VIS_KEYS),
        )
        view = cache.get(key)
        if view is None:
            merged = {k: v for k in _VIS_KEYS if (v := proc.env.get(k, base.get(k))) is not None}
            view = resolve_visible(host, merged)
            cache[key] = view
        if (
            selection.kind == "visible_devices"
            or branch_kind(selection, proc, base) == "visible_devices"
        ):
            view, reason = own_visible(selection, proc, base, host, view)
            idx, error, from_default = (0 if view.devices else None), None, False
        else:
            idx, error, reason, from_default = with_mod(
                select_index(selection, proc, base, len(view.devices)),
                selection,
                len(view.devices),
            )
        if error is None and idx is not None and not 0 <= idx < len(view.devices):
            error = "invalid device ordinal" if view.devices else "no CUDA GPUs are available"
        out.append(RankOutcome(proc, host, view, idx, error, reason, from_default))
    return out


def _placement(o: RankOutcome) -> Placement:
    dev = (
        o.view.by_cuda_index(o.cuda_index) if o.error is None and o.cuda_index is not None else None
    )
    return Placement(
        rank=o.proc.rank,
        local_rank=o.proc.local_rank,
        node=o.host.hostname,
        cuda_index=o.cuda_index,
        nvml_index=dev.nvml_index if dev else None,
        uuid=dev.uuid if dev else None,
        pci_bus_id=dev.pci_bus_id if dev else None,
        mig=dev.mig if dev else None,
        node_rank=o.proc.node_rank if o.proc.node_rank is not None else o.proc.node,
        error=o.error,
        source="simulated",
    )


def _sections(
    plan: LaunchPlan,
    sel: DeviceSelection,
    outcomes: list[RankOutcome],
    env: Mapping[str, str],
    path: Path | None,
    cwd: Path,
) -> dict[str, Any]:
    from rankmap.model import Inventory

    first = outcomes[0] if outcomes else None
    launch = {
        "launcher": plan.launcher,
        "nnodes": plan.nnodes,
        "nproc_per_node": plan.nproc_per_node,
        "world_size": plan.world_size,
        "script": _shown_path(path, cwd) if path else plan.script,
        "device_selection": "unknown" if sel.kind == "unknown" else sel.kind,
        "device_selection_call": sel.call,
        "device_selection_line": sel.line,
        "module": plan.module,
        "worlds": plan.worlds,
        "argv": list(plan.argv),
        "notes": list(plan.notes) + list(sel.notes),
        "env": {k: _redacted(k, v) for k, v in sorted(env.items())[:64]},
        "device_selection_where": sel.where,
        "device_selection_framework": sel.framework,
        "device_selection_unresolved": list(sel.unresolved),
        "backend": sel.backend,
    }
    used = sorted({o.proc.node for o in outcomes})
    hosts = [plan.hosts[i] for i in used] if len(used) <= 64 else [plan.hosts[i] for i in used[:64]]
    return {
        "launch": launch,
        "inventory": Inventory(tuple(hosts)).to_dict(),
        "visible_devices": first.view.to_dict_list() if first else [],
        "visible_devices_notes": list(first.view.notes) if first else [],
        "ranks": [_rank_row(o, plan, env) for o in outcomes[:MAX_RANK_ROWS]],
    }


@functools.lru_cache(maxsize=4096)
def _redacted(name: str, value: str) -> str:
    return redact_value(name, value)


def _bus(o: RankOutcome) -> str | None:
    if o.error is not None or o.cuda_index is None:
        return None
    return o.view.devices[o.cuda_index].pci_bus_id


def _shown_path(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def _rank_row(o: RankOutcome, plan: LaunchPlan, env: Mapping[str, str]) -> dict[str, Any]:
    base = node_env(plan, env, o.proc.node)
    shown = dict(o.proc.env)
    cvd = o.proc.env.get("CUDA_VISIBLE_DEVICES", base.get("CUDA_VISIBLE_DEVICES"))
    if cvd is not None:
        shown["CUDA_VISIBLE_DEVICES"] = cvd
    return {
        "rank": o.proc.rank,
        "local_rank": o.proc.local_rank,
        "node": o.host.hostname,
        "world": o.proc.world,
        "env": {k: _redacted(k, v) for k, v in shown.items()},
        "args": list(o.proc.args),
        "visible": [d.nvml_index for d in o.view.devices],
        "pci_bus_id": _bus(o),
        "cuda_index": o.cuda_index,
        "selected_by": o.reason,
        "error": o.error,
    }
