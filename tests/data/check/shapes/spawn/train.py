import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def main_worker(gpu, ngpus_per_node, args):
    torch.cuda.set_device(gpu)
    dist.init_process_group("nccl", rank=gpu, world_size=ngpus_per_node)


def main():
    ngpus_per_node = torch.cuda.device_count()
    mp.spawn(main_worker, nprocs=ngpus_per_node, args=(ngpus_per_node, None))


if __name__ == "__main__":
    main()
