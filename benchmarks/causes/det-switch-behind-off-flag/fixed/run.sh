#!/bin/bash
python train.py --lr 0.01 --deterministic
