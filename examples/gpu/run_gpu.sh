#!/bin/bash
# GPU reference run: 8 x A100, one node.
export CUDA_DEVICE_MAX_CONNECTIONS=1
export PYTHONHASHSEED=0

GPUS_PER_NODE=8
DISTRIBUTED_ARGS="
    --nproc_per_node $GPUS_PER_NODE \
    --nnodes 1 \
    --master_addr localhost \
    --master_port 6000
"
TRAIN_ARGS="
    --lr 1e-3 \
    --micro-batch-size 32 \
    --seed 1234
"

torchrun $DISTRIBUTED_ARGS train.py $TRAIN_ARGS | tee logs/gpu_train.log
