#!/bin/bash
export HCCL_DETERMINISTIC=true
SEQ_LEN=4096
GPT_ARGS=(
    --seq-length ${SEQ_LEN}
    --pre-tockens 2048
    --hidden-size 256
    --num-attention-heads 8
)
torchrun --nproc_per_node 8 pretrain_gpt.py "${GPT_ARGS[@]}" --seed 1234
