import torch
def main(:
    torch.cuda.set_device(0)
