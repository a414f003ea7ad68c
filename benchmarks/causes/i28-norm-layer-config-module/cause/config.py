"""Layer choices of the port, shared by every model file."""

from mindspore import nn

NORM_LAYER = nn.LayerNorm
ACT_LAYER = nn.ReLU
