"""acclint.runtime imports with neither framework installed and never pulls in the static half."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

SCRIPT = r"""
import sys

class Block:
    # Behave as if torch and mindspore were not installed.
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "mindspore", "torch_npu"}:
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, Block())
import acclint.runtime as runtime
from acclint.runtime_checks.cli import compare_command

try:
    runtime.capture(object(), object(), None, None)
except runtime.FingerprintError as error:
    print("error:", error)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {"torch", "mindspore"}
                or m.startswith(("acclint.linter", "acclint.rules", "acclint.reports")))
print("loaded:", loaded)
print("api:", sorted(runtime.__all__))
"""


def test_runtime_imports_without_frameworks_or_static_half():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "loaded: []" in done.stdout
    assert "error: the model must be a torch.nn.Module or a mindspore.nn.Cell" in done.stdout
    for name in ("capture", "load", "compare", "transfer_weights", "assert_parity", "check_rank_consistency",
                 "Probe", "Fingerprint", "FingerprintError"):
        assert f"'{name}'" in done.stdout
