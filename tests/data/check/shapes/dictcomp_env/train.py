import os

import torch
import torch.distributed as dist

env = {key: os.environ[key] for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
local_rank = int(env["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl")
