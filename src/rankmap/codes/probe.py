"""Finding codes owned by `rankmap probe` (sub-range x60-x79 of each category).

Shared causes live in :mod:`rankmap.codes.core`; use those first.
"""

from __future__ import annotations

from rankmap.codes.registry import define

define(
    "RM060",
    "other",
    "error",
    "Ranks never reported to the probe",
    cause="A rank crashed or exited before the probe, was never started (wrong --nnodes / "
    "--nproc-per-node on one node), or cannot reach the job's store; the job would hang in "
    "`init_process_group` or fail at its first collective.",
    fix="Look at the missing ranks' own output (torchrun prints it per rank); check every node "
    "started with the same world size and can reach MASTER_ADDR:MASTER_PORT.",
    example="`ranks 3 never reported within 10 s (expected on node ws-01, local rank 3)`.",
)
define(
    "RM061",
    "other",
    "warning",
    "The probe could not finish; the job was not checked",
    cause="The store was unreachable, or rankmap hit an internal problem. `rankmap.verify()` "
    "warns and lets the job continue (unless `strict=True`); `rankmap probe` exits 3.",
    fix="Read the reason; set RANKMAP_STORE_PORT / RANKMAP_STORE_FILE when MASTER_PORT cannot "
    "be shared, or report the internal error.",
    example="`store 10.0.0.1:29500 unreachable: connection refused`.",
)
define(
    "RM062",
    "other",
    "warning",
    "CUDA and NVML disagree about a rank's device",
    cause="NVML plus CUDA_VISIBLE_DEVICES predict another physical GPU than CUDA reports for the "
    "same index: integer CUDA_VISIBLE_DEVICES under CUDA_DEVICE_ORDER=FASTEST_FIRST on a mixed "
    "machine, or a container whose NVML view differs from CUDA's.",
    fix="`export CUDA_DEVICE_ORDER=PCI_BUS_ID`, or list GPUs by UUID in CUDA_VISIBLE_DEVICES.",
    example="`cuda:0: CUDA reports pci_bus_id 0000:02:00.0 but NVML ... predicts 0000:01:00.0`.",
)
define(
    "RM063",
    "other",
    "warning",
    "A rank sent a probe record that cannot be read",
    cause="The record in the store is not what this rankmap writes: another rankmap version on "
    "that node, a store shared with other software or corrupted, or a misbehaving process. The "
    "rank counts as reported (it is not missing), but its GPU is not checked.",
    fix="Run the same rankmap version on every node (`rankmap --version`), and give the probe a "
    "store of its own (RANKMAP_STORE_PORT / RANKMAP_STORE_FILE) if others write to it.",
    example="`rank 3 sent a probe record rankmap cannot read` (`rank 3: not UTF-8`).",
)
define(
    "RM260",
    "visible_devices_mismatch",
    "warning",
    "Ranks on one node see different GPU sets",
    cause="CUDA_VISIBLE_DEVICES (or NVIDIA_VISIBLE_DEVICES) differs between processes of one "
    "node: a wrapper script sets it per rank, or ranks of two jobs/containers were merged.",
    fix="Give every process of a node the same CUDA_VISIBLE_DEVICES and select with LOCAL_RANK, "
    "or make the per-rank lists disjoint on purpose (one GPU each).",
    example="`ws-01: ranks 0,1 see GPUs 0-3, rank 2 sees GPUs 2,3`.",
)
define(
    "RM960",
    "launcher_config",
    "error",
    "Two ranks on one node claim the same local rank",
    cause="The local-rank variable is wrong for this launcher (e.g. OMPI_* under MPICH defaults to "
    "0), two launches were merged into one job, or a wrapper overrides LOCAL_RANK.",
    fix="Let the launcher set LOCAL_RANK, or map the right variable (SLURM_LOCALID, "
    "OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID).",
    example="`ws-01: ranks 0 and 1 both have LOCAL_RANK=0`.",
)
define(
    "RM961",
    "launcher_config",
    "warning",
    "LOCAL_WORLD_SIZE disagrees with the ranks seen on the node",
    cause="The launcher's per-node process count differs from the ranks that really run on the "
    "machine: hosts merged by identity, nodes started with different --nproc-per-node, or ranks "
    "missing.",
    fix="Start every node with the same --nproc-per-node and give every machine a unique host "
    "identity.",
    example="`ws-01: LOCAL_WORLD_SIZE=4 but 8 ranks run on this machine`.",
)
