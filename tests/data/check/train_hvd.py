import torch
import horovod.torch as hvd

hvd.init()
torch.cuda.set_device(hvd.local_rank())
