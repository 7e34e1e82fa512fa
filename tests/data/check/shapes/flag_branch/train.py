# Spawned workers get their GPU; the direct call (no --spawn flag) passes --gpu, default None.
import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=None)
parser.add_argument("--spawn", action="store_true")
parser.add_argument("--backend", default="nccl")


def worker(gpu, args):
    args.gpu = gpu
    if args.gpu is not None:
        torch.cuda.set_device(args.gpu)
    dist.init_process_group(backend=args.backend, init_method="env://")
    model = torch.nn.Linear(2, 2).cuda()
    if args.gpu is not None:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])


def main():
    args = parser.parse_args()
    if args.spawn:
        mp.spawn(worker, nprocs=torch.cuda.device_count(), args=(args,))
    else:
        worker(args.gpu, args)


if __name__ == "__main__":
    main()
