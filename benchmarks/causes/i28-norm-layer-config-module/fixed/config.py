"""Layer choices of the port, shared by every model file."""

from functools import partial

from mindspore import nn

# PyTorch's nn.LayerNorm eps: MindSpore's default epsilon is 1e-7.
NORM_LAYER = partial(nn.LayerNorm, epsilon=1e-5)
ACT_LAYER = nn.ReLU
