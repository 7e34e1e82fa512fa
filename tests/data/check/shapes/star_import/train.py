# Helpers come in through `from lib.dist import *`.
import torch

from lib.dist import *  # noqa: F403

setup(parse())  # noqa: F405
model = torch.nn.Linear(2, 2).cuda()
