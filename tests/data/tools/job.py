"""A tiny "training job" for rankmap run tests: prints, optionally plants NCCL lines, exits.

usage: job.py EXIT_CODE [--dup] [--lines N] [--marker PATH]
"""

import os
import socket
import sys

args = sys.argv[1:]
code = int(args[0]) if args else 0
if "--marker" in args:
    with open(args[args.index("--marker") + 1], "w") as f:
        f.write("ran\n")
lines = int(args[args.index("--lines") + 1]) if "--lines" in args else 3
for i in range(lines):
    print(f"out {i}", flush=True)
    print(f"err {i}", file=sys.stderr, flush=True)
if "--dup" in args:
    host, pid = socket.gethostname().split(".")[0], os.getpid()
    debug_file = os.environ.get("NCCL_DEBUG_FILE", "")
    nccl = (
        f"{host}:{pid}:{pid} [0] NCCL INFO comm 0x55a1 rank 1 nranks 2 cudaDev 0 nvmlDev 0 "
        f"busId 4f000 commId 0x9ad9b5e4ab2566da - Init START\n"
        f"{host}:{pid}:{pid} [0] init.cc:904 NCCL WARN Duplicate GPU detected : rank 1 and "
        f"rank 0 both on CUDA device 4f000\n"
    )
    if debug_file:
        path = debug_file.replace("%h", host).replace("%p", str(pid))
        with open(path, "w") as f:
            f.write(nccl)
    sys.stderr.write(nccl)
    print(
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid "
        "usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5\n"
        "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
        "Last error:\nDuplicate GPU detected : rank 1 and rank 0 both on CUDA device 4f000",
        file=sys.stderr,
    )
sys.exit(code)
