#!/bin/bash
# NPU port: 8 x Atlas 800T A2, one node.
source /usr/local/Ascend/ascend-toolkit/set_env.sh
export HCCL_CONNECT_TIMEOUT=1200
export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True

NPUS_PER_NODE=8
DISTRIBUTED_ARGS="
    --nproc_per_node $NPUS_PER_NODE \
    --nnodes 1 \
    --master_addr localhost \
    --master_port 6000
"
TRAIN_ARGS="
    --lr 1e-3 \
    --micro-batch-size 32 \
    --seed 1234
"

torchrun $DISTRIBUTED_ARGS train.py $TRAIN_ARGS | tee logs/npu_train.log
