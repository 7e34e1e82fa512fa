# A device list computed from an argparse --local_rank (one process may drive several GPUs).
import argparse

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
parser.add_argument("--gpus_per_proc", type=int, default=1)
args = parser.parse_args()
n = args.gpus_per_proc
device_ids = list(range(args.local_rank * n, (args.local_rank + 1) * n))
torch.cuda.set_device(device_ids[0])
dist.init_process_group("nccl")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda(), device_ids=device_ids)
