#!/bin/bash
export HCCL_DETERMINISTIC=true
torchrun --nproc_per_node 8 train.py
