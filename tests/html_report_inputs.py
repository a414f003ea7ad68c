"""Inputs for the HTML report's tests (tests/reports/test_html*.py and tests/browser/).

A real scan of the bundled examples plus one unreadable file, a setup diff in the shape
docs/formats.md gives for `acclint diff --format json`, and two real step-0 fingerprints captured
with torch. Importable from any test folder: the root conftest puts tests/ on sys.path.
"""

from __future__ import annotations

import shutil
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = REPO_ROOT / "examples"

# The ACL202 finding of the examples: `cudnn.benchmark = True` in gpu/train.py.
BENCHMARK_FILE = "gpu/train.py"
BENCHMARK_TEXT = "cudnn.benchmark = True"


def copy_examples(root: Path) -> Path:
    """The examples under root/examples, plus broken.py, which cannot be parsed."""
    target = root / "examples"
    shutil.copytree(EXAMPLES, target)
    (target / "broken.py").write_text("def broken(:\n    pass\n", encoding="utf-8")
    return target


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in line)


def diff_result(examples: Path) -> dict:
    """`acclint diff examples/gpu examples/npu --format json` as docs/formats.md shapes it."""
    gpu, npu = examples / "gpu" / "train.py", examples / "npu" / "train.py"
    return {
        "version": 1,
        "left": str(examples / "gpu"),
        "right": str(examples / "npu"),
        "mismatches": [
            {"key": "adam-beta2", "category": "hyperparameter", "left": 0.95, "right": 0.999,
             "left_location": {"path": str(gpu), "line": line_of(gpu, "betas=")},
             "right_location": {"path": str(npu), "line": line_of(npu, "betas=")},
             "message": "adam-beta2 0.95 vs 0.999: the second-moment average forgets 20x faster on the left"},
            {"key": "global-batch-size", "category": "hyperparameter", "left": 256, "right": 32,
             "left_location": {"path": str(examples / "gpu" / "run_gpu.sh"), "line": 15}, "right_location": None,
             "message": "the right side does not set global-batch-size: Megatron's default (micro-batch x data parallel) applies"},
        ],
        "same": ["lr", "micro-batch-size", "seed", "weight-decay"],
    }


def capture_fingerprints(folder: Path) -> tuple[Path, Path]:
    """Two real fingerprints of one small torch model: the right one has LayerNorm eps 0.1 instead
    of 1e-5, so weights and optimizer match and the loss and every gradient differ."""
    import torch

    from acclint.runtime import capture

    def one(eps: float, path: Path) -> Path:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16),
                                    torch.nn.LayerNorm(16, eps=eps), torch.nn.Linear(16, 4))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95))
        generator = torch.Generator().manual_seed(0)
        batch = (torch.randn(32, 8, generator=generator), torch.randn(32, 4, generator=generator))
        fingerprint = capture(model, optimizer, lambda m, b: torch.nn.functional.mse_loss(m(b[0]), b[1]), batch)
        return fingerprint.save(path)

    return one(1e-5, folder / "gpu.json"), one(0.1, folder / "npu.json")
