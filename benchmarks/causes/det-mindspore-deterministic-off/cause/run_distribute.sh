#!/bin/bash
export HCCL_DETERMINISTIC=true
msrun --worker_num=8 --local_worker_num=8 train.py
