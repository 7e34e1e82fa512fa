"""What the user told ``explain`` besides the log: launch command, env, machines, script.

The launch command is read by the one launch parser (:func:`rankmap.check.engine.plan_launch`,
the same typed :class:`~rankmap.launchers.LaunchPlan` ``check`` and ``run`` use) and simulated
once by ``check``'s engine; the script is analysed once, by ``check``'s
:mod:`~rankmap.check.script_scan` (only ever parsed with :mod:`ast`, never imported or run).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rankmap.findings import Finding
from rankmap.model import Gpu, Host, Placement
from rankmap.sources import Files

if TYPE_CHECKING:  # check's engine is imported when a launch is simulated, not to read a log
    from rankmap.check.engine import CheckRun
    from rankmap.launchers import LaunchPlan

# check's selection kinds as explain weighs them (a wrapped local rank is still the local rank).
_SELECTION = {"local_rank_modulo": "local_rank", "assumed_local_rank": None}


VISIBLE_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


@dataclass(frozen=True)
class LaunchFacts:
    """The launch command's numbers (``None``: not stated)."""

    command: str
    launcher: str | None = None
    nproc_per_node: int | None = None
    nnodes: int | None = None
    gpus_per_task: int | None = None
    gpus_per_node: int | None = None  # Slurm --gpus-per-node / --gres=gpu:N: the node's allocation
    device_selection: str | None = None  # from check's simulation or the script
    env: tuple[tuple[str, str], ...] = ()  # VAR=value assignments before the command
    nested_in: str | None = None  # "srun"/"mpirun" wrapping torchrun/accelerate/deepspeed
    outer_tasks_per_node: int | None = None  # tasks per node of the outer launcher
    check_findings: tuple[Finding, ...] = ()
    predicted_errors: tuple[str, ...] = ()
    plan: LaunchPlan | None = None  # the typed plan (None: a launcher rankmap does not simulate)
    unset: tuple[str, ...] = ()  # env -u NAME before the command
    placements: tuple[Placement, ...] = ()  # check's predicted rank map (on a given machine)
    cvd_from_launcher: bool = False  # ``env``'s CUDA_VISIBLE_DEVICES is the launcher's (--include)


@dataclass(frozen=True)
class Context:
    """Everything known besides the log."""

    launch: LaunchFacts | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    machines: tuple[Host, ...] = ()
    script_selection: str | None = None  # local_rank | global_rank | constant | none | unknown
    script_path: str | None = None
    notes: tuple[str, ...] = ()
    log_gpu_count: int | None = None  # GPU rows of an nvidia-smi table pasted with the log
    machines_told: int = 0  # machines the pasted text says the job spans (DocFacts.machines_told)
    # the pasted text shows a job of several processes (DocFacts.tells_several_processes): what
    # the log alone may not show
    several_processes_told: bool = False
    # the pasted text shows MIG (an nvidia-smi table in MIG mode, MIG UUIDs or profiles, a pod's
    # MIG request, MIG said in words): evidence for a MIG reading of a log's messages
    mig_told: bool = False
    # the pasted text shows no sign of a job of several processes (DocFacts.shows_one_program)
    one_program_told: bool = False

    def visible_var(self) -> str:
        """The visible-devices variable in effect: CUDA_VISIBLE_DEVICES, else ROCm's
        HIP_VISIBLE_DEVICES or ROCR_VISIBLE_DEVICES, which narrow and renumber the same way
        (https://rocm.docs.amd.com/en/latest/conceptual/gpu-isolation.html)."""
        return next((v for v in VISIBLE_VARS if v in self.env), VISIBLE_VARS[0])

    def cvd_entries(self) -> list[str] | None:
        """Entries of the visible-devices list (:meth:`visible_var`) from --env / the launch
        command, None when unset or not known (a shell variable's value)."""
        cvd = self.env.get(self.visible_var())
        if cvd is None or "$" in cvd:  # a variable's value (`$pair`) is no one-entry list
            return None
        return [e.strip() for e in cvd.split(",") if e.strip()]

    def visible_fits_launch(self) -> bool:
        """The visible-devices list (:meth:`cvd_entries`) gives every process of a node a GPU."""
        entries = self.cvd_entries()
        nproc = self.launch.nproc_per_node if self.launch else None
        return bool(entries) and nproc is not None and len(entries or ()) >= nproc

    def user_cvd(self) -> str | None:
        """The visible-devices list as the user set it (--env, ``VAR=value`` before the command),
        not the one a launcher derives from its own options (deepspeed --include)."""
        var = self.visible_var()
        cvd = self.env.get(var)
        launch = self.launch
        if launch and launch.cvd_from_launcher and cvd == dict(launch.env).get(var):
            return None
        return cvd

    def gpus_per_node(self) -> int | None:
        """GPU count of the (first) machine given, else of an nvidia-smi table in the log."""
        if not self.machines:
            return self.log_gpu_count
        # A MIG GPU offers one CUDA device per instance to the processes of a job.
        return sum(max(1, len(g.mig_devices)) if g.mig_mode else 1 for g in self.machines[0].gpus)

    def selection(self) -> str | None:
        """How the job selects devices: the script's answer, else the simulation's."""
        if self.script_selection and self.script_selection != "unknown":
            return self.script_selection
        return selection_kind(self.launch.device_selection) if self.launch else None


