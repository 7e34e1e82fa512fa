# Each rank reaches its own GPU only through .to() and device_ids (no set_device).
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.model = model.to(f"cuda:{self.local_rank}")
        self.model = DDP(self.model, device_ids=[self.local_rank])


dist.init_process_group(backend="nccl")
Trainer(torch.nn.Linear(2, 2))
