#!/bin/bash
export HCCL_DETERMINISTIC=true
export HCCL_CONNECT_TIMEOUT=1800
torchrun --nnodes 1 --nproc_per_node 8 pretrain.py