def selection_kind(kind: str | None) -> str | None:
    """check's :class:`~rankmap.check.script_scan.DeviceSelection` kind as explain weighs it."""
    if kind is None:
        return None
    return _SELECTION.get(kind, kind)


def launch_facts(
    command: str,
    machines: Sequence[Host],
    env: Mapping[str, str],
    script: Path | None,
    *,
    validate: bool,
    files: Files | None = None,
) -> tuple[LaunchFacts, str | None]:
    """The facts of ``command`` from one simulation by ``check``'s engine, and a note when it
    could not be simulated.

    Without a machine the command is simulated on a stand-in 8-GPU profile: what the command
    states (launcher, counts, env, the script's selection) is kept; what depends on the machine
    (check's findings, a process count read from the GPUs) is not. ``validate``: the user typed
    the command, so one that cannot be split is a usage error (a command quoted in a log is
    evidence, never an error).
    """
    from rankmap.check.engine import run_check
    from rankmap.errors import RankMapError, UsageError
    from rankmap.launchers import identify
    from rankmap.launchers.command import parse_command

    try:
        argv = shlex.split(command)
    except ValueError as exc:
        if validate:
            raise UsageError(f"--launch: cannot split the command: {exc}") from None
        argv = command.split()
    cmd = parse_command(argv, env)
    bare = LaunchFacts(
        command=command,
        launcher=identify(list(cmd.argv)),
        env=tuple(cmd.assigned.items()),
        unset=tuple(sorted(cmd.unset)),
    )
    if not argv or bare.launcher is None:
        return bare, None  # not a launcher rankmap simulates: best-effort context
    from rankmap.inventory import load_machine

    hosts = list(machines) or load_machine("dgx-h100")
    try:
        run = run_check(argv, machines=hosts, env=dict(env), script=script, files=files)
    except RankMapError as exc:
        note = f"--launch could not be simulated ({exc.message}); only its launcher was read"
        return bare, note if validate else None
    return replace(_facts(command, run, cmd.assigned, bool(machines)), unset=bare.unset), None


def _facts(
    command: str, run: CheckRun, assigned: Mapping[str, str], on_machine: bool
) -> LaunchFacts:
    plan = run.plan
    env = dict(assigned)
    cvd = plan.node_env.get(0, {}).get("CUDA_VISIBLE_DEVICES")
    from_launcher = False
    if cvd is not None and plan.outer is None and plan.launcher != "srun":
        env["CUDA_VISIBLE_DEVICES"] = cvd  # deepspeed --include, accelerate gpu_ids
        from_launcher = "CUDA_VISIBLE_DEVICES" not in assigned
    known_nproc = on_machine or not plan.nproc_from_machine
    return LaunchFacts(
        command=command,
        launcher=plan.launcher,
        nproc_per_node=plan.nproc_per_node if known_nproc else None,
        nnodes=plan.nnodes,
        gpus_per_task=plan.gpus_per_task,
        gpus_per_node=plan.gpus_per_node,
        device_selection=run.selection.kind,
        env=tuple(env.items()),
        nested_in=plan.outer,
        outer_tasks_per_node=plan.outer_tasks_per_node,
        check_findings=tuple(run.report.ordered_findings()) if on_machine else (),
        predicted_errors=tuple(run.report.sections.get("predicted_errors") or ())
        if on_machine
        else (),
        plan=plan,
        placements=tuple(run.report.placements) if on_machine else (),
        cvd_from_launcher=from_launcher,
    )


def gpu_for_bus(machines: Sequence[Host], bus_id: str, host: str | None) -> tuple[Host, Gpu] | None:
    """The machine GPU at ``bus_id``: on the host named ``host`` when given, else any match."""
    matches = [(h, g) for h in machines for g in h.gpus if g.pci_bus_id == bus_id]
    for h, g in matches:
        if host and (h.hostname == host or h.hostname.split(".")[0] == host):
            return h, g
    return matches[0] if matches else None
