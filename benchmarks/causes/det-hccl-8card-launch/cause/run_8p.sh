#!/bin/bash
# 8-card data-parallel run on one Atlas 800T A2 node
export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
export HCCL_CONNECT_TIMEOUT=1200
export PYTHONHASHSEED=0
torchrun --nproc_per_node 8 --master_port 29500 train.py
