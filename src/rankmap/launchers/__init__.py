"""Launch simulation: a launch command -> the processes it starts, each with its environment.

Pure: every launcher module turns ``argv`` (plus the assumed environment, the machines and, for
accelerate/DeepSpeed, config files it reads through :class:`LaunchContext`) into a
:class:`LaunchPlan`. Nothing is executed. Facts: reference/launchers.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rankmap.errors import UsageError
from rankmap.model import Host, clone_host
from rankmap.sources import Files, NoFiles

SUPPORTED = (
    "torchrun",
    "python -m torch.distributed.run",
    "python -m torch.distributed.launch",
    "accelerate launch",
    "deepspeed",
    "srun",
    "mpirun / mpiexec",
    "horovodrun",
    "python SCRIPT.py | -m MODULE",
    "bash/sh SCRIPT.sh (or --shell FILE)",
)


@dataclass(frozen=True)
class Proc:
    """One process a launch starts: its ranks, the node it runs on and what the launcher sets."""

    rank: int
    local_rank: int
    node: int  # index of the machine (physical node) it runs on
    env: Mapping[str, str]  # variables the launcher sets on top of the node's environment
    args: tuple[str, ...] = ()  # arguments the launcher appends (``--local-rank=3``)
    world: int = 0  # index of the independent job (several single-process launches)
    node_rank: int | None = None  # the launcher's node/agent rank


@dataclass(frozen=True)
class LaunchIssue:
    """Something about the launch itself (not a rank's device) that becomes a finding."""

    code: str
    title: str
    detail: str = ""
    fix: str = ""
    ranks: tuple[int, ...] = ()
    predicted: tuple[str, ...] = ()  # error lines the launcher/job prints because of it
    severity: str | None = None


@dataclass(frozen=True)
class LaunchPlan:
    """The processes of one launch (or of several independent launches)."""

    launcher: str
    nnodes: int
    nproc_per_node: int
    procs: tuple[Proc, ...]
    script: str | None = None
    script_args: tuple[str, ...] = ()
    module: str | None = None
    issues: tuple[LaunchIssue, ...] = ()
    notes: tuple[str, ...] = ()
    worlds: int = 1
    joined: bool = False  # the worlds are lines of one job started by hand (RANK / --node_rank)
    per_process_cvd: bool = False  # the launcher narrows CUDA_VISIBLE_DEVICES per process
    sets_local_rank: bool = True  # LOCAL_RANK/RANK/WORLD_SIZE are in every worker's env
    local_rank_arg: str | None = None  # argument spelling appended to the script, if any
    node_env: Mapping[int, Mapping[str, str]] = field(default_factory=dict)  # per-node base env
    argv: tuple[str, ...] = ()
    hosts: tuple[Host, ...] = ()  # the machine of each node index
    fix_hints: Mapping[str, str] = field(default_factory=dict)  # launcher-specific fix strings
    # The environment the launcher itself starts in: the assumed env with the command line's own
    # ``VAR=v`` / ``env -u`` / wrapper changes and a script's export/unset lines applied (set by
    # launchers.dispatch; per-node launcher variables stay in ``node_env``).
    env: Mapping[str, str] | None = None
    wrappers: tuple[str, ...] = ()  # programs stepped over before the launcher ("uv run")
    # the environment words typed before the launcher (``FOO=1``, ``env -u X FOO=1``): a fixed
    # command keeps them (review 19: `env K=V torchrun ...` lost its prefix in the fix)
    prefix: tuple[str, ...] = ()
    nproc_from_machine: bool = False  # the process count is the machine's GPU count, not stated
    outer: str | None = None  # the launcher that runs this one on every task (srun, mpirun)
    task_labels: bool = False  # srun --label: every output line starts with its task id
    outer_tasks_per_node: int | None = None  # tasks per node of ``outer``
    gpus_per_task: int | None = None  # GPUs bound to each task (srun --gpus-per-task, not
    # with --gpu-bind=none)
    # MASTER_PORT of the store the launcher's agent hosts and every worker joins as a client
    # (torchrun: TORCHELASTIC_USE_AGENT_STORE=True); "" when picked as the launcher starts
    store_port: str | None = None
    store_port_default: bool = False  # "" is torch 2.13's single-node default (29500 before
    #                                   pytorch/pytorch PR #175699, February 2026)
    gpus_per_node: int | None = (
        None  # the scheduler's GPUs per node (--gres=gpu:N, --gpus-per-node)
    )

    @property
    def world_size(self) -> int:
        """Ranks in the (first) world; every line's ranks for a world started by hand."""
        return len(self.procs) if self.joined else sum(1 for p in self.procs if p.world == 0)


@dataclass
class LaunchContext:
    """What a launcher simulation may read: machines, environment, files relative to ``cwd``."""

    machines: Sequence[Host]
    env: Mapping[str, str]
    cwd: Path
    nodes: int | None = None
    sbatch: Mapping[str, str] = field(default_factory=dict)  # #SBATCH options (long names)
    files: Files = field(default_factory=NoFiles)  # the input port (config files, scripts)
    # The dispatcher (launchers.dispatch.simulate_launch) for launchers that run another
    # launcher (srun torchrun, mpirun torchrun, a shell script): set by the dispatcher itself.
    simulate: Callable[[Sequence[str], LaunchContext], LaunchPlan] | None = None

    def launch(self, argv: Sequence[str], ctx: LaunchContext | None = None) -> LaunchPlan:
        """The plan of an inner launch command, through the dispatcher that started this one."""
        if self.simulate is None:
            raise RuntimeError("LaunchContext.simulate is set by launchers.dispatch")
        return self.simulate(argv, ctx or self)

    def node_count(self, wanted: int | None) -> int:
        """The number of nodes to simulate: --nodes, else the launcher's, else --machine count."""
        if self.nodes:
            return self.nodes
        if wanted:
            return wanted
        return max(1, len(self.machines))

    def hosts(self, n: int) -> list[Host]:
        """``n`` hosts: one per ``--machine``, or the single machine cloned per node."""
        return expand_machines(self.machines, n)

    def path(self, path: str | Path) -> Path:
        """``path`` with ``~`` expanded, relative to ``cwd``."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.cwd / p

    def read(self, path: str | Path, what: str) -> str:
        """Text of a config file named by the launch (relative to ``cwd``); InputError if not."""
        return self.files.read_text(self.path(path), kind="config", what=f"{what} {str(path)!r}")

    def exists(self, path: str | Path) -> bool:
        return self.files.is_file(self.path(path))


MAX_RANKS = 262_144  # beyond this a "plan" is a typo, not a job (and would take minutes)
MAX_LAUNCHES = 4_096  # launches one shell script may start (loops unrolled), and loop values
MAX_GPUS_PER_TASK = 1_024  # srun --gpus-per-task / --gres beyond any node that exists


def check_launches(count: int, where: str) -> None:
    """UsageError when a script (its loops unrolled) would start more than MAX_LAUNCHES."""
    if count > MAX_LAUNCHES:
        raise UsageError(
            f"{where}: {count} launches: too many launches for rankmap to simulate "
            f"(at most {MAX_LAUNCHES})"
        )


def check_gpus(count: int, what: str) -> int:
    """``count`` when it is a plausible number of GPUs for one task; UsageError otherwise."""
    if count > MAX_GPUS_PER_TASK:
        raise UsageError(
            f"{what}: {count} GPUs is more than rankmap simulates per task ({MAX_GPUS_PER_TASK})"
        )
    return count


def check_size(ranks: int, what: str) -> None:
    """UsageError when a launch would start more than :data:`MAX_RANKS` processes."""
    if ranks > MAX_RANKS:
        raise UsageError(f"{what}: {ranks} processes is more than rankmap simulates ({MAX_RANKS})")


def expand_machines(machines: Sequence[Host], n: int) -> list[Host]:
    """``n`` hosts for ``n`` nodes. One machine is cloned with distinct hostnames and boot_ids."""
    if not machines:
        raise UsageError(
            "no machine to simulate", hint="pass --machine NAME (see `rankmap machines`)"
        )
    check_size(n, "nodes")
    if len(machines) >= n:
        return list(machines[:n])
    if len(machines) == 1:
        return [clone_host(machines[0], i) for i in range(n)]
    raise UsageError(
        f"the launch needs {n} nodes but {len(machines)} --machine values were given",
        hint="give one --machine per node, or one --machine with --nodes N",
    )


def split_env_prefix(argv: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """``[env] A=1 B=2 cmd ...`` -> ({A: 1, B: 2}, [cmd, ...]), for running the command.

    ``env`` with options (``-u NAME``, ``-i``) is left in place: the real ``env`` then applies
    them. Simulations read commands through :func:`rankmap.launchers.command.parse_command`.
    """
    env: dict[str, str] = {}
    rest = list(argv)
    if rest and os.path.basename(rest[0]) == "env":
        if rest[1:2] and rest[1].startswith("-"):
            return env, rest
        rest = rest[1:]
    while rest and "=" in rest[0] and rest[0].split("=", 1)[0].isidentifier():
        name, value = rest[0].split("=", 1)
        env[name] = value
        rest = rest[1:]
    return env, rest


def identify(argv: Sequence[str]) -> str | None:
    """Which launcher ``argv`` (env prefix stripped) is, or ``None``."""
    if not argv:
        return None
    prog = os.path.basename(argv[0])
    if prog == "torchrun":
        return "torchrun"
    if prog in ("accelerate", "accelerate-launch"):
        return "accelerate" if prog == "accelerate-launch" or argv[1:2] == ["launch"] else None
    if prog == "deepspeed":
        return "deepspeed"
    if prog in ("srun", "sbatch"):
        return "srun"
    if prog in ("mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prterun"):
        return "mpirun"
    if prog == "horovodrun":
        return "horovodrun"
    if prog in ("bash", "sh", "zsh") or prog.endswith(".sh"):
        return "shell"
    if prog.startswith("python"):
        mod = python_module(argv)
        if mod == "torch.distributed.run":
            return "torchrun"
        if mod == "torch.distributed.launch":
            return "torch.distributed.launch"
        if mod in ("accelerate.commands.launch",):
            return "accelerate"
        if mod == "deepspeed.launcher.runner":
            return "deepspeed"
        if mod is None and python_script(argv) is not None:
            return "python"
        if mod is not None and not _launcher_module(mod):
            return "python"  # python -m pkg.train: one process, like python train.py
    if prog.endswith(".py"):
        return "python"
    return None


# Packages whose other modules (``python -m torch.distributed.elastic...``) are launchers or
# tools rankmap does not simulate, and the words of a launcher module of any framework
# (``paddle.distributed.launch``, ``oneflow.distributed.launch``, ``lightning run``): left to the
# unknown-launcher error, not taken for one plain process (review 35)
_LAUNCHER_PACKAGES = frozenset(
    {"torch", "accelerate", "deepspeed", "horovod", "mpi4py", "lightning", "paddle", "oneflow",
     "colossalai", "torchx", "ray"}
)  # fmt: skip
_LAUNCHER_WORDS = frozenset({"launch", "launcher", "run", "distributed", "spawn", "elastic"})


def _launcher_module(module: str) -> bool:
    """Whether ``python -m module`` is (or may be) a launcher rather than a training program."""
    parts = module.split(".")
    return parts[0] in _LAUNCHER_PACKAGES or bool(_LAUNCHER_WORDS & set(parts[1:]))


# Interpreter options followed by a separate value (``python -X dev -W ignore -m MOD``).
_PY_VALUE_OPTS = ("-W", "-X", "--check-hash-based-pycs")


def _python_target(argv: Sequence[str]) -> tuple[str, int] | None:
    """("module", i) / ("script", i) / ("code", i) of ``python [opts] ...``: what it runs."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-c", "-m"):
            return ("code" if a == "-c" else "module", i + 1)
        if a.startswith(("-c", "-m")) and len(a) > 2:
            return ("code" if a[1] == "c" else "module", i)
        if a in _PY_VALUE_OPTS:
            i += 2
            continue
        if a == "-" or not a.startswith("-"):
            return ("script", i)
        i += 1
    return None


