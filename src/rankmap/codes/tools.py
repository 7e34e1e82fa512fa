"""Finding codes owned by `rankmap run` / `bench` / `topo` (sub-range x90-x99 of each category).

Shared causes live in :mod:`rankmap.codes.core`; use those first. One machine split into several
NCCL hosts (NVLink unused between them) is the shared RM803.
"""

from __future__ import annotations

from rankmap.codes.registry import define

# --- launcher_config (RM99x): where the launch put ranks on one machine's topology -----------
define(
    "RM990",
    "launcher_config",
    "warning",
    "GPUs of one job on a node talk across CPU sockets without NVLink",
    cause="The job uses a subset of a node's GPUs (CUDA_VISIBLE_DEVICES, a scheduler's pick) "
    "whose pairs are only connected through the SMP interconnect (`SYS` in `nvidia-smi topo -m`),"
    " while as many GPUs sharing one socket / PCIe root (or NVLink) are available. NCCL then "
    "moves every byte over QPI/UPI/xGMI at a fraction of the intra-socket bandwidth.",
    fix="Pick GPUs under one socket: `CUDA_VISIBLE_DEVICES=<GPUs with the same NUMA affinity>` "
    "(see `rankmap topo`), or ask the scheduler for socket-local GPUs (Slurm `--gpu-bind=closest`).",
    example="`ranks 0,1 on GPU 1 and GPU 2 of ws-01: SYS (NUMA 0 / NUMA 1); GPUs 0,1 share PHB`.",
)
define(
    "RM991",
    "launcher_config",
    "warning",
    "GPU pairs of one job have no NVLink although the machine has NVLink",
    cause="The machine has NVLink between some GPUs, but the GPUs the job's ranks landed on are "
    "connected only over PCIe (pairs picked across NVLink islands, e.g. two NVLink-bridged pairs),"
    " so NCCL falls back to PCIe/SHM for those pairs.",
    fix="Place ranks on NVLink-connected GPUs: choose CUDA_VISIBLE_DEVICES from one NVLink "
    "island (the `NV#` entries of `rankmap topo`).",
    example="`ranks 0 and 1 on GPUs 1 and 2 of ws-02: PHB; GPU 0-1 and 2-3 are NV4 pairs`.",
)
define(
    "RM992",
    "other",
    "warning",
    "NVLink links of a GPU are down",
    cause="NVML reports fewer active NVLink links than the GPU has (a link trained down, a "
    "failing cable/bridge or NVSwitch port, or a fabric-manager problem). Collectives still run "
    "but slower, and all-reduce bandwidth is uneven across GPUs.",
    fix="Check `nvidia-smi nvlink -s` and `nvidia-smi -q | grep -i fabric`; restart "
    "nvidia-fabricmanager on NVSwitch systems, reseat the bridge, or report the node for repair.",
    example="`GPU 3 (0000:5D:00.0): 12 of 18 NVLink links active`.",
)
define(
    "RM993",
    "other",
    "warning",
    "Measured bus bandwidth is below the expected minimum",
    cause="`rankmap bench --min-busbw X` measured an average bus bandwidth below 0.9 x X (the "
    "NCCL_TESTS_MIN_BW rule of nccl-tests): ranks placed across sockets, NVLink down, P2P "
    "disabled, traffic on the wrong network interface, or a busy GPU.",
    fix="Re-run with `NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH` (or `rankmap run`) to see "
    "the transport chosen per channel; compare with `rankmap topo`.",
    example="`avg busbw 41.2 GB/s < 0.9 x 400 GB/s`.",
)
define(
    "RM994",
    "other",
    "error",
    "A collective returned wrong results",
    cause="`rankmap bench` checks every size once with known values (as nccl-tests counts "
    "`#wrong`); wrong elements point at data corruption: faulty GPU memory or NVLink, a P2P / "
    "IOMMU / ACS problem on PCIe, or several ranks writing one buffer.",
    fix="Re-run with `NCCL_P2P_DISABLE=1` to test the P2P path; check `dmesg` for Xid errors, "
    "disable ACS / the IOMMU for P2P (NCCL troubleshooting guide), run `nvidia-smi -q -d ECC`.",
    example="`all_reduce 4M float: 1048576 wrong elements on 8 ranks`.",
)
