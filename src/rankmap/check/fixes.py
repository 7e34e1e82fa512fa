"""Concrete fixes for a simulated launch: the corrected command, env, YAML or script line."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rankmap.launchers import LaunchPlan
from rankmap.launchers.command import shell_join
from rankmap.launchers.options import replace_option

if TYPE_CHECKING:
    from rankmap.check.engine import RankOutcome

# launcher -> (option spellings that set the per-node process count, value is per node?)
_COUNT_OPTS: dict[str, tuple[tuple[str, ...], bool]] = {
    "torchrun": (("--nproc-per-node", "--nproc_per_node"), True),
    "torch.distributed.launch": (("--nproc-per-node", "--nproc_per_node"), True),
    "accelerate": (("--num_processes", "--num-processes"), False),
    "deepspeed": (("--num_gpus", "--num-gpus", "--num_accelerators"), True),
    "srun": (("--ntasks-per-node",), True),
    "mpirun": (("-np", "-n", "--np"), False),
}
_LOCAL_VAR = {
    "srun": "SLURM_LOCALID",
    "mpirun": "OMPI_COMM_WORLD_LOCAL_RANK",
}


def typed(plan: LaunchPlan, argv: Sequence[str], drop: str | None = None) -> str:
    """``argv`` as the user would type it: after the environment words of their command
    (``drop``: a variable the fix sets itself)."""
    prefix = [w for w in plan.prefix if drop is None or not w.startswith(f"{drop}=")]
    if prefix == ["env"]:
        prefix = []
    return shell_join([*prefix, *argv])


def fix_count(plan: LaunchPlan, per_node: int) -> str:
    """The launch command starting ``per_node`` processes per node."""
    opts, is_per_node = _COUNT_OPTS.get(plan.launcher, ((), True))
    value = str(per_node if is_per_node else per_node * max(plan.nnodes, 1))
    if plan.fix_hints.get("spawn"):  # the script starts its workers itself (mp.spawn, Lightning)
        arg, where = plan.fix_hints.get("spawn_arg", "nprocs"), plan.fix_hints["spawn"]
        every = '"auto"' if arg == "devices" else "torch.cuda.device_count()"
        return f"{arg}={value} at {where} (or {arg}={every})"
    if plan.launcher == "accelerate" and plan.fix_hints.get("config_file"):
        return f"num_processes: {value}  (in {plan.fix_hints['config_file']}), or --num_processes {value}"
    new = replace_option(plan.argv, opts, value) if opts else None
    if new is None and opts and _starts_with_launcher(plan):
        new = [
            plan.argv[0],
            f"{opts[0]}={value}" if plan.launcher == "srun" else opts[0],
            *([] if plan.launcher == "srun" else [value]),
            *plan.argv[1:],
        ]
        if plan.launcher in ("torch.distributed.launch",) or plan.argv[0].startswith("python"):
            new = None
    if new is None:
        return f"start {value} process(es) per node"
    if plan.launcher == "mpirun":
        return _mpi_per_node(plan, new, per_node)
    return typed(plan, new)


_MPI_PER_NODE_OPTS = ("-N", "-npernode", "--npernode", "-ppn", "--ppn")
_MPI_HOST_OPTS = ("-H", "-host", "--host", "-hosts", "--hosts")
_MPI_HOSTFILE_OPTS = ("-hostfile", "--hostfile", "-machinefile", "--machinefile", "-f")


def _mpi_per_node(plan: LaunchPlan, argv: list[str], per_node: int) -> str:
    """mpirun's command with ``per_node`` processes on each node: the per-node count, the slots
    of ``-H host:N`` and ``--map-by ppr:N:node`` follow the new ``-np`` (with ``-H a:16,b:16``
    a smaller ``-np`` alone fills the first host), and a hostfile's slots are named."""
    out = list(replace_option(argv, _MPI_PER_NODE_OPTS, str(per_node)) or argv)
    hostfile = None
    for i, word in enumerate(out[:-1]):
        value = out[i + 1]
        if word in _MPI_HOST_OPTS:
            out[i + 1] = ",".join(_slots(tok, per_node) for tok in value.split(","))
        elif word in ("--map-by", "-map-by") and value.startswith("ppr:"):
            out[i + 1] = re.sub(r"^ppr:\d+:", f"ppr:{per_node}:", value)
        elif word in _MPI_HOSTFILE_OPTS:
            hostfile = value
    text = typed(plan, out)
    return f"{text}  (with slots={per_node} for each host in {hostfile})" if hostfile else text


