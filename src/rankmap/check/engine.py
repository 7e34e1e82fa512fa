"""``check_launch``: a launch command on simulated machines -> every rank's physical GPU + findings.

Pipeline (all pure): launcher simulation (:mod:`rankmap.launchers`) -> per-rank environment ->
what the rank sees (:func:`rankmap.visibility.resolve_visible`) -> the CUDA index its script
selects (:mod:`rankmap.check.script_scan`) -> physical GPU -> :class:`~rankmap.model.Placement`s ->
findings and the exact errors the job would print (:mod:`rankmap.check.rules`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rankmap.check.index_select import (
    COMPUTED_BY_SCRIPT,
    branch_kind,
    own_visible,
    select_index,
    with_mod,
)
from rankmap.check.script_scan import ASSUMED, DeviceSelection, scan_path
from rankmap.check.sections import node_env
from rankmap.errors import UsageError
from rankmap.findings import Report
from rankmap.launchers import SUPPORTED, LaunchContext, LaunchIssue, LaunchPlan, Proc
from rankmap.model import Host
from rankmap.redact import redact_report, secret_values
from rankmap.sources import Files, NoFiles
from rankmap.visibility import VisibleView, resolve_visible

_VIS_KEYS = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "SLURM_STEP_GPUS",
    "SLURM_JOB_GPUS",
)


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


@dataclass(frozen=True)
class CheckRun:
    """One simulated launch: the typed plan, the script's selection, every rank, the report."""

    plan: LaunchPlan
    selection: DeviceSelection
    outcomes: tuple[RankOutcome, ...]
    report: Report


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
    return run_check(
        argv,
        machines=machines,
        env=env,
        script=script,
        nodes=nodes,
        shell_file=shell_file,
        cwd=cwd,
        files=files,
    ).report


def plan_launch(
    argv: Sequence[str],
    *,
    machines: Sequence[Host],
    env: Mapping[str, str],
    nodes: int | None = None,
    shell_file: Path | None = None,
    cwd: Path | None = None,
    files: Files | None = None,
) -> LaunchPlan:
    """The typed :class:`LaunchPlan` of a launch command (or ``--shell`` script): the one parser
    ``check``, ``explain --launch`` and ``run``'s preflight share."""
    return _plan(argv, _context(machines, env, nodes, cwd, files), shell_file)


def _context(
    machines: Sequence[Host],
    env: Mapping[str, str],
    nodes: int | None,
    cwd: Path | None,
    files: Files | None,
) -> LaunchContext:
    from rankmap.launchers.dispatch import simulate_launch

    if nodes is not None and nodes < 1:
        raise UsageError(f"--nodes must be >= 1, got {nodes}")
    return LaunchContext(
        machines=machines,
        env=dict(env),
        cwd=cwd or Path.cwd(),
        nodes=nodes,
        simulate=simulate_launch,
        files=files or NoFiles(),
    )


def _plan(argv: Sequence[str], ctx: LaunchContext, shell_file: Path | None) -> LaunchPlan:
    from rankmap.launchers.dispatch import simulate_launch

    if shell_file is not None:
        from rankmap.launchers import shell

        return shell.simulate_shell(shell_file, ctx, argv=argv)
    if not argv:
        raise UsageError(
            "missing launch command after `--`; supported launchers: " + ", ".join(SUPPORTED),
            hint="rankmap check --machine dgx-h100 -- torchrun --nproc-per-node 8 train.py",
        )
    return simulate_launch(argv, ctx)


def run_check(
    argv: Sequence[str],
    *,
    machines: Sequence[Host],
    env: Mapping[str, str],
    script: Path | None = None,
    nodes: int | None = None,
    shell_file: Path | None = None,
    cwd: Path | None = None,
    files: Files | None = None,
) -> CheckRun:
    """:func:`check_launch` with the typed intermediate results kept (``explain`` reuses them)."""
    from rankmap.check import nccl as plan_nccl
    from rankmap.check import rules as plan_rules
    from rankmap.check import topo as plan_topo
    from rankmap.check.sections import placement, sections
    from rankmap.launchers.dispatch import script_path

    ctx = _context(machines, env, nodes, cwd, files)
    plan = _plan(argv, ctx, shell_file)
    launch_env = plan.env if plan.env is not None else dict(env)
    path = script or script_path(plan, ctx)
    selection = read_selection(path, ctx.files, tuple(plan.script_args))
    plan = with_spawned_workers(plan, selection, launch_env)
    plan = with_lightning_world(plan, selection)
    outcomes = evaluate(plan, selection, launch_env)
    report = Report(command="check")
    report.findings = plan_rules.findings_for(plan, selection, outcomes, launch_env, path)
    report.placements = [placement(o) for o in outcomes]
    report.findings += plan_topo.topology_findings_for(
        plan, outcomes, report.placements, launch_env
    )
    report.sections.update(sections(plan, selection, outcomes, launch_env, path, ctx.cwd))
    report.sections.update(plan_nccl.predicted_errors(plan, outcomes, launch_env, selection))
    report = redact_report(
        report, secret_values({**env, **launch_env}, list(argv) + list(plan.argv))
    )
    return CheckRun(plan, selection, tuple(outcomes), report)


