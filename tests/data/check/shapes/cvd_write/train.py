import os

local_rank = int(os.environ["LOCAL_RANK"])
os.environ["CUDA_VISIBLE_DEVICES"] = str(local_rank)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("nccl")
model = torch.nn.Linear(2, 2).cuda()
