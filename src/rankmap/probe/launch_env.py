"""Which launcher started this process and which rank it is, from the environment alone (pure).

Variables per launcher, in precedence order, are :mod:`rankmap.launch_vars`'s tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rankmap.launch_vars import (
    GLOBAL_RANK_VARS,
    LOCAL_RANK_VARS,
    LOCAL_SIZE_VARS,
    NODE_RANK_VARS,
    WORLD_SIZE_VARS,
)


@dataclass(frozen=True)
class RankEnv:
    """The rank facts a launcher put in one process's environment (``None``: not set)."""

    launcher: (
        str  # torchrun | accelerate | deepspeed | slurm | openmpi | mpich | mvapich2 | env | none
    )
    rank: int
    world_size: int
    local_rank: int | None
    local_world_size: int | None
    node_rank: int | None
    run_id: str
    restart_count: int
    problems: tuple[str, ...] = ()


def detect_launcher(env: Mapping[str, str]) -> str:
    """Name of the launcher whose variables are present (most specific first)."""
    torchrun = any(
        k in env for k in ("TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "GROUP_RANK")
    )
    if torchrun and any(k.startswith("ACCELERATE_") for k in env):
        return "accelerate"
    if torchrun:
        return "torchrun"
    if "RANK" in env and ("CROSS_RANK" in env or "LOCAL_SIZE" in env):
        return "deepspeed"
    if "SLURM_PROCID" in env:
        return "slurm"
    if "OMPI_COMM_WORLD_RANK" in env:
        return "openmpi"
    if "MV2_COMM_WORLD_RANK" in env:
        return "mvapich2"
    if "PMI_RANK" in env:
        return "mpich"
    if "RANK" in env:
        return "env"
    return "none"


def first_int(
    env: Mapping[str, str], names: Sequence[str], problems: list[str]
) -> tuple[int | None, str | None]:
    for name in names:
        raw = env.get(name)
        if raw is None or raw.strip() == "":
            continue
        text = raw.strip()
        # SLURM_TASKS_PER_NODE-like "4(x2)": the leading number is this node's count.
        head = text.split("(", 1)[0].split(",", 1)[0]
        try:
            return int(head), name
        except ValueError:
            problems.append(f"{name}={raw!r} is not an integer; ignored")
    return None, None


def _run_id(env: Mapping[str, str]) -> str:
    run = env.get("TORCHELASTIC_RUN_ID")
    if run and run != "none":
        return run
    if env.get("SLURM_JOB_ID"):
        return f"slurm{env['SLURM_JOB_ID']}.{env.get('SLURM_STEP_ID', '0')}"
    for name in ("OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "PMI_JOBID"):
        if env.get(name):
            return f"{name.lower()}-{env[name]}"
    return "job"


def parse_rank_env(env: Mapping[str, str]) -> RankEnv:
    """Rank, sizes, node rank and launcher of this process; never raises."""
    problems: list[str] = []
    rank, _ = first_int(env, GLOBAL_RANK_VARS, problems)
    world, _ = first_int(env, WORLD_SIZE_VARS, problems)
    local_rank, _ = first_int(env, LOCAL_RANK_VARS, problems)
    local_world, _ = first_int(env, LOCAL_SIZE_VARS, problems)
    node_rank, _ = first_int(env, NODE_RANK_VARS, problems)
    restart, _ = first_int(env, ("TORCHELASTIC_RESTART_COUNT",), problems)
    return RankEnv(
        launcher=detect_launcher(env),
        rank=rank if rank is not None else 0,
        world_size=world if world is not None and world > 0 else 1,
        local_rank=local_rank,
        local_world_size=local_world,
        node_rank=node_rank,
        run_id=_run_id(env),
        restart_count=restart or 0,
        problems=tuple(problems),
    )