def _slots(token: str, per_node: int) -> str:
    host, colon, slots = token.partition(":")
    return f"{host}:{per_node}" if colon and slots.isdigit() else token


def _starts_with_launcher(plan: LaunchPlan) -> bool:
    """Whether the typed command begins with the launcher whose count option the fix would add
    (not ``srun bash -c 'torchrun …'``, where the option belongs inside the quoted command)."""
    if not plan.argv:
        return False
    first = os.path.basename(plan.argv[0])
    if plan.outer and first == plan.outer:
        return False
    return plan.launcher in (first, "accelerate", "deepspeed") or first.startswith("python")


def fix_for_cvd(plan: LaunchPlan, o: RankOutcome, env: Mapping[str, str]) -> str:
    """Fix for CUDA_VISIBLE_DEVICES narrower than the process count."""
    n_vis = len(o.view.devices)
    count = fix_count(plan, n_vis)
    if plan.launcher == "accelerate":
        return f"gpu_ids: all  (or list {plan.nproc_per_node} ids), or num_processes: {n_vis * max(plan.nnodes, 1)}"
    if plan.launcher == "deepspeed":
        ids = ",".join(str(i) for i in range(plan.nproc_per_node))
        return f"deepspeed --include localhost:{ids} ... (or {count})"
    total = len(o.host.gpus)
    if "SLURM_STEP_GPUS" in plan.node_env.get(o.proc.node, {}):
        return (
            f"{count}  — or let Slurm give the step {plan.nproc_per_node} GPUs per node: "
            f"--gres=gpu:{plan.nproc_per_node} (or --gpus-per-node={plan.nproc_per_node}) "
            "instead of --gpus-per-task"
        )
    if total < plan.nproc_per_node:
        return f"{count}  ({o.host.hostname} has only {total} GPUs)"
    if env.get("SLURM_JOB_GPUS") and env.get("CUDA_VISIBLE_DEVICES") == env["SLURM_JOB_GPUS"]:
        # the batch step sees the GPUs its #SBATCH line asked for
        return f"{count}  — or ask Slurm for {plan.nproc_per_node}: #SBATCH --gres=gpu:{plan.nproc_per_node}"
    return f"{count}  — or expose {plan.nproc_per_node} GPUs: unset CUDA_VISIBLE_DEVICES ({total} GPUs on {o.host.hostname})"


def cvd_line(plan: LaunchPlan) -> str:
    """The script line that gives each process the GPU of its node-local rank."""
    var = _LOCAL_VAR.get(plan.launcher, "LOCAL_RANK")  # the inner launcher's (torchrun: LOCAL_RANK)
    return f'os.environ["CUDA_VISIBLE_DEVICES"] = os.environ["{var}"]  # this node\'s GPU, not the job-wide rank'


