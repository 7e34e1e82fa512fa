"""The environment variables launchers and schedulers set for each process: one table for every
command (reference/launchers.md §9 "who set what"; torchrun §1, DeepSpeed §4, Slurm §5, MPI §6).

Each tuple is in precedence order: ``RANK``/``LOCAL_RANK``/``WORLD_SIZE`` come first because
scripts (and DeepSpeed's Open MPI runner) map the launchers' own variables onto them.
``probe`` reads a process's rank from them, ``check``'s script analysis knows them as taint
sources and ``explain`` recognises a ``KeyError`` on one of them.
"""

from __future__ import annotations

GLOBAL_RANK_VARS = (
    "RANK",
    "SLURM_PROCID",
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "MV2_COMM_WORLD_RANK",
    "PALS_RANKID",
)
LOCAL_RANK_VARS = (
    "LOCAL_RANK",
    "SLURM_LOCALID",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
    "MV2_COMM_WORLD_LOCAL_RANK",
    "PMI_LOCAL_RANK",
    "PALS_LOCAL_RANKID",
    "JSM_NAMESPACE_LOCAL_RANK",
)
# A variable that holds each process's own rank, local or global.
RANK_VARS = frozenset((*LOCAL_RANK_VARS, *GLOBAL_RANK_VARS))
WORLD_SIZE_VARS = (
    "WORLD_SIZE",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "MV2_COMM_WORLD_SIZE",
)
# One node's process count.
LOCAL_SIZE_VARS = (
    "LOCAL_WORLD_SIZE",
    "LOCAL_SIZE",  # DeepSpeed
    "SLURM_NTASKS_PER_NODE",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "MPI_LOCALNRANKS",
    "MV2_COMM_WORLD_LOCAL_SIZE",
)
NODE_RANK_VARS = (
    "GROUP_RANK",
    "NODE_RANK",
    "CROSS_RANK",
    "SLURM_NODEID",
    "OMPI_COMM_WORLD_NODE_RANK",
)
RENDEZVOUS_VARS = ("MASTER_ADDR", "MASTER_PORT")
# Families whose every member is set by its launcher or scheduler (a script may read any).
LAUNCHER_VAR_PREFIXES = ("SLURM_", "OMPI_COMM_WORLD_", "PMI_", "PMIX_", "MV2_", "PALS_")


def launcher_var_pattern() -> str:
    """A regex group matching any variable above, or any member of a launcher's family."""
    names = sorted(
        {
            *GLOBAL_RANK_VARS,
            *LOCAL_RANK_VARS,
            *WORLD_SIZE_VARS,
            *LOCAL_SIZE_VARS,
            *NODE_RANK_VARS,
            *RENDEZVOUS_VARS,
        },
        key=lambda name: (-len(name), name),
    )
    # a family member may be pasted broken after its underscore ("SLURM_ JOB_NODELIST")
    families = [f"{prefix} ?[A-Z_]+" for prefix in LAUNCHER_VAR_PREFIXES]
    return "(?:" + "|".join(families + names) + ")"