def python_module(argv: Sequence[str]) -> str | None:
    """The module of ``python [opts] -m MOD ...``."""
    target = _python_target(argv)
    if target is None or target[0] != "module":
        return None
    kind, i = target
    if argv[i - 1] == "-m":
        return argv[i] if i < len(argv) else None
    return argv[i][2:]


def after_module(argv: Sequence[str]) -> list[str]:
    """The module's own arguments in ``python [opts] -m MOD ARGS...`` (``argv[1:]`` otherwise).

    Only an interpreter's ``-m`` counts: in ``torchrun -m pkg.train`` the ``-m`` is torchrun's
    own ``--module`` flag and stays with torchrun's options.
    """
    if not argv or not os.path.basename(argv[0]).startswith("python"):
        return list(argv[1:])
    target = _python_target(argv)
    if target is None or target[0] != "module":
        return list(argv[1:])
    i = target[1]
    return list(argv[i + 1 :])


def python_script(argv: Sequence[str]) -> int | None:
    """Index of the script in ``python [opts] script.py ...``."""
    target = _python_target(argv)
    return target[1] if target is not None and target[0] == "script" else None


def unsupported(argv: Sequence[str]) -> UsageError:
    """The exit-2 error for a command that is no known launcher."""
    what = repr(argv[0]) if argv else "nothing"
    return UsageError(
        f"unknown launcher {what}; supported: {', '.join(SUPPORTED)}",
        hint="rankmap check [options] -- torchrun --nproc-per-node 8 train.py",
    )
