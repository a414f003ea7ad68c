"""`acclint diff` of settings written through a local variable, of Megatron's batch-size ramp-up
against a fixed global batch, and the summary's count of what was the same."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from setup_helpers import FIXTURES, by_key, line_of, run_diff

from acclint.reports.diff_text import summary_line
from acclint.setups import diff_paths

TRAIN = """\
    import torch
    from torch.utils.data import DataLoader


    def train(dataset, model):
        batch_size = 64
        lr = 3e-4
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=True)
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        return loader, optimizer
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(dedent(text), encoding="utf-8")
    return path


def test_a_local_variable_passed_to_a_call_is_the_setting_at_its_assignment(tmp_path: Path):
    left = write(tmp_path, "gpu.py", TRAIN)
    right = write(tmp_path, "npu.py", TRAIN.replace("batch_size = 64", "batch_size = 32"))
    found = by_key(run_diff(left, right))
    assert set(found) == {"micro-batch-size"}
    row = found["micro-batch-size"]
    assert (row.left.value, row.right.value) == (64, 32)
    assert row.left.where.line == line_of(left, "batch_size = 64")
    assert row.right.where.line == line_of(right, "batch_size = 32")
    assert "lr" in run_diff(left, right).same  # `lr = 3e-4` read the same way on both sides


def test_a_later_non_literal_assignment_hides_the_literal(tmp_path: Path):
    """What the name holds when the call runs decides: `batch_size = args.bs` is unknown."""
    left = write(tmp_path, "gpu.py", TRAIN)
    right = write(tmp_path, "npu.py", TRAIN.replace(
        "        lr = 3e-4\n", "        lr = 3e-4\n        batch_size = len(dataset) // 10\n"))
    row = by_key(run_diff(left, right))["micro-batch-size"]
    assert row.left.value == 64 and not row.right.known
    after = write(tmp_path, "after.py", TRAIN.replace(
        "        return loader", "        batch_size = 8\n        return loader"))
    assert "micro-batch-size" in run_diff(left, after).same  # an assignment after the call does not count


def test_rampup_batch_size_vs_a_fixed_global_batch(tmp_path: Path):
    fixed = FIXTURES / "megatron_gpu.sh"
    rampup = write(tmp_path, "rampup.sh", fixed.read_text(encoding="utf-8").replace(
        "    --global-batch-size 256\n", "    --global-batch-size 256\n    --rampup-batch-size 32 32 1000000\n"))
    row = by_key(run_diff(fixed, rampup))["rampup-batch-size"]
    assert row.category == "hyperparameter"
    assert row.right.value == (32, 32, 1000000) and row.left.value is None
    assert row.right.where.line == line_of(rampup, "--rampup-batch-size")
    # The message reads the ramp-up against the fixed global batch, with both sides' lines.
    assert f"global-batch-size: left 256 ({fixed}:{line_of(fixed, '--global-batch-size')})" in row.message
    assert "first step" in row.message
    assert "rampup-batch-size" in run_diff(rampup, rampup).same


def test_the_summary_counts_settings_and_model_code_items_apart(tmp_path: Path):
    composed = write(tmp_path, "gpu_model.py", """\
        import torch.nn.functional as F


        def swiglu(x):
            a, b = x.chunk(2, dim=-1)
            return F.silu(a) * b
    """)
    assert summary_line(diff_paths(str(composed), str(composed))) == (
        "No differences: 1 model-code item the same (0 ignored).")
    train = write(tmp_path, "train.py", TRAIN)
    result = diff_paths(str(train), str(train))
    assert "adam" in result.same and "batch-size" not in summary_line(result)
    assert summary_line(result) == (
        f"No differences: {len(result.same) - 1} settings and 1 model-code item the same (0 ignored).")


def test_a_parameter_or_two_literals_in_branches_are_not_resolved(tmp_path: Path):
    left = write(tmp_path, "gpu.py", TRAIN)
    branches = write(tmp_path, "branches.py", TRAIN.replace(
        "        batch_size = 64\n", "        if len(dataset) > 100:\n            batch_size = 64\n"
        "        else:\n            batch_size = 32\n"))
    parameter = write(tmp_path, "parameter.py", TRAIN.replace(
        "def train(dataset, model):\n        batch_size = 64\n",
        "def train(dataset, model, batch_size=None):\n        if batch_size is None:\n            batch_size = 64\n"))
    for right in (branches, parameter):
        row = by_key(run_diff(left, right))["micro-batch-size"]
        assert row.left.value == 64 and not row.right.known, right.name


def test_each_python_file_is_parsed_once(tmp_path: Path, monkeypatch):
    import libcst

    left = write(tmp_path, "gpu.py", TRAIN)
    right = write(tmp_path, "npu.py", TRAIN.replace("batch_size = 64", "batch_size = 32"))
    parsed = []
    real = libcst.parse_module
    monkeypatch.setattr(libcst, "parse_module", lambda text, *a, **k: parsed.append(text) or real(text, *a, **k))
    assert "micro-batch-size" in by_key(diff_paths(str(left), str(right)))
    assert len(parsed) == 2
