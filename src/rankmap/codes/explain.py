"""Finding codes owned by `rankmap explain` (sub-range x40-x59 of each category).

Shared causes live in :mod:`rankmap.codes.core`; use those first.
"""

from __future__ import annotations

from rankmap.codes.registry import define  # noqa: F401

define(
    "RM040",
    "other",
    "error",
    "NCCL or CUDA failed for a reason that is not a GPU-mapping error",
    cause="The log shows an NCCL/CUDA failure (`Cuda failure 'out of memory'`, "
    "`unhandled system error`, a remote peer exiting) that rankmap cannot tie to which rank "
    "uses which GPU.",
    fix="Read the quoted lines; re-run with `NCCL_DEBUG=INFO` (and "
    "`NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,ENV,NET`) for the first failing rank's details.",
    example="`init.cc:1212 NCCL WARN Cuda failure 'initialization error'`.",
)
define(
    "RM046",
    "other",
    "error",
    "One program asks for a GPU index beyond the GPUs it sees",
    cause="A single process (no launcher, no ranks in the input) selected a device index at or "
    "above the number of GPUs it sees: a hard-coded `cuda:1` or `--gpu 1` written for another "
    "machine, a 1-based index, or a checkpoint saved on another GPU and loaded without "
    "`map_location`. More processes than GPUs (RM102) needs several processes.",
    fix="Select a device the process sees: an index below its device count (PyTorch "
    "`torch.cuda.device_count()`, cuda:0 on a one-GPU machine; `nvidia-smi -L` or `rocm-smi` "
    "inside the container or under the visible-devices list the process runs with; Lua's "
    "cutorch numbers from 1), set the program's GPU option accordingly, or load checkpoints "
    "with `map_location`.",
    example="`python train.py` on a laptop with one GPU: `CUDA error: invalid device ordinal`.",
)
define(
    "RM053",
    "version_mismatch",
    "error",
    "NCCL (or another CUDA library) has no code for this GPU's architecture",
    cause="The library was compiled for other compute capabilities than the GPU's (an NCCL built "
    "with `NVCC_GENCODE` for sm_80 only, run on an H100; a PyTorch wheel older than the GPU): its "
    "kernels are not found when the first collective is launched, and CUDA reports `named symbol "
    "not found`, `no kernel image is available` or `invalid device function`.",
    fix="Use a build that includes the GPU's architecture: rebuild NCCL with its sm_XX in "
    "`NVCC_GENCODE`, or install a PyTorch/NCCL release that supports the GPU "
    "(`torch.cuda.get_arch_list()` against `nvidia-smi --query-gpu=compute_cap --format=csv`).",
    example="`enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'` on H100s with an NCCL "
    "built for sm_80.",
)
define(
    "RM041",
    "other",
    "error",
    "NCCL ranks could not connect to each other",
    cause="Socket connections between ranks (bootstrap or the socket transport) failed or timed "
    "out: a firewall, a wrong interface (`NCCL_SOCKET_IFNAME`), an unreachable address, or a "
    "peer that died first. When the log shows a rank that stopped on an exception of its own "
    "(not a communication error), the finding names it and is a warning: the peers' socket "
    "errors follow from it.",
    fix="Check every node reaches the others on the interface NCCL chose "
    "(`NCCL_DEBUG=INFO` shows `Bootstrap : Using <if>:<ip>`); pin it with "
    "`NCCL_SOCKET_IFNAME`; look for the rank that exited first.",
    example="`socketStartConnect: Connect to 10.0.0.2<43417> failed : Connection refused`.",
)
define(
    "RM042",
    "other",
    "info",
    "NCCL communicators and ranks rebuilt from the log",
    cause="The log holds NCCL `Init START`/`Init COMPLETE` (or nccl-tests `Using devices`) lines, "
    "which state each rank's host, CUDA index, nvidia-smi index and bus id.",
    fix="Nothing to fix; the rank map is in the report.",
    example="`16 ranks on 2 hosts (node-01, node-02), 1 communicator, no GPU shared`.",
)
define(
    "RM240",
    "visible_devices_mismatch",
    "error",
    "A physical GPU index is used after CUDA_VISIBLE_DEVICES renumbered the GPUs",
    cause="CUDA_VISIBLE_DEVICES=6,7 shows the process cuda:0 and cuda:1 only; a script or "
    "framework that still selects cuda:6 (the nvidia-smi index) asks for a device that does not "
    "exist in the process: `invalid device ordinal`.",
    fix="Index devices 0..N-1 after narrowing (cuda:LOCAL_RANK), or pass the GPU list to the "
    "framework and let it set CUDA_VISIBLE_DEVICES, not both.",
    example="`VISIBLE GPUS: 6,7` followed by `invalid device ordinal` (Lightning DDP on GPUs 6,7).",
)
define(
    "RM241",
    "other",
    "info",
    "The devices the input names are the listed GPUs, numbered from 0 inside the process",
    cause="A visible-devices list of GPUs that are not the first ones (CUDA_VISIBLE_DEVICES=5,6, "
    "accelerate's gpu_ids: 3,4,5,7) renumbers them: inside the process they are cuda:0, cuda:1, "
    "… (TensorFlow's GPU:0, GPU:1). The input names those indices, prints no failure, and asks "
    "why the list is not applied: it is.",
    fix="Nothing to fix; `nvidia-smi` during the run shows the listed GPUs busy. Select devices "
    "0..N-1 inside the process (cuda:LOCAL_RANK), never the physical ids.",
    example='`export CUDA_VISIBLE_DEVICES=5,6` and "it only uses GPU:0 and GPU:1".',
)
define(
    "RM640",
    "mig",
    "error",
    "PyTorch counts physical GPUs but CUDA sees only MIG instances",
    cause="On a MIG-enabled GPU without a `MIG-` UUID in CUDA_VISIBLE_DEVICES, PyTorch's NVML "
    "device count and CUDA's disagree, ending in `device >= 0 && device < num_gpus INTERNAL "
    "ASSERT FAILED`, or a second device index that does not exist.",
    fix="Give each process exactly one MIG instance: "
    "`CUDA_VISIBLE_DEVICES=MIG-<uuid>` (from `nvidia-smi -L`), one process per instance.",
    example="`RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "
    '"../aten/src/ATen/cuda/CUDAContext.cpp":50`.',
)
define(
    "RM940",
    "launcher_config",
    "error",
    "DeepSpeed was asked for a GPU slot the host does not have",
    cause="`--include host:SLOTS` / `--exclude` names a slot missing from the hostfile or the "
    "local GPU count (`No slot 'N' specified on host 'H'`).",
    fix="List only existing slots (`--include localhost:0,1`), or fix `slots=` in the hostfile.",
    example="`ValueError: No slot '4' specified on host 'localhost'`.",
)
define(
    "RM941",
    "launcher_config",
    "error",
    "The framework's device/process settings contradict the launch",
    cause="Lightning's `devices`*`num_nodes` differs from the world size the launcher made, or "
    "accelerate got fewer than two `gpu_ids` for a multi-GPU run. `explain` reads the "
    "framework's own message; `check` predicts it for a script whose Lightning `devices=` and "
    "`num_nodes=` are numbers, under torchrun.",
    fix="Make the framework's `devices`/`num_nodes` (or accelerate `num_processes`/`gpu_ids`) "
    "match the launcher's process count.",
    example="`You set devices=4 and num_nodes=1 in Lightning, but the product (4 * 1) does not "
    "match the world size (8).`",
)
