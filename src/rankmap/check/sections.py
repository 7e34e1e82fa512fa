"""check's report sections: the placement of every rank, the ``launch`` summary, the inventory,
what the first rank sees and the per-rank rows (env values redacted)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rankmap.check.script_scan import DeviceSelection
from rankmap.launchers import LaunchPlan
from rankmap.model import Placement
from rankmap.redact import redact_value

if TYPE_CHECKING:
    from rankmap.check.engine import RankOutcome

MAX_RANK_ROWS = 65536  # per-rank "ranks" section entries kept in JSON


def node_env(plan: LaunchPlan, env: Mapping[str, str], node: int) -> Mapping[str, str]:
    """The environment every process of ``node`` inherits (assumed env + per-node launcher env)."""
    extra = plan.node_env.get(node)
    return {**env, **extra} if extra else env


def placement(o: RankOutcome) -> Placement:
    """The contract's placement of one simulated rank."""
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


def sections(
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
        "joined": plan.joined,
        # the launcher that runs this one on every task (srun / mpirun torchrun ...)
        "outer": plan.outer,
        "outer_tasks_per_node": plan.outer_tasks_per_node,
        "argv": list(plan.argv),
        "notes": list(plan.notes) + list(sel.notes),
        "env": {k: _redacted(k, v) for k, v in sorted(env.items())[:64]},
        "device_selection_where": sel.where,
        # the file of the selection when it is not the script (a module the script imports)
        "device_selection_file": _other_file(sel.where, path, cwd),
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


def _other_file(where: str | None, script: Path | None, cwd: Path) -> str | None:
    """The file of ``where`` (``path:line``), shown from ``cwd``, when it is not ``script``."""
    if not where or ":" not in where:
        return None
    file = Path(where.rsplit(":", 1)[0])
    file = file if file.is_absolute() else cwd / file
    if script is not None:
        mine = script if script.is_absolute() else cwd / script
        if file.resolve() == mine.resolve():
            return None
    return _shown_path(file, cwd)


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
