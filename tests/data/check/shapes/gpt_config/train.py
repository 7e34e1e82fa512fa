# nanoGPT-like: a config default `device` is overwritten under DDP.
import os

import torch
from torch.distributed import init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP

batch_size = 12
device = "cuda"  # config default, may be overridden on the command line
backend = "nccl"
ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    init_process_group(backend=backend)
    ddp_rank = int(os.environ["RANK"])
    ddp_local_rank = int(os.environ["LOCAL_RANK"])
    device = f"cuda:{ddp_local_rank}"
    torch.cuda.set_device(device)
    master_process = ddp_rank == 0
else:
    master_process = True
model = torch.nn.Linear(4, 4)
model.to(device)
if ddp:
    model = DDP(model, device_ids=[ddp_local_rank])
