"""expect_parity: the in-run assertion, in its three modes, on real torch fingerprints."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import acclint
from acclint.runtime import FingerprintError, ParityError, ParityWarning, capture, expect_parity


def fingerprint(make_torch, **options):
    setup = make_torch(**options)
    return capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)


@pytest.mark.parametrize("mode", ["raise", "exit", "warn"])
def test_parity_returns_the_result_in_every_mode(make_torch, tmp_path, mode):
    reference = fingerprint(make_torch).save(tmp_path / "reference.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ParityWarning)
        result = expect_parity(fingerprint(make_torch), reference, on_mismatch=mode)
    assert result is not None and result.ok


def test_raise_carries_the_comparison(make_torch):
    reference = fingerprint(make_torch)
    with pytest.raises(ParityError) as raised:
        expect_parity(fingerprint(make_torch, lr=5e-3), reference)
    result = raised.value.result
    assert not result.ok and result.cause_kinds() == {"optimizer-hparam"}
    assert "lr is 0.001 on the left, 0.005 on the right" in str(raised.value)  # the reference is the left


def test_warn_issues_the_verdict_and_goes_on(make_torch, tmp_path):
    reference = fingerprint(make_torch, betas=(0.9, 0.95)).save(tmp_path / "reference.json")
    with pytest.warns(ParityWarning) as caught:
        result = expect_parity(fingerprint(make_torch), str(reference), on_mismatch="warn")
    assert not result.ok and result.cause_kinds() == {"optimizer-hparam"}
    (warning,) = caught
    assert "Verdict: MISMATCH" in str(warning.message) and "adam-beta2" in str(warning.message)


def test_unknown_mode_and_missing_reference_are_clear_errors(make_torch, tmp_path):
    fp = fingerprint(make_torch)
    with pytest.raises(FingerprintError, match="on_mismatch must be one of"):
        expect_parity(fp, fp, on_mismatch="ignore")
    with pytest.raises(FingerprintError, match="no such file"):
        expect_parity(fp, tmp_path / "missing.json")
    with pytest.warns(ParityWarning, match="cannot compare with the reference"):
        assert expect_parity(fp, tmp_path / "missing.json", on_mismatch="warn") is None


TRAINING_RUN = textwrap.dedent("""
    import sys
    import torch
    from acclint.runtime import capture, expect_parity

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(sys.argv[2]))
    batch = (torch.ones(6, 4), torch.zeros(6, 1))
    loss_fn = lambda m, b: torch.nn.functional.mse_loss(m(b[0]), b[1])
    fp = capture(model, optimizer, loss_fn, batch)
    if sys.argv[1] == "save":
        fp.save(sys.argv[3])
    else:
        expect_parity(fp, sys.argv[3], on_mismatch="exit")
        print("training goes on")
""")


def run_training(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    script = tmp_path / "train.py"
    script.write_text(TRAINING_RUN, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(acclint.__file__).parents[1])}
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=300)


def test_exit_mode_stops_the_run_with_status_1_and_the_verdict(torch, tmp_path):
    reference = tmp_path / "reference.json"
    assert run_training(tmp_path, "save", "1e-3", str(reference)).returncode == 0
    at_parity = run_training(tmp_path, "check", "1e-3", str(reference))
    assert at_parity.returncode == 0, at_parity.stderr
    assert "training goes on" in at_parity.stdout
    mismatch = run_training(tmp_path, "check", "2e-3", str(reference))
    assert mismatch.returncode == 1, mismatch.stderr
    assert "Verdict: MISMATCH" in mismatch.stdout and "[optimizer-hparam] lr is 0.001 on the left, 0.002" in mismatch.stdout
    assert "training goes on" not in mismatch.stdout
    assert "Traceback" not in mismatch.stdout + mismatch.stderr
    missing = run_training(tmp_path, "check", "1e-3", str(tmp_path / "missing.json"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    assert "Traceback" not in missing.stdout + missing.stderr
