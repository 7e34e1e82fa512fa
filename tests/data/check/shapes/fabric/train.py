import torch
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cuda", devices=8, strategy="ddp")
fabric.launch()
model = fabric.setup(torch.nn.Linear(2, 2))
x = torch.zeros(2, device=fabric.device)
