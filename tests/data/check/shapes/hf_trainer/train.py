from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

args = TrainingArguments(output_dir="out", per_device_train_batch_size=8, bf16=True)
model = AutoModelForCausalLM.from_pretrained("some/model")
trainer = Trainer(model=model, args=args)
trainer.train()