def with_spawned_workers(
    plan: LaunchPlan, selection: DeviceSelection, env: Mapping[str, str] | None = None
) -> LaunchPlan:
    """A one-process launch whose script starts its own workers (``mp.spawn(fn, nprocs=K)``):
    the K workers, spawn index = local rank, when K was read (``nprocs=device_count()``: one per
    GPU the parent sees); otherwise a note that the map shows the parent only. Launchers that
    start the ranks themselves are left as they are."""
    from dataclasses import replace

    if selection.spawn_where is not None and len(plan.procs) > 1 and selection.spawn_always:
        return _spawn_in_every_process(plan, selection, env or {})
    if selection.spawn_where is None or plan.world_size != 1 or len(plan.procs) != 1:
        return plan
    if selection.spawn_sets_local_rank and plan.launcher != "python":
        return plan  # Lightning under srun / a launcher takes that launcher's processes
    parent = plan.procs[0]
    k = selection.spawn_count
    if k is None and selection.spawn_per_gpu:
        k = _visible_to(parent, plan, env or {}) or None
    if k is None and selection.spawn_env is not None:
        k = _count_from_env(selection.spawn_env[0], {**(env or {}), **parent.env})
    if k is None:
        note = (
            f"{selection.spawn_where} starts worker processes whose number was not followed: "
            "the map shows the parent process only."
        )
        return replace(plan, notes=(*plan.notes, note))
    lightning = selection.spawn_sets_local_rank
    procs = tuple(
        replace(
            parent,
            rank=i,
            local_rank=i,
            env={**parent.env, **({"LOCAL_RANK": str(i)} if lightning else {})},
        )
        for i in range(k)
    )
    note = f"{selection.spawn_where} starts {k} worker process(es): " + (
        "Lightning runs one per device, LOCAL_RANK set."
        if lightning
        else "spawn index = local rank."
    )
    hints = {
        **plan.fix_hints,
        "spawn": selection.spawn_where,
        "spawn_arg": "devices" if lightning else "nprocs",
    }
    return replace(plan, procs=procs, nproc_per_node=k, notes=(*plan.notes, note), fix_hints=hints)


def _spawned_workers_collide(plan: LaunchPlan) -> bool:
    """Whether the workers of different launched processes select the same GPUs: two or more
    processes on one node, each seeing the node's GPUs (no list per process; review 57: one
    process per node, or one GPU per task, is no collision)."""
    per_node: dict[int, int] = {}
    for p in plan.procs:
        per_node[p.node] = per_node.get(p.node, 0) + 1
    if max(per_node.values(), default=0) < 2 or plan.per_process_cvd:
        return False
    return not any("CUDA_VISIBLE_DEVICES" in p.env for p in plan.procs)


def _count_from_env(var: str, env: Mapping[str, str]) -> int | None:
    """The spawn count a variable of the launch gives (``export WORLD_SIZE=8``); None where the
    launch does not set it (its default would be a guess about the user's shell)."""
    value = env.get(var, "").strip()
    return int(value) if value.isdecimal() and 0 < int(value) <= 4096 else None


def _spawn_in_every_process(
    plan: LaunchPlan, selection: DeviceSelection, env: Mapping[str, str]
) -> LaunchPlan:
    """A launcher that starts several processes, each running an unguarded ``mp.spawn``: every
    process starts its own workers, numbered from 0, so the workers of different processes on
    one node select the same GPUs (review-found shape: ``srun --ntasks-per-node=8 python
    train.py`` around a script that spawns one worker per GPU)."""
    from dataclasses import replace

    if selection.spawn_sets_local_rank or plan.launcher == "python":
        return plan
    if "mp.spawn index" not in selection.origin:
        return plan  # the workers take their GPU elsewhere (SLURM_LOCALID, the parent's)
    counts = {
        p.rank: selection.spawn_count
        or (_visible_to(p, plan, env) if selection.spawn_per_gpu else 0)
        for p in plan.procs
    }
    k = max(counts.values(), default=0)
    if k < 1 or len(set(counts.values())) != 1:
        note = (
            f"{selection.spawn_where} starts worker processes in each of the "
            f"{len(plan.procs)} processes {plan.launcher} starts; their number was not "
            "followed: the map shows the launched processes only."
        )
        return replace(plan, notes=(*plan.notes, note))
    procs = tuple(
        replace(parent, rank=parent.rank * k + i, local_rank=i)
        for parent in plan.procs
        for i in range(k)
    )
    note = f"{selection.spawn_where} starts {k} worker process(es) in every launched process: spawn index = local rank."
    if not _spawned_workers_collide(plan):
        return replace(plan, procs=procs, notes=(*plan.notes, note))
    per_node = plan.nproc_per_node or len(plan.procs)
    issue = LaunchIssue(
        "RM904",
        f"{plan.launcher} starts {per_node} process(es) per node and each runs "
        f"{selection.spawn_where}'s spawn of {k} workers: {per_node * k} processes per node",
        detail=f"The spawn at {selection.spawn_where} is not guarded, so every process "
        f"{plan.launcher} starts runs it; each one numbers its workers from 0, and workers of "
        "different processes select the same GPUs.",
        fix=f"start one process per node ({plan.launcher}), or drop the spawn and use the "
        "launcher's LOCAL_RANK when the launcher starts the processes",
        ranks=tuple(p.rank for p in procs),
    )
    return replace(plan, procs=procs, issues=(issue, *plan.issues), notes=(*plan.notes, note))


