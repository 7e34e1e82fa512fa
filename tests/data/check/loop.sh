#!/bin/bash
# the classic workaround: one single-process job per GPU
for i in {0..7}; do
  CUDA_VISIBLE_DEVICES=$i torchrun --nproc_per_node 1 --master_port $((29500+i)) train_local.py &
done
wait
