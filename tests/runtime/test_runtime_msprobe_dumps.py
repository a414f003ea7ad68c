"""`acclint compare` on msprobe dumps made by the real msprobe (tools/gen_msprobe_fixtures.py).

The fixtures are mindstudio-probe 26.2.0 dumps of a two-layer MLP trained two steps on CPU
(PyTorch 2.13, MindSpore 2.10) from the same weights and batch; each case changes one thing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from acclint.runtime_checks.cli import compare_command
from acclint.runtime_checks.dumps.compare_dumps import compare_dumps
from acclint.runtime_checks.dumps.layout import is_dump, locate
from acclint.runtime_checks.dumps.node_names import parse_node_name

FIXTURES = Path(__file__).parent / "fixtures" / "msprobe"


def dump(name: str) -> Path:
    return FIXTURES / name


def invoke(*args):
    result = CliRunner().invoke(compare_command, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result


def causes(result) -> list:
    return [m for m in result.mismatches if m.is_cause]


# ---------------------------------------------------------------------------- names and layouts
def test_node_names_split_from_the_right():
    module = parse_node_name("Module.layers.0.mlp.Linear.forward.2")
    assert (module.prefix, module.path, module.cls, module.direction, module.call) == (
        "Module", "layers.0.mlp", "Linear", "forward", 2)
    grads = parse_node_name("Cell.fc1.Dense.parameters_grad.0")
    assert (grads.path, grads.cls, grads.direction) == ("fc1", "Dense", "parameters_grad")
    old_grads = parse_node_name("Module.fc1.Linear.parameters_grad")  # 8.x writes no count
    assert (old_grads.path, old_grads.direction) == ("fc1", "parameters_grad")
    api = parse_node_name("Tensor.add_.3.forward")
    assert (api.prefix, api.api, api.call, api.label) == ("Tensor", "add_", 3, "Tensor.add_.3")
    assert parse_node_name("not.a") is None


@pytest.mark.parametrize("entry", ["torch_L0", "torch_L0/step0", "torch_L0/step0/{proc}",
                                   "torch_L0/step0/{proc}/dump.json"])
def test_every_folder_the_user_may_name_reads_the_same_dump(entry):
    proc = next((FIXTURES / "torch_L0" / "step0").iterdir()).name
    path = dump(entry.format(proc=proc))
    assert is_dump(path)
    files = locate(path)
    assert list(files.ranks) == [proc] and proc.startswith("proc")
    result = compare_dumps(path, dump("torch_mix"))
    assert result.ok, result.verdict()


def test_a_folder_without_a_dump_is_not_one(tmp_path):
    assert not is_dump(tmp_path)
    (tmp_path / "step0" / "rank0").mkdir(parents=True)
    assert not is_dump(tmp_path)  # no dump.json in it


def test_26x_rank_layout_of_a_distributed_run_merges_both_ranks():
    files = locate(dump("torch_dist_mix"))
    assert list(files.ranks) == ["rank0", "rank1"]
    same = compare_dumps(dump("torch_dist_mix"), dump("torch_dist_mix"))
    assert same.ok
    lr = compare_dumps(dump("torch_dist_mix"), dump("torch_dist_mix_lr"))
    found = [m for m in causes(lr) if m.kind == "optimizer-hparam"]
    assert [m.name for m in found] == ["rank0: lr", "rank1: lr"]
    assert "[rank1]" in found[1].message


def test_a_side_with_more_ranks_says_which_were_not_compared():
    result = compare_dumps(dump("torch_dist_mix"), dump("torch_mix"))
    assert any("rank1 of the left side was not compared" in note for note in result.notes)


def test_8x_rank_folder_layout_reads():
    # Written from the documented 8.x layout (step0/rank/dump.json) with a real 26.x dump.json inside.
    files = locate(dump("legacy_8x_rank"))
    assert list(files.ranks) == ["rank"]
    assert compare_dumps(dump("legacy_8x_rank"), dump("torch_L0")).ok


def test_truncated_dump_exits_2_with_a_clear_message():
    result = invoke(dump("truncated"), dump("torch_L0"))
    assert result.exit_code == 2
    assert "not a complete msprobe dump.json" in result.output
    assert "was the run stopped while msprobe wrote it" in result.output


def test_empty_mindspore_cpu_dump_says_how_to_make_one(tmp_path):
    rank = tmp_path / "step0" / "proc1"
    rank.mkdir(parents=True)
    (rank / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L0", "framework": "mindspore",
                                                "dump_data_dir": None, "data": {}}))
    result = invoke(tmp_path, dump("torch_L0"))
    assert result.exit_code == 2
    assert "mint.norm" in result.output


def test_a_missing_side_exits_2(tmp_path):
    result = invoke(tmp_path / "nothing", dump("torch_L0"))
    assert result.exit_code == 2


# ---------------------------------------------------------------------------- parity
@pytest.mark.parametrize("left, right", [("torch_mix", "torch_mix_rerun"), ("torch_L1", "torch_mix"),
                                         ("torch_L0", "torch_mix"), ("torch_mix_md5", "torch_mix_md5_rerun")])
def test_identical_runs_at_any_level_are_at_parity(left, right):
    result = invoke(dump(left), dump(right))
    assert result.exit_code == 0, result.output
    assert "Verdict: PARITY" in result.output
    assert "frozen parameters ... not compared" in result.output  # what a dump cannot show is said, not passed


def test_md5_summaries_compare_by_checksum_first():
    result = compare_dumps(dump("torch_mix_md5"), dump("torch_mix_md5_rerun"))
    assert result.ok
    changed = compare_dumps(dump("torch_mix_md5"), dump("torch_mix_gelu"))
    assert not changed.ok


def test_mindspore_against_pytorch_with_the_same_weights_is_at_parity():
    result = invoke(dump("torch_L0"), dump("ms_L0"))
    assert result.exit_code == 0, result.output
    assert "mindspore dump" in result.output
    outcome = {o.stage: o for o in compare_dumps(dump("torch_L0"), dump("ms_L0")).stages}
    assert "agree" in outcome["forward"].summary and outcome["weights"].compared_fully
    assert outcome["grads"].compared_fully and not outcome["grads"].mismatches


# ---------------------------------------------------------------------------- causes
def test_changed_activation_names_the_module_and_its_class():
    result = invoke(dump("torch_mix"), dump("torch_mix_gelu"), "--format", "json")
    assert result.exit_code == 1
    report = json.loads(result.output)
    first = next(m for m in report["mismatches"] if "consequence_of" not in m)
    assert (first["kind"], first["name"]) == ("activation", "Module.act.ReLU")
    assert "the module is ReLU on the left, GELU on the right" in first["message"]
    assert "its inputs and parameters agree" in first["message"]
    following = [m for m in report["mismatches"] if m.get("consequence_of")]
    assert any(m["name"] == "Module.fc2.Linear" for m in following)  # the consumer msprobe names is a consequence
    assert any(m["kind"] == "loss" for m in following)
    assert sum("consequence_of" not in m for m in report["mismatches"]) == 1


def test_changed_activation_at_l1_names_the_apis_that_differ():
    result = compare_dumps(dump("torch_L1"), dump("torch_L1_gelu"))
    [cause] = causes(result)
    assert cause.name == "Functional.relu.0 -> Functional.gelu.0"
    assert "between Functional.linear.0, which agreed, and Functional.linear.1" in cause.message


def test_changed_lr_is_named_from_the_optimizer_api_arguments():
    result = invoke(dump("torch_mix"), dump("torch_mix_lr"))
    assert result.exit_code == 1
    assert "lr: alpha -0.1 -> -0.2 of Tensor.add_ (4 calls)" in result.output
    assert "fix 'optimizer' first" in result.output
    comparison = compare_dumps(dump("torch_mix"), dump("torch_mix_lr"))
    [cause] = causes(comparison)
    assert (cause.kind, cause.name, cause.left, cause.right) == ("optimizer-hparam", "lr", -0.1, -0.2)
    stages = {o.stage: o for o in comparison.stages}
    assert not stages["forward"].mismatches and not stages["grads"].mismatches
    assert all(m.consequence_of == "optimizer-hparam" for m in stages["update"].mismatches)
    assert stages["update"].mismatches


def test_mindspore_default_gelu_against_pytorch_exact_names_the_framework_default():
    result = compare_dumps(dump("torch_L0_gelu"), dump("ms_L0_gelu"))
    [cause] = causes(result)
    assert cause.name == "Module.act.GELU"
    assert "approximate=True (tanh approximation)" in cause.message
    assert "framework_defaults.toml [gelu]" in cause.message
    assert any("framework_defaults" in note for note in result.notes)
    # Within one framework the same class is no framework difference: no such note.
    same = compare_dumps(dump("torch_L0_gelu"), dump("torch_L0"))
    assert not any("framework_defaults" in note for note in same.notes)


def test_fused_kernel_on_one_side_is_named_with_its_composed_form(tmp_path):
    # The real L1 dump of the GELU run with its activation call renamed to the fused torch_npu kernel.
    fused = tmp_path / "fused"
    shutil.copytree(dump("torch_L1_gelu"), fused)
    for file in fused.rglob("*.json"):
        file.write_text(file.read_text().replace("Functional.gelu.", "NPU.npu_swiglu."))
    result = compare_dumps(dump("torch_L1"), fused)
    [cause] = causes(result)
    assert "NPU.npu_swiglu.0" in cause.name
    assert "torch_npu.npu_swiglu is a fused kernel" in cause.message
    assert "silu(a) * b" in cause.message


def test_a_parameter_that_differs_at_step_0_is_the_cause(tmp_path):
    # The real L0 dump with fc2's weight statistics changed, as a run seeded differently would record them.
    changed = tmp_path / "weights"
    shutil.copytree(dump("torch_L0"), changed)
    file = next(changed.rglob("dump.json"))
    data = json.loads(file.read_text())
    fc2 = data["data"]["Module.fc2.Linear.forward.0"]
    fc2["parameters"]["weight"]["Norm"] *= 1.01
    fc2["output"][0]["Norm"] *= 1.01
    file.write_text(json.dumps(data))
    result = compare_dumps(dump("torch_L0"), changed)
    [cause] = causes(result)
    assert (cause.kind, cause.name) == ("init-weights", "fc2.weight")
    forward = {o.stage: o for o in result.stages}["forward"].mismatches
    assert [m.consequence_of for m in forward] == ["init-weights"]
    assert "its inputs agree but its parameters (weight) differ at step 0" in forward[0].message


def test_other_inputs_to_the_first_call_are_the_data_not_the_weights(tmp_path):
    # The real mix dump with the batch's statistics changed where the first calls receive it.
    changed = tmp_path / "data"
    shutil.copytree(dump("torch_mix"), changed)
    file = next(changed.rglob("dump.json"))
    data = json.loads(file.read_text())
    for name in ("Functional.linear.0.forward", "Module.fc1.Linear.forward.0"):
        data["data"][name]["input_args"][0]["Norm"] *= 1.1
        data["data"][name]["output"][0]["Norm"] *= 1.1
    file.write_text(json.dumps(data))
    result = compare_dumps(dump("torch_mix"), changed)
    [cause] = causes(result)
    assert (cause.kind, cause.name) == ("batch", "Functional.linear.0 args.0")
    stages = {o.stage: o for o in result.stages}
    assert not stages["weights"].mismatches  # the weights passed to linear as arguments are not the data
    forward = stages["forward"].mismatches
    assert forward[0].consequence_of == "batch" and not any(m.is_cause for m in forward)


def test_a_folder_that_is_no_dump_exits_2_saying_what_a_dump_holds(tmp_path):
    result = invoke(tmp_path, tmp_path)
    assert result.exit_code == 2
    assert "no msprobe dump here (expected step*/rank*/dump.json" in result.output


def test_tolerances_per_dtype_are_stated():
    result = invoke(dump("torch_mix"), dump("torch_mix_rerun"))
    assert "float32 1e-4" in result.output and "bfloat16 8e-3" in result.output
    result = invoke(dump("torch_mix"), dump("torch_mix_gelu"))
    assert "pre-check standard (cosine > 0.99 and max abs error < 1e-4)" in result.output


# ---------------------------------------------------------------------------- mapping files
def _renamed_copy(tmp_path: Path, old: str, new: str) -> Path:
    target = tmp_path / "renamed"
    shutil.copytree(dump("torch_L0"), target)
    for file in target.rglob("*.json"):
        file.write_text(file.read_text().replace(old, new))
    return target


def test_renamed_layers_differ_without_a_mapping_and_match_with_msprobe_mapping_files(tmp_path):
    renamed = _renamed_copy(tmp_path, "Module.fc1.", "Module.dense1.")
    unmapped = compare_dumps(renamed, dump("torch_L0"))
    names = {o.stage: o for o in unmapped.stages}["names"].summary
    assert "Module.dense1.Linear" in names and "Module.fc1.Linear" in names
    layer = tmp_path / "layer_mapping.yaml"
    layer.write_text("TopLayer:\n  dense1: fc1\n")
    assert compare_dumps(renamed, dump("torch_L0"), mapping=layer).ok
    cell = tmp_path / "cell_mapping.yaml"
    cell.write_text("dense1.Linear: fc1.Linear\n")
    result = invoke(renamed, dump("torch_L0"), "--mapping", cell)
    assert result.exit_code == 0, result.output


def test_dtype_spellings_are_one_dtype_in_tensors_and_arguments(tmp_path):
    from acclint.runtime_checks.dumps.reader import read_dump

    spelled = {"torch": ("torch.float32", "torch.dtype"), "mindspore": ("Float32", "mindspore.dtype")}
    read = {}
    for framework, (dtype, kind) in spelled.items():
        file = tmp_path / framework / "dump.json"
        file.parent.mkdir()
        tensor = {"type": "t", "dtype": dtype, "shape": [2], "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0}
        file.write_text(json.dumps({"framework": "pytorch" if framework == "torch" else "mindspore", "data": {
            "Functional.to.0.forward": {"input_args": [tensor], "output": [tensor],
                                        "input_kwargs": {"dtype": {"type": kind, "value": dtype}}}}}))
        read[framework] = read_dump(file, "rank0").nodes[0]
    torch_node, ms_node = read["torch"], read["mindspore"]
    assert torch_node.inputs["args"][0].dtype == ms_node.inputs["args"][0].dtype == "float32"
    assert torch_node.inputs["kwargs"]["dtype"].value == ms_node.inputs["kwargs"]["dtype"].value == "float32"


def test_cross_framework_classes_match_without_a_mapping_file():
    result = compare_dumps(dump("ms_L0"), dump("torch_L0"))
    assert result.ok  # Cell.fc1.Dense is Module.fc1.Linear: knowledge/msprobe_dumps.toml [classes]
    matched = {o.stage: o for o in result.stages}["forward"].summary
    assert matched.startswith("8 matched")


# ---------------------------------------------------------------------------- fingerprint against dump
def _mlp_fingerprint(tmp_path: Path, act: str) -> Path:
    import torch

    from acclint.runtime import capture
    from tools_gen import weights_and_batch

    data = weights_and_batch()
    model = torch.nn.Sequential()
    model.fc1 = torch.nn.Linear(8, 16)
    model.act = torch.nn.GELU() if act == "gelu" else torch.nn.ReLU()
    model.fc2 = torch.nn.Linear(16, 4)
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.copy_(torch.from_numpy(data[name]))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batch = (torch.from_numpy(data["x"]), torch.from_numpy(data["y"]))
    fingerprint = capture(model, optimizer, lambda m, b: torch.nn.functional.mse_loss(m(b[0]), b[1]), batch)
    return fingerprint.save(tmp_path / f"{act}.json")


@pytest.fixture
def tools_gen(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "tools"))
    import importlib

    module = importlib.import_module("gen_msprobe_fixtures")
    monkeypatch.setitem(__import__("sys").modules, "tools_gen", module)
    return module


def test_a_fingerprint_compares_with_a_dump_where_both_record_the_same(tmp_path, tools_gen):
    same = invoke(_mlp_fingerprint(tmp_path, "relu"), dump("torch_L0"))
    assert same.exit_code == 0, same.output
    assert "acclint fingerprint" in same.output
    changed = compare_dumps(_mlp_fingerprint(tmp_path, "gelu"), dump("torch_L0"))
    [cause] = causes(changed)
    assert cause.name == "Module.act.GELU"
    assert "the module is GELU on the left, ReLU on the right" in cause.message


# ---------------------------------------------------------------------------- HTML report
def test_the_html_report_shows_a_dump_comparison(tmp_path):
    from acclint.cli import main

    script = tmp_path / "train.py"
    script.write_text("import torch\n")
    output = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(script), "--fingerprints", str(dump("torch_mix")),
                                       str(dump("torch_mix_gelu")), "-o", str(output)])
    assert result.exit_code == 0, result.output
    page = output.read_text(encoding="utf-8")
    assert "Module.act.ReLU" in page
    assert "the module is ReLU on the left, GELU on the right" in page
    assert "an msprobe dump does not record it" in page  # stages a dump lacks: not compared, not passed