def with_lightning_world(plan: LaunchPlan, selection: DeviceSelection) -> LaunchPlan:
    """Lightning under torchrun takes torchrun's processes and refuses a world that is not
    ``devices * num_nodes`` (reference/launchers.md §7, TorchElasticEnvironment: "You set
    `devices=4` and `num_nodes=1` in Lightning, but the product (4 * 1) does not match the world
    size (8)."): RM941 where both numbers were read (review 50)."""
    from dataclasses import replace

    devices, nodes = selection.spawn_count, selection.spawn_nodes
    torchrun = plan.launcher in ("torchrun", "torch.distributed.launch")
    if not (selection.spawn_sets_local_rank and torchrun and devices and nodes):
        return plan
    world = plan.world_size
    if devices * nodes == world:
        return plan
    message = (
        f"You set `devices={devices}` and `num_nodes={nodes}` in Lightning, but the product "
        f"({devices} * {nodes}) does not match the world size ({world})."
    )
    issue = LaunchIssue(
        "RM941",
        f"Lightning's devices={devices} x num_nodes={nodes} is not the {world} processes "
        f"{plan.launcher} starts",
        detail=f"{selection.spawn_where}: Lightning takes the launcher's processes and stops "
        f"every rank with: {message}",
        fix=f"devices={plan.nproc_per_node}, num_nodes={plan.nnodes} in the Trainer (or start "
        f"{devices} process(es) per node on {nodes} node(s))",
        predicted=(message,),
    )
    return replace(plan, issues=(*plan.issues, issue))


def _visible_to(proc: Proc, plan: LaunchPlan, env: Mapping[str, str]) -> int:
    """How many GPUs ``proc`` sees on its host (``torch.cuda.device_count()`` in it)."""
    if not plan.hosts or proc.node >= len(plan.hosts):
        return 0
    base = node_env(plan, env, proc.node)
    visible = {k: v for k in _VIS_KEYS if (v := proc.env.get(k, base.get(k))) is not None}
    return len(resolve_visible(plan.hosts[proc.node], visible).devices)


def read_selection(
    path: Path | None, files: Files | None = None, script_args: tuple[str, ...] = ()
) -> DeviceSelection:
    """The script's device selection (:func:`scan_path`), :data:`ASSUMED` without a script."""
    if path is None:
        return ASSUMED
    files = files or NoFiles()
    data = files.read_bytes(path, kind="script", what=f"--script {str(path)!r}")
    text = data.decode("utf-8", errors="replace")
    if b"\x00" in data:
        from dataclasses import replace

        return replace(ASSUMED, parse_error=f"{path}: binary file, not Python", path=str(path))
    return scan_path(path, text, script_args, files)


_SHELL_PARAMETER = re.compile(r"\$(?:\{|[A-Za-z_(0-9@*#?!])|`")  # $X ${X} $(..) $1 $@ `..`


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
        merged = {k: v for k in _VIS_KEYS if (v := proc.env.get(k, base.get(k))) is not None}
        unknown = {k: v for k, v in merged.items() if _SHELL_PARAMETER.search(v)}
        if unknown:
            # a list the script computes where rankmap cannot (``$gpus`` set in an if, a bash
            # array): what the process sees is unknown, not an empty list (review 24)
            known = {k: v for k, v in merged.items() if k not in unknown}
            why = "{}={} {}".format(*next(iter(unknown.items())), COMPUTED_BY_SCRIPT)
            out.append(
                RankOutcome(proc, host, resolve_visible(host, known), None, None, why, False)
            )
            continue
        # Cloned nodes share one GPU tuple: one resolution serves them all.
        key = (id(host.gpus), host.view, host.cuda_fastest_first, *map(merged.get, _VIS_KEYS))
        view = cache.get(key)
        if view is None:
            view = resolve_visible(host, merged)
            cache[key] = view
        if (
            selection.kind == "visible_devices"
            or branch_kind(selection, proc, base) == "visible_devices"
        ):
            view, reason = own_visible(selection, proc, base, host, view)
            idx, error, from_default = (0 if view.devices else None), None, False
            if not view.devices and reason.startswith("CUDA_VISIBLE_DEVICES="):
                # the script's own list names no GPU of this host (a global rank past the
                # node's GPUs): CUDA sees none and the first CUDA call fails
                idx, error = 0, "no CUDA GPUs are available"
            elif view.devices and selection.then is not None:
                # then it selects an index among the GPUs it left visible (renumbered from 0)
                idx, error, then_why, from_default = with_mod(
                    select_index(selection.then, proc, base, len(view.devices)),
                    selection.then,
                    len(view.devices),
                )
                reason = f"{reason}, then {then_why}"
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
