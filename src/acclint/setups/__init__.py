"""Training setups: extract one from a launch script, Python script, config or folder, and diff two.

    from acclint.setups import extract, diff_setups
    result = diff_setups(extract("gpu.sh"), extract("npu.sh"), ignore=["parallel"])
"""

from acclint.setups.diff import DiffResult, Mismatch, diff_setups
from acclint.setups.extract import extract
from acclint.setups.record import Setting, Setup, SetupError, Where

__all__ = ["DiffResult", "Mismatch", "Setting", "Setup", "SetupError", "Where", "diff_setups", "extract"]
