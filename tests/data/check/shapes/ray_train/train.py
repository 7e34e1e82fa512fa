import ray.train.torch
import torch
from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer


def train_func():
    model = ray.train.torch.prepare_model(torch.nn.Linear(2, 2))
    device = ray.train.torch.get_device()
    return model, device


trainer = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=8, use_gpu=True))
trainer.fit()
