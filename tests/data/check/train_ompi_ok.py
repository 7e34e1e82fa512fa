import os

import torch

local_rank = int(os.environ["OMPI_COMM_WORLD_LOCAL_RANK"])
torch.cuda.set_device(local_rank)
