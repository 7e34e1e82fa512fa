import os

import torch

rank = int(os.environ["RANK"])
torch.cuda.set_device(rank % torch.cuda.device_count())
