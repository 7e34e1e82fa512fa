# DeiT/DETR-like: the device is chosen in util/misc.py of the same repository.
import argparse

import torch

import util.misc as utils


def get_args_parser():
    parser = argparse.ArgumentParser("train", add_help=False)
    parser.add_argument("--dist_url", default="env://")
    parser.add_argument("--world_size", default=1, type=int)
    return parser


def main(args):
    utils.init_distributed_mode(args)
    model = torch.nn.Linear(2, 2).to(torch.device("cuda"))
    if args.distributed:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])


if __name__ == "__main__":
    parser = argparse.ArgumentParser("train", parents=[get_args_parser()])
    args = parser.parse_args()
    main(args)
