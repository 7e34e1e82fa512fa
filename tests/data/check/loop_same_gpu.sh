# every launch pinned to GPU 0 by mistake
for i in $(seq 0 3); do
  CUDA_VISIBLE_DEVICES=0 torchrun --nproc_per_node 1 --master_port $((29500 + i)) train_local.py &
done
