# The device comes back from a helper of the repository: `from utils.distributed import ...`.
import torch

from utils.distributed import setup_distributed

local_rank, rank, world_size = setup_distributed()
model = torch.nn.Linear(2, 2).cuda()
