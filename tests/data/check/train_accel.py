from accelerate import Accelerator

accelerator = Accelerator()
model = accelerator.prepare(model)
