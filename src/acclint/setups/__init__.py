"""Training setups: extract one from a launch script, Python script, config or folder, and diff two.

    from acclint.setups import extract, diff_setups
    result = diff_setups(extract("gpu.sh"), extract("npu.sh"), ignore=["parallel"])
    result = diff_paths("gpu_model.py", "npu_model.py")   # settings and model code (setups.model)
"""

from acclint.setups.diff import DiffResult, Mismatch, diff_setups
from acclint.setups.extract import extract
from acclint.setups.record import Setting, Setup, SetupError, Where
from acclint.setups.compare import NothingToCompare, diff_paths

__all__ = ["DiffResult", "Mismatch", "NothingToCompare", "Setting", "Setup", "SetupError", "Where", "diff_paths",
           "diff_setups", "extract"]