def device_line(plan: LaunchPlan, *, modulo: bool = False) -> str:
    """The script line that selects the right GPU per process under this launcher
    (``modulo``: within the GPUs the process sees, for per-process visibility)."""
    if plan.fix_hints.get("spawn") and plan.fix_hints.get("spawn_arg") == "nprocs":
        # mp.spawn's workers get no LOCAL_RANK: their index is the spawned function's first argument
        index = "index % torch.cuda.device_count()" if modulo else "index"
        return f"torch.cuda.set_device({index}) in the worker (index: its first argument, from mp.spawn)"
    var = plan.fix_hints.get("local_var") or _LOCAL_VAR.get(plan.launcher)
    # ``or`` reads the launcher's variable only when LOCAL_RANK is missing: a default argument
    # (``environ.get("LOCAL_RANK", environ[var])``) is evaluated first and raises KeyError
    # under torchrun, which does not set the MPI/Slurm variable.
    if var:
        index = f'int(os.environ.get("LOCAL_RANK") or os.environ["{var}"])'
    elif not plan.sets_local_rank:  # one process started by hand (python train.py): rank 0
        index = 'int(os.environ.get("LOCAL_RANK", 0))'
    else:
        index = 'int(os.environ["LOCAL_RANK"])'

    if modulo:
        index += " % torch.cuda.device_count()"
    return f"torch.cuda.set_device({index})"


def fix_mig(plan: LaunchPlan, o: RankOutcome, env: Mapping[str, str]) -> str:
    """Ranks on MIG slices of one GPU: one slice per physical GPU through the CUDA_VISIBLE_DEVICES
    the launcher splits per worker; where the host has fewer physical GPUs than ranks, fewer
    ranks. Without a node-level CUDA_VISIBLE_DEVICES to rewrite (Slurm binds the slices), the
    NCCL >= 2.30 switch (reference/nccl.md, experimental)."""
    slices = [
        g.mig_devices[0].uuid if g.mig_mode else g.uuid
        for g in o.host.gpus
        if g.mig_devices or not g.mig_mode
    ]
    node_cvd = plan.node_env.get(o.proc.node, {}).get(
        "CUDA_VISIBLE_DEVICES", env.get("CUDA_VISIBLE_DEVICES")
    )
    multi_rank = "  # NCCL >= 2.30 only (experimental); NCCL <= 2.29 needs one rank per GPU"
    if node_cvd is None or not slices:
        return f"NCCL_MULTI_RANK_GPU_ENABLE=1 {typed(plan, plan.argv)}{multi_rank}"
    n = min(len(slices), plan.nproc_per_node)
    launch = (
        typed(plan, plan.argv, drop="CUDA_VISIBLE_DEVICES")
        if n == plan.nproc_per_node
        else (fix_count(plan, n))
    )
    cvd = "CUDA_VISIBLE_DEVICES=" + ",".join(slices[:n])
    note = "" if n == plan.nproc_per_node else f"  # {o.host.hostname} has {n} physical GPU(s)"
    return f"{cvd} {launch}{note}"


def fix_host_identity(host_key: str, hosts: list[str]) -> str:
    """Nodes that NCCL takes for one host (reference/nccl.md (b): NCCL_HOSTID, else hostname +
    boot_id): drop the shared NCCL_HOSTID, or give the second machine its own hostname."""
    if host_key.startswith("NCCL_HOSTID="):
        return "unset NCCL_HOSTID  # before the launch, on every node"
    other = hosts[1] if len(hosts) > 1 else hosts[0]
    return (
        f"sudo hostnamectl set-hostname {other}-2  # on the second machine: NCCL's host is "
        "hostname + boot_id (or pass each machine's own `rankmap doctor --save` profile)"
    )


def fix_no_local_rank_arg(plan: LaunchPlan) -> str | None:
    """The launch without the appended ``--local-rank=N`` (the script then reads LOCAL_RANK from
    the environment): ``torchrun`` for ``torch.distributed.launch`` (same options,
    reference/launchers.md §2), ``deepspeed --no_local_rank`` (§4); None for other launchers."""
    argv = list(plan.argv)
    if plan.launcher == "torch.distributed.launch" and "torch.distributed.launch" in argv:
        at = argv.index("torch.distributed.launch")
        return typed(plan, ["torchrun", *argv[at + 1 :]])
    if plan.launcher == "deepspeed" and argv:
        return typed(plan, [argv[0], "--no_local_rank", *argv[1:]])
    return None
