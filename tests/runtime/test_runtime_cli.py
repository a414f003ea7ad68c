"""`acclint compare`: exit codes 0/1/2, the JSON contract, and no traceback on bad input."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from acclint.runtime import capture
from acclint.runtime_checks.cli import compare_command


def invoke(*args):
    result = CliRunner().invoke(compare_command, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result


@pytest.fixture
def files(make_fingerprint, tmp_path):
    def write(name, **options):
        return make_fingerprint(**options).save(tmp_path / name)

    return write


def test_parity_exits_0(files):
    result = invoke(files("a.json"), files("b.json"))
    assert result.exit_code == 0
    assert "Verdict: PARITY" in result.output


def test_mismatch_exits_1_with_the_json_contract(files):
    result = invoke(files("a.json", lr=0.01), files("b.json", lr=0.02), "--format", "json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report == {
        "version": 1,
        "ok": False,
        "mismatches": [{"kind": "optimizer-hparam", "name": "lr", "left": 0.01, "right": 0.02,
                        "message": report["mismatches"][0]["message"]}],
    }


def test_text_verdict_names_the_first_stage_to_fix(files):
    result = invoke(files("a.json", loss=0.5), files("b.json", loss=0.6))
    assert result.exit_code == 1
    assert "[loss] step-0 loss 0.5 vs 0.6" in result.output
    assert "fix 'step-0 loss' first" in result.output


def test_output_file(files, tmp_path):
    report = tmp_path / "report.json"
    result = invoke(files("a.json"), files("b.json"), "--format", "json", "--output", report)
    assert result.exit_code == 0 and result.output == ""
    assert json.loads(report.read_text()) == {"version": 1, "ok": True, "mismatches": []}


def test_tolerance_options(files):
    left, right = files("a.json", loss=1.0), files("b.json", loss=1.0001)
    assert invoke(left, right).exit_code == 1
    assert invoke(left, right, "--rtol", "1e-3").exit_code == 0
    assert invoke(left, right, "--rtol", "0", "--atol", "1e-3").exit_code == 0


def test_mapping_option(make_fingerprint, tmp_path):
    left = make_fingerprint()
    right = make_fingerprint()
    right.params[0].native_name = right.params[0].name = "dense.kernel"
    right.optimizer.groups[0].params = ["dense.kernel"]
    right.step.grad_norms = {"dense.kernel": 1.0}
    right.step.update_norms = {"dense.kernel": 0.01}
    a, b = left.save(tmp_path / "a.json"), right.save(tmp_path / "b.json")
    assert invoke(a, b).exit_code == 1
    mapping = tmp_path / "map.yaml"
    mapping.write_text("names:\n  dense.kernel: fc.weight\n")
    assert invoke(a, b, "--mapping", mapping).exit_code == 0


def test_real_fingerprints_end_to_end(make_torch, tmp_path):
    setups = [make_torch(), make_torch(betas=(0.9, 0.95))]
    paths = [capture(s.model, s.optimizer, s.loss_fn, s.batch).save(tmp_path / f"{i}.json") for i, s in enumerate(setups)]
    result = invoke(*paths, "--format", "json")
    assert result.exit_code == 1
    (mismatch,) = json.loads(result.output)["mismatches"]
    assert (mismatch["kind"], mismatch["name"], mismatch["left"], mismatch["right"]) == (
        "optimizer-hparam", "adam-beta2", 0.999, 0.95)


# ---------------------------------------------------------------------------- exit 2, never a traceback
def error_of(result):
    assert result.exit_code == 2, result.output
    return result.output


def test_truncated_file_exits_2(files, tmp_path):
    good = files("a.json")
    cut = tmp_path / "cut.json"
    cut.write_text(good.read_text()[:100])
    assert "truncated" in error_of(invoke(good, cut))


def test_missing_file_exits_2(files, tmp_path):
    assert "no such file" in error_of(invoke(files("a.json"), tmp_path / "absent.json"))


def test_version_mismatch_exits_2(files, tmp_path):
    good = files("a.json")
    data = json.loads(good.read_text())
    data["version"] = 99
    other = tmp_path / "v99.json"
    other.write_text(json.dumps(data))
    assert "version 99 is not supported" in error_of(invoke(good, other))


def test_nan_loss_exits_2_and_says_nan(files):
    output = error_of(invoke(files("a.json"), files("b.json", loss=math.nan)))
    assert "NaN step-0 loss" in output and "tolerance" in output


def test_bad_mapping_file_exits_2(files, tmp_path):
    mapping = tmp_path / "map.yaml"
    mapping.write_text("names: [1, 2]\n")
    assert "mapping file" in error_of(invoke(files("a.json"), files("b.json"), "--mapping", mapping))


def test_negative_tolerance_exits_2(files):
    assert "non-negative" in error_of(invoke(files("a.json"), files("b.json"), "--rtol", "-1"))


def test_unwritable_output_exits_2(files, tmp_path):
    target = tmp_path / "missing-dir" / "report.txt"
    assert "cannot write" in error_of(invoke(files("a.json"), files("b.json"), "--output", target))


def test_not_json_at_all_exits_2(files, tmp_path):
    binary = tmp_path / "weights.bin"
    binary.write_bytes(b"\x00\xff\xfe binary")
    assert "error" in error_of(invoke(files("a.json"), binary))


def test_malformed_nested_field_exits_2(files, tmp_path):
    good = files("a.json")
    data = json.loads(good.read_text())
    data["params"][0]["shape"] = ["two", 3]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(data))
    assert "malformed fingerprint" in error_of(invoke(good, broken))


def _with_output(fingerprint, norm):
    from acclint.runtime_checks.model.fingerprint import ActivationRecord, ValueRecord

    value = ValueRecord(path="", shape=[4, 2], dtype="float32", sha256=f"{norm}",
                        stats={"norm": norm, "mean": 0.1, "std": 0.5, "min": -1.0, "max": 1.0})
    fingerprint.forward = [ActivationRecord(name="", module="Net", call=0, io="output", leaf=False, values=[value])]
    return fingerprint


def test_activation_tolerance_option(make_fingerprint, tmp_path):
    left = _with_output(make_fingerprint(), 1.0).save(tmp_path / "a.json")
    right = _with_output(make_fingerprint(), 1.001).save(tmp_path / "b.json")
    strict = invoke(left, right, "--format", "json")
    assert strict.exit_code == 1
    assert [(m["kind"], m["name"]) for m in json.loads(strict.output)["mismatches"]] == [("activation", "<model>")]
    assert invoke(left, right, "--activation-rtol", "1e-2").exit_code == 0
    refused = invoke(left, right, "--activation-rtol", "-1")
    assert refused.exit_code == 2 and "non-negative" in refused.output


def test_json_lists_consequences_with_their_cause(make_fingerprint, tmp_path):
    left = make_fingerprint().save(tmp_path / "a.json")
    other = make_fingerprint(loss=0.7)
    other.params[0].sha256 = "ef" * 32
    right = other.save(tmp_path / "b.json")
    result = invoke(left, right, "--format", "json")
    assert result.exit_code == 1
    entries = [(m["kind"], m.get("consequence_of")) for m in json.loads(result.output)["mismatches"]]
    assert entries == [("init-weights", None), ("loss", "init-weights")]
    text = invoke(left, right).output
    assert "differs: 0.5 vs 0.7 (follows from initial weights)" in text
