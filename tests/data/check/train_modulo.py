import os

import torch
import torch.distributed as dist

local_rank = int(os.environ["LOCAL_RANK"])
device = torch.device(f"cuda:{local_rank % torch.cuda.device_count()}")
torch.cuda.set_device(device)
dist.init_process_group("nccl")
