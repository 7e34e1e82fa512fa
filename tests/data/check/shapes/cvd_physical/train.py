# The CUDA_VISIBLE_DEVICES entry (a physical id) is used as the CUDA ordinal.
import os

import torch
import torch.distributed as dist

visible = None
if "CUDA_VISIBLE_DEVICES" in os.environ:
    visible = [int(i) for i in os.environ["CUDA_VISIBLE_DEVICES"].split(",")]
local_rank = int(os.environ["LOCAL_RANK"])
if visible is None:
    gpu = local_rank
else:
    gpu = visible[local_rank]
torch.cuda.set_device(gpu)
dist.init_process_group("nccl")
