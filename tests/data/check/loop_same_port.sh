for i in 0 1 2 3; do
  CUDA_VISIBLE_DEVICES=$i torchrun --nproc_per_node 1 train_local.py &
done
wait
