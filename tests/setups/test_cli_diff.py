"""`acclint diff` from the command line: exit codes, the JSON contract, GitHub annotations,
--ignore and [tool.acclint.diff], and bad input answered with a message, not a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from setup_helpers import FIXTURES, line_of

from acclint.cli import main

GPU = str(FIXTURES / "megatron_gpu.sh")
NPU = str(FIXTURES / "mindspeed_npu.sh")


def invoke(*args: str):
    return CliRunner().invoke(main, ["diff", *args])


def test_exit_codes_same_and_different():
    assert invoke(str(FIXTURES / "same_arrays.sh"), str(FIXTURES / "same_string.sh")).exit_code == 0
    assert invoke(GPU, NPU).exit_code == 1


def test_json_follows_the_contract():
    result = invoke(GPU, NPU, "--format", "json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert report["version"] == 1 and report["left"] == GPU and report["right"] == NPU
    assert isinstance(report["same"], list) and "lr" in report["same"]
    beta2 = next(m for m in report["mismatches"] if m["key"] == "adam-beta2")
    assert set(beta2) >= {"key", "category", "left", "right", "left_location", "right_location", "message"}
    assert beta2["category"] == "hyperparameter" and (beta2["left"], beta2["right"]) == (0.95, 0.999)
    assert beta2["left_location"] == {"path": GPU, "line": line_of(Path(GPU), "--adam-beta2")}
    assert beta2["right_location"] == {"path": NPU, "line": line_of(Path(NPU), "--adam-beta2")}
    dropout = next(m for m in report["mismatches"] if m["key"] == "hidden-dropout")
    assert dropout["right_location"] is None and dropout["right_origin"] == "default"
    assert "default" in dropout["message"]


def test_text_is_an_aligned_table_then_one_sentence_per_mismatch():
    output = invoke(GPU, NPU).output
    lines = output.splitlines()
    header = lines[0]
    assert header.split()[:1] == ["key"] and "left:" in header and "right:" in header and header.rstrip().endswith("note")
    beta2 = next(line for line in lines if line.startswith("adam-beta2 "))
    # Columns line up with the header: the right value starts where "right:" does.
    assert beta2.index("0.999") == header.index("right:")
    assert f"megatron_gpu.sh:{line_of(Path(GPU), '--adam-beta2')}" in beta2
    dropout = next(line for line in lines if line.startswith("hidden-dropout "))
    assert "default" in dropout
    assert any(line.startswith("1. [") for line in lines)
    assert lines[-1].startswith("Found 7 differences")


def test_github_annotations_point_at_the_right_side():
    output = invoke(GPU, NPU, "--format", "github").output
    beta2 = next(line for line in output.splitlines() if "adam-beta2" in line)
    assert beta2.startswith(f"::warning file={NPU},line={line_of(Path(NPU), '--adam-beta2')},")
    dropout = next(line for line in output.splitlines() if "hidden-dropout [" in line)
    assert f"line={line_of(Path(GPU), '--hidden-dropout')}" in dropout  # the right takes a default


def test_ignore_option_and_pyproject(tmp_path: Path):
    result = invoke(GPU, NPU, "--ignore", "adam-beta2,HCCL_DETERMINISTIC", "--format", "json")
    keys = {m["key"] for m in json.loads(result.output)["mismatches"]}
    assert "adam-beta2" not in keys and "HCCL_DETERMINISTIC" not in keys and "global-batch-size" in keys
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.acclint.diff]\nignore = ["fused-op", "global-batch-size"]\n')
    result = invoke(GPU, NPU, "--config", str(pyproject), "--format", "json")
    keys = {m["key"] for m in json.loads(result.output)["mismatches"]}
    assert "use-fused-swiglu" not in keys and "global-batch-size" not in keys and "adam-beta2" in keys


def test_unknown_diff_config_key_is_a_usage_error(tmp_path: Path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.acclint.diff]\nignroe = ["lr"]\n')
    result = invoke(GPU, NPU, "--config", str(pyproject))
    assert result.exit_code == 2 and "ignroe" in result.output


def test_bad_input_gives_a_message_and_exit_2():
    broken = invoke(str(FIXTURES / "broken.yaml"), str(FIXTURES / "hf_args.json"))
    assert broken.exit_code == 2 and "broken.yaml: invalid YAML" in broken.output
    assert "Traceback" not in broken.output
    missing = invoke(str(FIXTURES / "nope.sh"), NPU)
    assert missing.exit_code == 2 and "nope.sh: no such file" in missing.output
    empty = invoke(str(FIXTURES / "no_launch.sh"), NPU)
    assert empty.exit_code == 2 and "no training launch" in empty.output


def test_binary_and_syntax_errors_are_named(tmp_path: Path):
    binary = tmp_path / "blob.py"
    binary.write_bytes(b"\x00\x01\x02")
    result = invoke(str(binary), NPU)
    assert result.exit_code == 2 and "blob.py: binary file" in result.output
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    result = invoke(str(broken), str(FIXTURES / "torch_train.py"))
    assert result.exit_code == 2 and "broken.py: syntax error at line 1" in result.output


def test_a_folder_merges_its_files_and_reports_the_unreadable_one(tmp_path: Path):
    folder = tmp_path / "npu"
    folder.mkdir()
    (folder / "train.py").write_text((FIXTURES / "ms_train.py").read_text())
    (folder / "bad.json").write_text("{not json")
    result = invoke(str(FIXTURES / "torch_train.py"), str(folder), "--format", "json")
    report = json.loads(result.output)
    assert result.exit_code == 1
    assert {m["key"] for m in report["mismatches"]} == {"adam-beta2", "optimizer", "loss-reduction"}
    assert any("bad.json: invalid JSON" in problem for problem in report["problems"])


def test_end_to_end_in_a_subprocess():
    completed = subprocess.run(
        [sys.executable, "-m", "acclint", "diff", GPU, NPU, "--format", "json"],
        capture_output=True, text=True, check=False,
    )
    assert completed.returncode == 1, completed.stderr
    assert json.loads(completed.stdout)["version"] == 1
