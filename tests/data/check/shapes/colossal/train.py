import colossalai
import torch

colossalai.launch_from_torch()
model = torch.nn.Linear(2, 2).cuda()
