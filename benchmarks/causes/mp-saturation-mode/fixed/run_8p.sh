#!/bin/bash
export HCCL_DETERMINISTIC=true
export INF_NAN_MODE_ENABLE=1
torchrun --nproc_per_node 8 train.py
