import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 2)


trainer = L.Trainer(accelerator="gpu", devices=8, strategy="ddp")
trainer.fit(Model())
