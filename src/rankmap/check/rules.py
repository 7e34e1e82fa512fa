"""Findings of a simulated launch (see :func:`rankmap.check.engine.check_launch`): the root cause of
every failing or colliding group of ranks, with its concrete fix. The NCCL rule itself lives in
:mod:`rankmap.check.nccl`, warnings in :mod:`rankmap.check.warn_rules`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rankmap.check.consequences import (
    TOO_MANY,
    fold_into_cause,
    unwrapped_ordinal,
    wrapped_collision,
)
from rankmap.check.fixes import (
    cvd_line,
    device_line,
    fix_count,
    fix_for_cvd,
    fix_host_identity,
    fix_mig,
    fix_no_local_rank_arg,
)
from rankmap.check.index_select import branch_of
from rankmap.check.nccl import arg_error_line, device_of, duplicate_groups, host_key
from rankmap.check.rendezvous_rules import rendezvous_findings
from rankmap.check.script_scan import DeviceSelection
from rankmap.check.selection_rules import dup_severity, selection_findings
from rankmap.check.warn_rules import cross_world, mig_slices, warnings
from rankmap.findings import Finding, Severity, finding
from rankmap.gpu_sharing import (
    OrdinalFacts,
    SharedGpuFacts,
    duplicate_line,
    nccl_device,
    ordinal_code,
    shared_gpu_code,
)
from rankmap.launch_vars import GLOBAL_RANK_VARS
from rankmap.launchers import LaunchPlan
from rankmap.model import VisibleDevice
from rankmap.ranks import rank_phrase, ranks_text

if TYPE_CHECKING:
    from rankmap.check.engine import RankOutcome


def findings_for(
    plan: LaunchPlan,
    sel: DeviceSelection,
    outcomes: list[RankOutcome],
    env: Mapping[str, str],
    path: Path | None,
) -> list[Finding]:
    """Every finding of the plan, most likely root cause first."""
    out: list[Finding] = [
        finding(
            i.code,
            i.title,
            detail=i.detail,
            ranks=i.ranks,
            fix=i.fix,
            evidence=i.predicted[:5],
            severity=i.severity,
        )
        for i in plan.issues
    ]
    out += _arg_spelling(plan, sel)
    out += _failures(plan, sel, outcomes, env)
    out += _duplicates(plan, sel, outcomes, env)
    out += cross_world(plan, outcomes, env)
    out += warnings(plan, outcomes, env)
    out += selection_findings(sel, outcomes, out)
    out += rendezvous_findings(plan, sel)
    out = fold_into_cause(out)
    if not outcomes:
        return out
    if sel.parse_error:
        out.append(
            finding(
                "RM004",
                f"{sel.parse_error}: the script was not analysed; assuming cuda:LOCAL_RANK",
                fix="Pass the real entry script with --script.",
            )
        )
    elif sel.kind == "assumed_local_rank":
        out.append(_no_script(plan))
    return out


def _no_script(plan: LaunchPlan) -> Finding:
    """RM005: no script was read, so each rank is assumed to select its local rank; under a
    launcher that does not set LOCAL_RANK, which line does that (a script reading LOCAL_RANK
    would stop with KeyError: RM903 when the script is read)."""
    detail = (
        "Pass --script train.py (or name an existing .py in the command) to check what the "
        "script really selects."
    )
    if plan.sets_local_rank:
        return finding(
            "RM005",
            "No training script read: assuming each rank calls "
            "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))",
            detail=detail,
        )
    return finding(
        "RM005",
        f"No training script read: assuming each rank selects the GPU of its local rank "
        f"({plan.launcher} does not set LOCAL_RANK)",
        detail=f"{detail} A script that reads os.environ['LOCAL_RANK'] stops with KeyError under "
        f"{plan.launcher}; the line that works under both: `{device_line(plan)}`.",
    )


def _cause_context(o: RankOutcome, plan: LaunchPlan, env: Mapping[str, str]) -> dict[str, bool]:
    node_cvd = plan.node_env.get(o.proc.node, {}).get(
        "CUDA_VISIBLE_DEVICES", env.get("CUDA_VISIBLE_DEVICES")
    )
    per_process = plan.per_process_cvd or "CUDA_VISIBLE_DEVICES" in o.proc.env
    # NOTE: CUDA_VISIBLE_DEVICES is the cause (visible_devices_mismatch) only when it hides GPUs
    # the node has and exposing them would fit the process count; a variable that lists the whole
    # node (or a Slurm allocation) leaves too many processes for the GPUs: oversubscribed.
    narrowed = (
        node_cvd is not None
        and not per_process
        and len(o.view.devices) < len(o.host.gpus)
        and plan.nproc_per_node <= len(o.host.gpus)
    )
    return {"per_process": per_process, "narrowed": narrowed}


def _failure_code(
    o: RankOutcome, plan: LaunchPlan, sel: DeviceSelection, env: Mapping[str, str]
) -> str:
    c = _cause_context(o, plan, env)
    return ordinal_code(
        OrdinalFacts(
            no_devices=not o.view.devices,
            cvd_from_global_rank=_cvd_from_global_rank(sel, o, env),
            read_error=bool(o.error and o.error.startswith(("KeyError", "ValueError"))),
            selection=sel.kind,
            via_cvd=sel.via_cvd or any(alt.via_cvd for _, alt in sel.alternatives),
            # the script's own CUDA_VISIBLE_DEVICES per process, then an index among them
            per_process=c["per_process"] or sel.then is not None,
            narrowed=c["narrowed"],
            mig_hidden=_mig_hidden(o),
        )
    )


def _cvd_from_global_rank(sel: DeviceSelection, o: RankOutcome, env: Mapping[str, str]) -> bool:
    """The script sets CUDA_VISIBLE_DEVICES from a job-wide rank variable (``RANK``,
    ``SLURM_PROCID``, …): from the second node on it names GPUs the node does not have."""
    chosen = branch_of(sel, o.proc, env)
    return chosen.kind == "visible_devices" and chosen.env_vars[:1] in _GLOBAL_FIRST


_GLOBAL_FIRST = {(v,) for v in GLOBAL_RANK_VARS}


def _mig_hidden(o: RankOutcome) -> bool:
    """The process sees one MIG instance while its node has several (CUDA enumerates one MIG
    instance per process, reference/nccl.md (c)): an index past 0 counts the others."""
    instances = sum(len(g.mig_devices) for g in o.host.gpus if g.mig_mode)
    return len(o.view.devices) == 1 and o.view.devices[0].mig is not None and instances > 1


def _failures(
    plan: LaunchPlan, sel: DeviceSelection, outcomes: list[RankOutcome], env: Mapping[str, str]
) -> list[Finding]:
    shapes: dict[tuple[str, str, tuple[int, ...]], list[list[RankOutcome]]] = defaultdict(list)
    per_node: dict[tuple[int, int, str], list[RankOutcome]] = defaultdict(list)
    for o in outcomes:
        if o.error is not None:
            per_node[(o.proc.world, o.proc.node, _failure_code(o, plan, sel, env))].append(o)
    for (_, _, code), group in per_node.items():
        key = (code, group[0].error or "", tuple(o.proc.local_rank for o in group))
        shapes[key].append(group)
    out = []
    for (code, error, _), groups in shapes.items():
        first = groups[0]
        o = first[0]
        n_vis = len(o.view.devices)
        hosts = list(dict.fromkeys(g[0].host.hostname for g in groups))
        # several worlds (lines of one script) on one machine: their ranks, not one node's
        one_host_worlds = len(hosts) < len(groups)
        who = [x for g in groups for x in g] if one_host_worlds else first
        asked = sorted({x.cuda_index for x in who if x.cuda_index is not None})
        where = hosts[0] if len(hosts) == 1 else f"{len(hosts)} nodes ({hosts[0]}, ...)"
        if error.startswith(("KeyError", "ValueError")):
            title = f"{rank_phrase(x.proc.rank for g in groups for x in g)} fail reading the device index: {error}"
        elif not o.view.devices:
            blind = [x.proc.rank for g in groups for x in g]
            verb = "sees" if len(blind) == 1 else "see"
            title = f"{rank_phrase(blind)} on {where} {verb} no GPU"
            if code == "RM401":
                title += ": the script sets CUDA_VISIBLE_DEVICES from the job-wide rank"
        else:
            asking = (
                rank_phrase(x.proc.rank for x in who)
                if one_host_worlds
                else f"local ranks {ranks_text(x.proc.local_rank for x in first)}"
            )
            title = (
                f"{asking} on {where} ask for "
                f"{_cuda_list(asked)} but only {n_vis} GPU(s) are visible "
                f"({'cuda:0' if n_vis == 1 else f'cuda:0-{n_vis - 1}'}): "
                "invalid device ordinal"
            )
        detail = (
            f"Each rank selects its device by {sel.call or sel.kind} ({o.reason}); it sees "
            f"{_visible_text(o)}."
        )
        if code in TOO_MANY:
            detail += wrapped_collision(o, outcomes)
        out.append(
            finding(
                code,
                title,
                detail=detail,
                ranks=[x.proc.rank for g in groups for x in g],
                hosts=[g[0].host.hostname for g in groups],
                fix=_fix(code, plan, sel, o, env),
                severity=Severity.ERROR,  # the job stops here (RM602's default is a warning)
            )
        )
    return out


def _duplicates(
    plan: LaunchPlan, sel: DeviceSelection, outcomes: list[RankOutcome], env: Mapping[str, str]
) -> list[Finding]:
    shapes: dict[tuple[str, tuple[int, ...], str], list[list[RankOutcome]]] = defaultdict(list)
    for group in duplicate_groups(outcomes, plan, env):
        code = _dup_code(group, plan, sel, env)
        if dup_severity(code, sel) is None:
            continue
        got = device_of(group[0])
        assert got is not None
        key = (code, tuple(o.proc.local_rank for o in group), got[0] if code != "RM801" else "")
        shapes[key].append(group)
    # Too many processes for the GPUs is one cause however many GPUs end up shared: one finding,
    # led by the first GPU (the pair NCCL names first), the other GPUs in its detail.
    causes: dict[object, list[list[list[RankOutcome]]]] = defaultdict(list)
    code_of: dict[object, str] = {}
    for key, groups in shapes.items():
        cause = key[0] if key[0] in TOO_MANY or key[0] == "RM801" else key
        causes[cause].append(groups)
        code_of[cause] = key[0]
    return [_duplicate_finding(code_of[c], plan, sel, env, found) for c, found in causes.items()]


def _duplicate_finding(
    code: str,
    plan: LaunchPlan,
    sel: DeviceSelection,
    env: Mapping[str, str],
    shapes: list[list[list[RankOutcome]]],
) -> Finding:
    groups, others = shapes[0], shapes[1:]
    g = groups[0]
    o = g[0]
    dev = o.view.devices[o.cuda_index or 0]
    bus = dev.pci_bus_id or dev.physical_uuid
    gpu = f"GPU {dev.nvml_index} ({bus})"
    if dev.mig:
        gpu = f"MIG instances of GPU {dev.nvml_index} ({bus})"
    hosts = sorted({x.host.hostname for x in g})
    more = _more_groups(groups)
    if others:
        more += f" (and {len(others)} more GPU(s) shared the same way)"
    title = (
        f"ranks {ranks_text(x.proc.rank for x in g)} {'both' if len(g) == 2 else 'all'} use {gpu} on "
        f"{' and '.join(hosts) if code == 'RM801' else hosts[0]}{more}"
    )
    title = _cause_prefix(code, plan, sel, o) + title
    if code == "RM801":
        title = (
            f"nodes {', '.join(hosts)} share one NCCL host identity ({host_key(o, plan, env)}): "
            f"ranks {ranks_text(x.proc.rank for x in g)} collide on bus id {bus}{more}"
        )
    selected = "; ".join(f"rank {x.proc.rank}: {x.reason} -> cuda:{x.cuda_index}" for x in g[:4])
    detail = (
        f"{selected}. NCCL sees the same host and the same GPU: "
        f"`{duplicate_line(g[0].proc.rank, g[1].proc.rank, nccl_device(dev.pci_bus_id, bus))}`."
    )
    if others:
        pairs = [
            f"{rank_phrase(x.proc.rank for x in shape[0])} on GPU "
            f"{_gpu_of(shape[0][0]).nvml_index} ({_bus_of(shape[0][0])})"
            for shape in others
        ]
        listed = "; ".join(pairs[:6]) + (f"; and {len(pairs) - 6} more" if len(pairs) > 6 else "")
        detail += f" The same cause puts {listed} together."
    if code in TOO_MANY and sel.modulo:
        detail += unwrapped_ordinal(g, plan.nproc_per_node)
    return finding(
        code,
        title,
        detail=detail,
        ranks=[x.proc.rank for grp in groups for x in grp],
        devices=[bus],
        hosts=[x.host.hostname for grp in groups for x in grp],
        fix=_fix(code, plan, sel, o, env),
        severity=dup_severity(code, sel),
    )


def _gpu_of(o: RankOutcome) -> VisibleDevice:
    return o.view.devices[o.cuda_index or 0]


def _bus_of(o: RankOutcome) -> str:
    dev = _gpu_of(o)
    return dev.pci_bus_id or dev.physical_uuid


def _more_groups(groups: list[list[RankOutcome]]) -> str:
    """`` (and the same on 1 more node(s))`` / `` (and 3 more GPU(s) shared the same way)``."""
    if len(groups) < 2:
        return ""
    nodes = {(g[0].proc.world, g[0].proc.node) for g in groups}
    if len(nodes) == len(groups):
        return f" (and the same on {len(groups) - 1} more node(s))"
    where = f" on {len(nodes)} nodes" if len(nodes) > 1 else ""
    return f" (and {len(groups) - 1} more GPU(s) shared the same way{where})"


def _cause_prefix(code: str, plan: LaunchPlan, sel: DeviceSelection, o: RankOutcome) -> str:
    n = len(o.view.devices)
    cvd = o.view.cuda_visible_devices
    prefixes = {
        "RM903": f"{plan.launcher} does not set {sel.env_vars[0] if sel.env_vars else 'LOCAL_RANK'}: ",
        "RM301": "no device is selected per rank: ",
        "RM302": "one constant device for every rank: ",
        "RM401": "the global rank is used as device index: ",
        "RM901": "--local_rank is never passed to the script: ",
        "RM201": f"CUDA_VISIBLE_DEVICES={cvd} shows {n} GPU(s) to {plan.nproc_per_node} processes: ",
        "RM101": f"{plan.nproc_per_node} processes share {n} GPU(s): ",
        "RM503": "per-process CUDA_VISIBLE_DEVICES gives the same GPU: ",
        "RM601": "MIG slices of one GPU: ",
    }
    return prefixes.get(code, "")


def _dup_code(
    group: list[RankOutcome], plan: LaunchPlan, sel: DeviceSelection, env: Mapping[str, str]
) -> str:
    c = _cause_context(group[0], plan, env)
    from_default = any(x.from_default for x in group)
    return shared_gpu_code(
        SharedGpuFacts(
            hosts_merged=len({x.proc.node for x in group}) > 1,
            mig_siblings=len(mig_slices(group)) > 1,
            each_sees_one=c["per_process"] and all(len(x.view.devices) == 1 for x in group),
            per_process=c["per_process"],
            launcher_var_missing=from_default and not plan.sets_local_rank,
            arg_default=from_default and plan.sets_local_rank and sel.arg_dest == "local_rank",
            selection=sel.kind,
            narrowed=c["narrowed"],
        )
    )


def _arg_spelling(plan: LaunchPlan, sel: DeviceSelection) -> list[Finding]:
    arg = plan.local_rank_arg
    line = arg_error_line(plan, sel)
    if line is None or arg is None:
        return []
    assumed = " (PyTorch >= 2.0 assumed)" if plan.launcher == "torch.distributed.launch" else ""
    if sel.hydra_entry:
        return [
            finding(
                "RM901",
                f"{plan.launcher}{assumed} passes {arg}=N but the script's command line is "
                f"Hydra's (@hydra.main at {sel.hydra_entry}; Hydra 1.x assumed), which accepts "
                "only key=value overrides and its own flags",
                detail=f"Hydra parses sys.argv with argparse before the task runs (hydra/main.py "
                f"of Hydra 1.3.2: `args_parser.parse_args()`): every rank stops with `{line}`.",
                ranks=[p.rank for p in plan.procs],
                evidence=[line, sel.hydra_entry],
                fix=fix_no_local_rank_arg(plan)
                or "launch without the --local_rank argument (torchrun passes LOCAL_RANK in the "
                "environment)",
            )
        ]
    return [
        finding(
            "RM901",
            f"{plan.launcher}{assumed} passes {arg}=N but the script declares "
            + (
                f"only {', '.join(sel.declared_args)}"
                if sel.declared_args
                else "no local-rank argument and parses sys.argv strictly (argparse parse_args())"
            ),
            detail=f"argparse stops every rank with `{line}`.",
            ranks=[p.rank for p in plan.procs],
            evidence=[line],
            fix='parser.add_argument("--local-rank", "--local_rank", type=int, '
            'default=int(os.environ.get("LOCAL_RANK", 0)))',
        )
    ]


def _fix(
    code: str, plan: LaunchPlan, sel: DeviceSelection, o: RankOutcome, env: Mapping[str, str]
) -> str:
    n_vis = len(o.view.devices)
    if code in ("RM101", "RM102"):
        return fix_count(plan, n_vis) + " (one process per visible GPU)"
    if code == "RM201":
        return fix_for_cvd(plan, o, env)
    if code == "RM240":
        return (
            "torch.cuda.set_device(local_rank)  # CUDA renumbers the visible GPUs from 0: use "
            "the position in CUDA_VISIBLE_DEVICES, not its entry"
        )
    if code == "RM203":
        passed = o.proc.env.get("NVIDIA_VISIBLE_DEVICES", env.get("NVIDIA_VISIBLE_DEVICES"))
        if passed and passed not in ("all", "none", "void"):
            n = len(o.host.gpus) if passed == "all" else len(passed.split(","))
            inside = ",".join(str(i) for i in range(n))
            return (
                f"drop CUDA_VISIBLE_DEVICES inside the container, or number it from 0 "
                f"(CUDA_VISIBLE_DEVICES={inside}): the container sees the GPUs it was given "
                f"({passed}) renumbered from 0"
            )
        return (
            "unset CUDA_VISIBLE_DEVICES, or list each GPU once (e.g. CUDA_VISIBLE_DEVICES=0,1,2,3)"
        )
    if code == "RM401" and sel.kind == "visible_devices":
        return f"{cvd_line(plan)}  (replacing {sel.call or 'the global rank'})"
    if code in ("RM301", "RM302", "RM401", "RM901"):
        fix = f"{device_line(plan)} before init_process_group{_in_place_of(code, sel)}"
        origin = sel.origin.split(": ", 1)[0] if sel.origin else ""
        if code == "RM401" and origin and sel.where and origin != sel.where:
            # the global rank is read elsewhere (a helper's torch.device(..., get_rank())):
            # what that line makes is used beyond the set_device too (review 53)
            fix += f"; the global rank is read at {origin}: make that the local rank too"
        return fix
    if code == "RM501":
        return device_line(plan, modulo=True) + "  # each process sees only its own GPU(s)"
    if code == "RM503":
        return (
            "give each process its own GPU: CUDA_VISIBLE_DEVICES=$LOCAL_RANK (one entry per rank)"
        )
    if code == "RM601":
        return fix_mig(plan, o, env)
    if code == "RM602":
        physical = sum(1 for g in o.host.gpus if g.mig_mode) or len(o.host.gpus)
        if plan.nproc_per_node > physical:
            # one MIG UUID per process would put several ranks on slices of one GPU: RM601
            return (
                f"at most {physical} rank(s) on {o.host.hostname}: NCCL needs each rank on its "
                f"own physical GPU, and MIG slices of one GPU share it — start {physical} "
                "process(es) with one MIG instance of a different GPU each, or disable MIG "
                "(`nvidia-smi -mig 0`) for this job"
            )
    if code == "RM801":
        hosts = sorted({h.hostname for h in plan.hosts})
        return fix_host_identity(host_key(o, plan, env), hosts)
    if code in ("RM903", "RM905"):
        return device_line(plan) + "  # map the launcher's variables before reading LOCAL_RANK"
    return ""


def _in_place_of(code: str, sel: DeviceSelection) -> str:
    """What the device line replaces: the wrong selection; for a script that selects none
    (RM301), its first CUDA use is kept and the line goes before it."""
    if not sel.call:
        return ""
    if code == "RM301" and "set_device" not in sel.call:
        return f" and before {sel.call}"
    return f" (replacing {sel.call})"


def _cuda_list(idx: list[int]) -> str:
    if not idx:
        return "a device"
    if len(idx) > 2 and idx == list(range(idx[0], idx[-1] + 1)):
        return f"cuda:{idx[0]}..cuda:{idx[-1]}"
    return ", ".join(f"cuda:{i}" for i in idx)


def _visible_text(o: RankOutcome) -> str:
    cvd = o.view.cuda_visible_devices
    n = len(o.view.devices)
    base = f"{n} GPU(s)" + (f" (CUDA_VISIBLE_DEVICES={cvd})" if cvd is not None else "")
    return base
