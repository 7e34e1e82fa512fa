"""Finding codes owned by `rankmap doctor` (sub-range x80-x89 of each category).

Shared causes live in :mod:`rankmap.codes.core`; use those first.
"""

from __future__ import annotations

from rankmap.codes.registry import define

define(
    "RM880",
    "host_identity",
    "info",
    "NCCL_HOSTID replaces this machine's host identity",
    cause="With NCCL_HOSTID set NCCL hashes only its value (not hostname + boot_id) to decide "
    "which ranks share a machine (reference/nccl.md (b)); machines with the same value are "
    "treated as one host.",
    fix="Leave NCCL_HOSTID unset unless containers of one machine must be grouped; never give "
    "two machines the same value.",
    example="`NCCL_HOSTID='cluster' replaces this machine's host identity`.",
)
define(
    "RM980",
    "launcher_config",
    "info",
    "Launcher variables are exported in the shell",
    cause="RANK / LOCAL_RANK / WORLD_SIZE are set although no launcher started the process "
    "(left over from a copied sbatch script or an `export` in a profile); every process started "
    "from this shell inherits them, and scripts that read them without a launcher get stale ranks.",
    fix="`unset RANK LOCAL_RANK WORLD_SIZE` and let the launcher (torchrun, srun, mpirun) set them.",
    example="`Launcher variables are set in this shell: RANK, WORLD_SIZE`.",
)
