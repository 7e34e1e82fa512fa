import torch
from mmengine.dist import init_dist

init_dist("pytorch", backend="nccl")
model = torch.nn.Linear(2, 2).cuda()
