import torch
import torch.distributed as dist
from mylib.launch import pick_device  # an installed package, not in this directory

dist.init_process_group("nccl")
torch.cuda.set_device(pick_device())
