import os

import torch


def initialize_distributed(args):
    device_count = torch.cuda.device_count()
    args.rank = int(os.getenv("RANK", "0"))
    if device_count > 0:
        device = args.rank % device_count
        torch.cuda.set_device(device)
    torch.distributed.init_process_group(backend="nccl", rank=args.rank)


class Args:
    pass


initialize_distributed(Args())
