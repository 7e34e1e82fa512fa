import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--local-rank", "--local_rank", type=int, default=0)
args = parser.parse_args()
torch.cuda.set_device(args.local_rank)
