"""What the reader scans for, and the NCCL release behind a duplicate-GPU WARN's init.cc line.

:data:`ANCHORS` are literals at least one of which every recognised line contains; the reader
scans for them so that only candidate lines are decoded (inputs too big to be read whole are
searched for these and every catalogue key, see :mod:`rankmap.explain.prefilter`).
:data:`JOIN_ANCHORS` mark messages long enough for a terminal to wrap (their hits bring the
neighbouring lines along).
"""

from __future__ import annotations

CORE_ANCHORS: tuple[bytes, ...] = (b"NCCL WARN", b"- Init ", b"rror")  # the most frequent hits
ANCHORS: tuple[bytes, ...] = (
    *CORE_ANCHORS,
    b"WARN",
    b"Init START",
    b"Init COMPLETE",
    b"NCCL version",
    b"Duplicate GPU",
    b"Multiple Ranks",
    b"ordin",
    b"VISIBLE GPUS",
    b"LOCAL_RANK:",
    b"GLOBAL_RANK: ",
    b"worker_count=",
    b"num_workers_joined=",
    b"global_ranks=",
    b"group_rank=",
    b"restart_count=",
    b"INVALID_DEVICE",
    b"ASSERT",
    b"using GPU",
    b"using best-guess GPU",
    b"Guessing device",
    b"Root Cause",
    b"Failures:",
    b"exitcode",
    b"local_rank:",
    b"host   ",
    b" Pid ",
    b"Using devices",
    b"out of memory",
    b"memory in use",
    b"No slot",
    b"Mismatched",
    b"requested gpu",
    b"machine only has",
    b"GPU ids",
    b"does not match the world size",
    b"unrecognized arguments",
    b"NCCL_HOSTID",
    b"NCCL_SOCKET_IFNAME",
    b"socket",
    b"Bootstrap",
    b"NET/Socket : Using",
    b"; OOB ",
    b"failed",
    b"Last error",
    b"CUDA_VISIBLE_DEVICES",
    b"GPUS_ON_NODE=",
    b"JOB_GPUS=",
    b"Device: cuda",
    b"Num processes",
    b"Distributed environment",
    b"MIG",
    b"timed out",
    b"Failed",
    b"AF_INET",
    b"interface",
    b"NCCL error in",
    # context pasted with the log: an nvidia-smi table row, the launch command line
    b"00000000:",
    b"torchrun ",
    b"torch.distributed.launch ",
    b"torch.distributed.run ",
    b"accelerate launch",
    b"deepspeed ",
    b"srun ",
    b"mpirun ",
    b"mpiexec ",
)
# Messages long enough for a terminal to wrap: their hits bring the neighbouring lines along and
# :func:`recognise` rejoins the halves (only when neither half is recognised on its own).
JOIN_ANCHORS: frozenset[bytes] = frozenset(
    (b"Duplicate GPU", b"Multiple Ranks", b"- Init ", b"Init START", b"Init COMPLETE")
    + (b"Mismatched", b"ordin", b"NCCL error in")
)

# init.cc line of the duplicate-GPU WARN -> NCCL release (reference/nccl.md (a)).
DUPLICATE_LINE_VERSION: dict[int, str] = {
    461: "2.5.6",
    469: "2.5.7 or 2.12.10/2.12.12",
    598: "2.6.4",
    578: "2.7.3-2.7.6",
    573: "2.7.8",
    584: "2.8.x",
    492: "2.9.6/2.9.8",
    497: "2.9.9",
    521: "2.10.3",
    545: "2.11.4",
    466: "2.12.7",
    511: "2.13.4",
    525: "2.14.3-2.15.5",
    642: "2.16.x",
    639: "2.17.1",
    748: "2.18.1",
    795: "2.18.3-2.18.6",
    824: "2.19.1/2.19.3",
    818: "2.19.4",
    869: "2.20.3",
    871: "2.20.5",
    943: "2.21.5",
    738: "2.22.3",
    783: "2.23.4",
    777: "2.24.3",
    720: "2.25.1",
    722: "2.26.2/2.26.3",
    732: "2.26.5/2.26.6",
    737: "2.27.x",
    808: "2.28.3",
    904: "2.28.7/2.28.9",
    946: "2.29.2/2.29.3",
    974: "2.29.7",
}
