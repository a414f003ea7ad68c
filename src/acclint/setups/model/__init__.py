"""The model-code side of `acclint diff`: two implementations of a model (GPU vs NPU, PyTorch vs
MindSpore) compared operation by operation, as rows of the setup diff.

    from acclint.setups.model import diff_model, read_model
    rows = diff_model(read_model("gpu_model.py"), read_model("npu_model.py"))

Rows come from the row sources registered in `sources` (fused vs composed forms, framework
defaults, documented API differences, layer values, upcasts, random generators); a new
comparison registers one more function there.
"""

# Each module registers its row source on import.
from acclint.setups.model import api_rows, casts, defaults, operations, randomness, values  # noqa: F401
from acclint.setups.model.read import ModelFile, ModelSide, Occurrence, read_model
from acclint.setups.model.sources import Rows, diff_model, register

__all__ = ["ModelFile", "ModelSide", "Occurrence", "Rows", "diff_model", "read_model", "register"]
