"""The fingerprint file: plain JSON, versioned, and clear errors for files that are not right.

These tests need neither torch nor MindSpore.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from acclint.runtime import Fingerprint, FingerprintError, NonFiniteLossError, compare, load
from acclint.runtime_checks.distributed.distributed import rank_path
from acclint.runtime_checks.model.contenthash import LEGACY_ALGORITHM
from acclint.runtime_checks.model.fingerprint import ActivationRecord, ModuleRecord, ValueRecord


def test_round_trip(make_fingerprint, tmp_path):
    original = make_fingerprint()
    path = original.save(tmp_path / "fp.json")
    loaded = load(path)
    assert loaded == original
    assert loaded.path == str(path)
    assert compare(original, loaded).ok


def test_non_finite_values_are_written_as_json_strings(make_fingerprint, tmp_path):
    original = make_fingerprint()
    original.step.grad_norms["fc.weight"] = math.inf
    path = original.save(tmp_path / "fp.json")
    data = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"bare {c} is not JSON"))
    assert data["step"]["grad_norms"]["fc.weight"] == "Infinity"
    assert load(path).step.grad_norms["fc.weight"] == math.inf


def test_non_finite_gradient_is_its_own_message(make_fingerprint):
    left, right = make_fingerprint(), make_fingerprint()
    right.step.grad_norms["fc.weight"] = math.nan
    result = compare(left, right)
    grads = [m for m in result.mismatches if m.kind == "grad-norm"]
    assert grads and all("NaN" in m.message and "not a tolerance question" in m.message for m in grads)


@pytest.mark.parametrize("field", ["loss", "loss_after"])
def test_non_finite_loss_in_a_file_is_an_error_not_a_tolerance_failure(make_fingerprint, tmp_path, field):
    bad = make_fingerprint(**{field: math.nan})
    path = bad.save(tmp_path / "bad.json")
    with pytest.raises(NonFiniteLossError, match=r"records a NaN .*not a tolerance away"):
        compare(make_fingerprint(), load(path))


def test_truncated_file(make_fingerprint, tmp_path):
    text = make_fingerprint().to_json()
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) // 2])
    with pytest.raises(FingerprintError, match="not valid JSON \\(the file looks truncated\\)"):
        load(path)


def test_missing_file_and_wrong_content(tmp_path):
    with pytest.raises(FingerprintError, match="no such file"):
        load(tmp_path / "absent.json")
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    with pytest.raises(FingerprintError, match="not an acclint fingerprint"):
        load(other)


def test_other_format_version(make_fingerprint, tmp_path):
    data = make_fingerprint().to_dict()
    data["version"] = 4
    path = tmp_path / "v4.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FingerprintError, match="version 4 is not supported.*reads versions 1, 2 and 3"):
        load(path)


def test_a_version_1_file_loads_and_its_missing_stages_show_as_not_recorded(make_fingerprint, tmp_path):
    old = make_fingerprint().to_dict()
    for added_in_2 in ("batch", "modules", "forward"):
        del old[added_in_2]
    old["version"] = 1
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(old))
    loaded = load(path)
    assert loaded.version == 1 and loaded.batch is None and loaded.modules is None and loaded.forward is None
    current = make_fingerprint()
    current.version, current.hash_algorithm = 2, LEGACY_ALGORITHM  # a version 2 fingerprint: sha256 too
    current.batch = [ValueRecord(path="0", shape=[2], dtype="int64", stats={"mean": 1.0}, sha256="ef" * 32)]
    current.modules = [ModuleRecord(name="ln", module="LayerNorm", settings={"eps": 1e-5})]
    current.forward = []
    result = compare(loaded, current)
    assert result.ok, result.verdict()
    assert set(result.skipped) == {"data", "settings", "forward", "steps"}  # steps: one step captured
    lines = result.verdict().splitlines()
    for stage in ("data", "forward"):
        line = next(line for line in lines if f" {stage} ...." in line)
        assert "not recorded on the left" in line and "fingerprint is format 1, which has no" in line, line
    assert "not compared: data, module settings, forward" in result.verdict()


def test_new_stages_round_trip_through_the_file(make_fingerprint, tmp_path):
    fingerprint = make_fingerprint()
    fingerprint.batch = [ValueRecord(path="1", shape=[2], dtype="int32", stats={"mean": 1.5}, sha256="ef" * 32,
                                     samples=["a1", "b2"])]
    fingerprint.modules = [ModuleRecord(name="act", module="GELU", settings={"approximate": "tanh"})]
    fingerprint.forward = [ActivationRecord(name="", module="Net", call=0, io="output", leaf=False, values=[
        ValueRecord(path="", shape=[2, 3], dtype="float32", stats={"norm": float("nan")}, sha256="01" * 32)])]
    loaded = load(fingerprint.save(tmp_path / "fp.json"))
    assert loaded.batch == fingerprint.batch and loaded.modules == fingerprint.modules
    assert loaded.forward[0].values[0].stats["norm"] != loaded.forward[0].values[0].stats["norm"]  # NaN survives
    assert loaded.forward[0].name == "" and loaded.forward[0].io == "output"


def test_missing_or_mistyped_fields(make_fingerprint, tmp_path):
    data = make_fingerprint().to_dict()
    del data["params"][0]["sha256"]
    path = tmp_path / "hand-edited.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FingerprintError, match="'sha256' is missing"):
        load(path)
    data = make_fingerprint().to_dict()
    data["training"] = "yes"
    path.write_text(json.dumps(data))
    with pytest.raises(FingerprintError, match="'training' should be bool"):
        load(path)


def test_one_file_per_rank():
    assert rank_path(Path("npu.json"), 0, 1) == Path("npu.json")
    assert rank_path(Path("out/npu.json"), 3, 8) == Path("out/npu.rank3.json")
    assert rank_path(Path("npu-{rank}.json"), 2, 4) == Path("npu-2.json")


def test_save_under_a_multi_rank_run_writes_the_rank_file(make_fingerprint, tmp_path):
    fingerprint = make_fingerprint()
    fingerprint.rank, fingerprint.world_size = 1, 2
    written = fingerprint.save(tmp_path / "gpu.json")
    assert written == tmp_path / "gpu.rank1.json" and written.exists()
    assert load(written).rank == 1


def test_hyperparameters_compare_at_float32_resolution(make_fingerprint):
    left = make_fingerprint(lr=0.01)
    right = make_fingerprint(lr=0.009999999776482582)  # float32(0.01), as MindSpore stores it
    assert compare(left, right).ok
    right = make_fingerprint(lr=0.0099)
    assert [(m.kind, m.name) for m in compare(left, right).mismatches] == [("optimizer-hparam", "lr")]


def test_negative_tolerance_is_rejected(make_fingerprint):
    with pytest.raises(FingerprintError, match="non-negative"):
        compare(make_fingerprint(), make_fingerprint(), rtol=-1)


def test_fingerprint_is_a_dataclass_with_summary_helpers(make_fingerprint):
    fingerprint: Fingerprint = make_fingerprint()
    assert fingerprint.param_count() == (6, 6)
    assert "torch 0.0 on cpu" in fingerprint.label


def test_hashes_of_format_2_and_3_are_not_compared_but_everything_else_is(make_fingerprint, tmp_path):
    """Format 3 hashes with mix64, 1 and 2 with sha256: equal tensors hash differently across them."""
    old = make_fingerprint().to_dict()
    old["version"] = 2
    del old["hash_algorithm"]
    for record in old["params"] + old["state"]:
        record["sha256"] = "ab" * 32  # a sha256 digest: would differ from every mix64 digest
    old["batch"] = [{"path": "0", "shape": [2], "dtype": "int64", "stats": {"mean": 1.0}, "sha256": "cd" * 32}]
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(old))
    loaded = load(path)
    assert loaded.hash_algorithm == LEGACY_ALGORITHM
    current = make_fingerprint()
    current.batch = [ValueRecord(path="0", shape=[2], dtype="int64", stats={"mean": 1.0}, sha256="ef" * 16)]
    result = compare(loaded, current)
    assert result.ok, result.verdict()  # no init-weights or batch mismatch from the hash change
    # Compared by the statistics both formats compute alike, and said to be compared only in part.
    partial = {o.stage: o.partial for o in result.stages if o.partial}
    assert set(partial) == {"data", "weights"} and not {"data", "weights"} & set(result.skipped)
    assert "sha256-f32 on the left" in partial["weights"] and "mix64 on the right" in partial["weights"]
    assert "same acclint version" in partial["data"]
    assert "compared by statistics only: data, initial weights" in result.verdict()
    changed = make_fingerprint()
    changed.step.loss += 1.0
    assert "loss" in {m.kind for m in compare(loaded, changed).mismatches}  # the other stages still compare
