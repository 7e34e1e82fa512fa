"""srun's and sbatch's options (``SPEC``) and the ``#SBATCH`` lines of a script: read by the
srun simulation, by shell scripts and by explain's paste reader (reference/launchers.md §5).
"""

from __future__ import annotations

from collections.abc import Mapping

from rankmap.launchers.options import OptSpec, parse_options
from rankmap.numbers import is_digits

_VALUE = {
    "nodes": True,
    "ntasks": True,
    "ntasks_per_node": True,
    "gpus_per_task": True,
    "gres": True,
    "gpus_per_node": True,
    "gpus": True,
    "gpu_bind": True,
    "tres_bind": True,
    "cpus_per_task": True,
    "mpi": True,
    "partition": True,
    "time": True,
    "job_name": True,
    "account": True,
    "export": True,
    "output": True,
    "error": True,
    "mem": True,
    "nodelist": True,
    "cpu_bind": True,
    "container_image": True,
    "container_mounts": True,
    "qos": True,
    "constraint": True,
    "exclusive": False,
    "label": False,
    "unbuffered": False,
    "overlap": False,
    # flags (srun man page; an optional value is written --opt=value): without them listed,
    # `srun --exact torchrun ...` read torchrun as --exact's value (review 45)
    "exact": False,
    "kill_on_bad_exit": False,
    "no_kill": False,
    "preserve_env": False,
    "disable_status": False,
    "no_allocate": False,
    "overcommit": False,
    "oversubscribe": False,
    "quiet": False,
    "verbose": False,
    "pty": False,
    "multi_prog": False,
    "spread_job": False,
    "use_min_nodes": False,
    "whole": False,
    "contiguous": False,
    "test_only": False,
    "hold": False,
}
SPEC = OptSpec(
    "srun",
    _VALUE,
    {
        "-N": "nodes",
        "-n": "ntasks",
        "-G": "gpus",
        "-c": "cpus_per_task",
        "-p": "partition",
        "-t": "time",
        "-J": "job_name",
        "-A": "account",
        "-o": "output",
        "-e": "error",
        "-w": "nodelist",
        "-l": "label",
        "-u": "unbuffered",
        "-C": "constraint",
        "-q": "qos",
        "-K": "kill_on_bad_exit",
        "-k": "no_kill",
        "-E": "preserve_env",
        "-X": "disable_status",
        "-Z": "no_allocate",
        "-O": "overcommit",
        "-s": "oversubscribe",
        "-Q": "quiet",
        "-v": "verbose",
        "-H": "hold",
    },
    strict=False,
    guess_values=True,
)


def parse_sbatch_lines(text: str) -> dict[str, str]:
    """``#SBATCH --opt=value`` / ``#SBATCH -N 2`` lines -> {long option name: value}."""
    argv: list[str] = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#SBATCH"):
            argv += s[len("#SBATCH") :].split("#", 1)[0].split()
    p = parse_options([*argv, "prog"], SPEC)
    return {k: (v if isinstance(v, str) else "1") for k, v in p.values.items()}


def batch_env(sbatch: Mapping[str, str], nodes: int | None = None) -> dict[str, str]:
    """The job variables a batch script sees, from its ``#SBATCH`` / ``sbatch`` options (sbatch
    man page, OUTPUT ENVIRONMENT VARIABLES: SLURM_JOB_NUM_NODES and SLURM_NNODES, SLURM_NTASKS,
    SLURM_NTASKS_PER_NODE when --ntasks-per-node is given, SLURM_CPUS_PER_TASK when -c is,
    SLURM_GPUS_PER_NODE when --gpus-per-node is; SLURM_GPUS_ON_NODE, reference/launchers.md §5),
    so that ``torchrun --nnodes $SLURM_NNODES`` in the script reads the allocation."""
    env: dict[str, str] = {}
    n = _leading_int(sbatch.get("nodes")) or nodes
    if n:
        env["SLURM_NNODES"] = env["SLURM_JOB_NUM_NODES"] = str(n)
    per_node = _leading_int(sbatch.get("ntasks_per_node"))
    if per_node:
        env["SLURM_NTASKS_PER_NODE"] = str(per_node)
    tasks = _leading_int(sbatch.get("ntasks")) or (n * per_node if n and per_node else None)
    if tasks:
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(tasks)
    cpus = _leading_int(sbatch.get("cpus_per_task"))
    if cpus:
        env["SLURM_CPUS_PER_TASK"] = str(cpus)
    gpus = _leading_int(gres_gpu_text(sbatch.get("gpus_per_node"))) or _leading_int(
        gres_gpu_text(sbatch.get("gres"))
    )
    if gpus:
        env["SLURM_GPUS_ON_NODE"] = str(gpus)
        # the batch step is a step: the gres plugin sets its CUDA_VISIBLE_DEVICES to the GPUs
        # it was given (reference/launchers.md §5, "CVD from gres"); which ones is not known
        # here, so the node's first ones, as srun's steps assume
        env["CUDA_VISIBLE_DEVICES"] = env["SLURM_JOB_GPUS"] = ",".join(
            str(i) for i in range(min(gpus, 64))
        )
        if sbatch.get("gpus_per_node"):
            env["SLURM_GPUS_PER_NODE"] = str(gpus)
    if sbatch:
        # the batch script itself runs once, as task 0 on the allocation's first node: the
        # ids it expands (`srun torchrun --node_rank=$SLURM_NODEID`) are 0 on every node
        # (an `env` dump in a batch script: SLURM_NODEID=0, SLURM_PROCID=0, SLURM_LOCALID=0;
        # nesi/hpc-intro#106: "the slurm script itself is running as process 0 of the job")
        env.update(SLURM_NODEID="0", SLURM_PROCID="0", SLURM_LOCALID="0")
    return env


def _leading_int(value: str | None) -> int | None:
    """``2`` / ``2-4`` (a node range: its minimum) -> 2."""
    digits = ""
    for ch in (value or "").strip():
        if not ch.isdecimal():
            break
        digits += ch
    return int(digits) if digits and len(digits) <= 6 and int(digits) > 0 else None


def gres_gpu_text(value: str | None) -> str | None:
    """The GPU count of ``gpu:4`` / ``gpu:a100:4`` / ``a100:4`` / ``4`` as written ("4"), "1"
    for a bare ``gpu`` request; None when the value names no GPU count."""
    for part in (value or "").split(","):
        bits = part.split(":")
        if bits[0] in ("gpu", "gres/gpu") or len(bits) <= 2:
            last = bits[-1].split("(")[0]
            if is_digits(last):
                return last
            if bits[0] in ("gpu", "gres/gpu"):
                return "1"
    return None
