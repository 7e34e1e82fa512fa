import argparse
import os

import torch
import torch.distributed as dist


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--lr", type=float, default=0.1)
    args = p.parse_args()
    args.local_rank = int(os.environ["LOCAL_RANK"])
    return args


def setup(args):
    torch.cuda.set_device(args.local_rank)
    dist.init_process_group("nccl")
