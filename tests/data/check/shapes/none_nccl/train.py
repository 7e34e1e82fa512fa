import torch
import torch.distributed as dist

dist.init_process_group(backend="nccl", init_method="env://")
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).cuda())
