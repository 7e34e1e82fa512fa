import torch.distributed as dist
from transformers import AutoModelForCausalLM

dist.init_process_group("nccl")
model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="auto")
