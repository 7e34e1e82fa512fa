import argparse

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=0)
args = parser.parse_args()
dist.init_process_group(backend="nccl")
torch.cuda.set_device(args.gpu)
model = torch.nn.Linear(2, 2).cuda()
