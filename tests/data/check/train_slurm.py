import os

import torch

torch.cuda.set_device(int(os.environ["SLURM_LOCALID"]))
