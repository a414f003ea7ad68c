"""Seeding helper copied from the Ascend migration guide."""

import os
import random

import numpy as np
import torch
import torch_npu


def seed_all(seed: int = 1234) -> None:
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    torch_npu.npu.manual_seed_all(seed)
