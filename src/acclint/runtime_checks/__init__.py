"""Runtime companion: step-0 fingerprints and parity verdicts across PyTorch, torch_npu and MindSpore.

    from acclint.runtime import capture, transfer_weights, compare, load
    fp = capture(model, optimizer, loss_fn, batch)   # one real step, rolled back by default
    fp.save("npu.json")
    result = compare(load("gpu.json"), load("npu.json"))
    expect_parity(fp, "gpu.json", on_mismatch="exit")   # in a training run: stop unless at parity

Neither torch nor MindSpore is imported here: each is imported only when a model of it is handled.
"""

from acclint.runtime_checks.capture.capture import capture
from acclint.runtime_checks.compare.compare import (
    DEFAULT_ACTIVATION_RTOL,
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    DEFAULT_UPDATE_RTOL,
    ComparisonResult,
    assert_parity,
    compare,
)
from acclint.runtime_checks.distributed.distributed import RankConsistency, check_rank_consistency
from acclint.runtime_checks.model.errors import FingerprintError, NonFiniteLossError
from acclint.runtime_checks.compare.expect import ParityError, ParityWarning, expect_parity
from acclint.runtime_checks.model.fingerprint import Fingerprint
from acclint.runtime_checks.distributed.rank_files import load
from acclint.runtime_checks.model.mismatch import KINDS, Mismatch
from acclint.runtime_checks.model.names import NameMapping, load_mapping
from acclint.runtime_checks.capture.probe import Probe
from acclint.runtime_checks.adapters.transfer import TransferReport, transfer_weights

__all__ = [
    "DEFAULT_ACTIVATION_RTOL",
    "DEFAULT_ATOL",
    "DEFAULT_RTOL",
    "DEFAULT_UPDATE_RTOL",
    "KINDS",
    "ComparisonResult",
    "Fingerprint",
    "FingerprintError",
    "Mismatch",
    "NameMapping",
    "NonFiniteLossError",
    "ParityError",
    "ParityWarning",
    "Probe",
    "RankConsistency",
    "TransferReport",
    "assert_parity",
    "capture",
    "check_rank_consistency",
    "compare",
    "expect_parity",
    "load",
    "load_mapping",
    "transfer_weights",
]
