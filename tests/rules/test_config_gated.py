"""Settings behind a configuration key: the `executes` premise and the program facts follow the run's
configuration (linter.runconfig). A branch only a config no run loads switches on is the user's opt-in
(info naming the key and where its default comes from); one a loaded config switches on is the run."""

from __future__ import annotations

import textwrap

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.rule_examples import scan_example
from acclint.rules import all_rules
from acclint.rules.determinism import _BENCHMARK_BY_CONFIG, CudnnBenchmark


def _acl202(tmp_path, index: int):
    example = CudnnBenchmark.invalid[index]
    _, result = scan_example(CudnnBenchmark(), example, tmp_path)
    found = [f for f in result.findings if f.rule == "ACL202"]
    assert len(found) == 1
    return found[0], {p.premise: p for p in found[0].premises}


def test_benchmark_written_in_a_training_entry_point_is_a_proven_warning(tmp_path):
    finding, premises = _acl202(tmp_path, 0)
    assert finding.severity == "warning" and finding.proven
    assert "`optimizer.step()`" in premises["trains"].evidence
    assert premises["executes"].evidence.endswith("runs in the program started by train.py")


def test_behind_a_key_the_default_config_sets_false_it_is_info_naming_the_key_and_the_file(tmp_path):
    finding, premises = _acl202(tmp_path, 1)
    assert finding.severity == "info" and not finding.proven
    executes = premises["executes"]
    assert not executes.proven
    assert "runs only when cfg.cudnn_benchmark is true, and `cudnn_benchmark` is set to False in " \
           "configs/default.yaml:2 (the default of `--config` at train.py:" in executes.evidence
    assert "Not proven: executes:" in finding.message


def test_behind_a_key_a_yaml_the_launch_passes_sets_true_it_is_a_proven_warning(tmp_path):
    finding, premises = _acl202(tmp_path, 2)
    assert finding.severity == "warning" and finding.proven
    assert "`cudnn_benchmark` is set to True in configs/fast.yaml:1 (passed at run.sh:1)" in \
        premises["executes"].evidence


def _write(tmp_path, files: dict) -> None:
    for name, source in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")


def _scan(tmp_path, files: dict, preview: bool = False) -> list:
    _write(tmp_path, files)
    return scan([tmp_path], all_rules(), Config(preview=preview), jobs=1, cwd=tmp_path).findings


MMENGINE_STYLE = """
    import argparse

    import torch
    from mmengine import Config


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("config")
        cfg = Config.fromfile(parser.parse_args().config)
        if cfg.get("cudnn_benchmark", False):
            torch.backends.cudnn.benchmark = True
        model = torch.nn.Conv2d(3, 8, 3)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(1, 3, 8, 8)).sum().backward()
        optimizer.step()


    if __name__ == "__main__":
        main()
"""


def test_a_key_no_config_of_the_project_sets_is_opt_in_in_preview_too(tmp_path):
    found = _scan(tmp_path, {"train.py": MMENGINE_STYLE, "configs/exp.py": "model = dict(type='Net')\nlr = 0.1\n"},
                  preview=True)
    finding = next(f for f in found if f.rule == "ACL202")
    assert finding.severity == "info"
    executes = next(p for p in finding.premises if p.premise == "executes")
    assert "runs only when `cudnn_benchmark` is set; no config of the project sets it (default False at train.py:11)" \
        in executes.evidence


def test_a_key_set_only_in_a_config_no_launch_loads_is_named(tmp_path):
    files = {"train.py": MMENGINE_STYLE, "configs/exp.py": "lr = 0.1\n", "configs/fast.py": "cudnn_benchmark = True\n",
             "run.sh": "python train.py configs/exp.py\n"}
    finding = next(f for f in _scan(tmp_path, files) if f.rule == "ACL202")
    assert finding.severity == "info"
    assert "set to True only in configs/fast.py:1, which no launch of this program loads" in finding.message


def test_an_unresolved_key_leaves_executes_unproven_and_says_why(tmp_path):
    files = {"train.py": MMENGINE_STYLE, "configs/fast.py": "cudnn_benchmark = True\n"}
    finding = next(f for f in _scan(tmp_path, files, preview=True) if f.rule == "ACL202")
    executes = next(p for p in finding.premises if p.premise == "executes")
    assert not executes.proven and "set in configs/fast.py:1" in executes.evidence
    assert finding.severity == "warning"  # unknown is not an opt-in: --preview keeps the rule's severity


# The ACL202 example's program, switching deterministic algorithms on instead (same lines).
DETERMINISTIC_BY_CONFIG = _BENCHMARK_BY_CONFIG.replace("cudnn_benchmark", "deterministic").replace(
    "torch.backends.cudnn.benchmark = True  # expect: ACL202", "torch.use_deterministic_algorithms(True)")


def test_a_determinism_switch_only_a_config_nobody_loads_turns_on_is_an_opt_in(tmp_path):
    found = _scan(tmp_path, {"train.py": DETERMINISTIC_BY_CONFIG, "configs/default.yaml": "deterministic: false\n"},
                  preview=True)
    acl201 = [f for f in found if f.rule == "ACL201"]
    assert len(acl201) == 1 and acl201[0].line == 13
    # A claim about the default run, which skips the line it is shown at: it does not rest on that line running.
    assert acl201[0].severity == "warning" and acl201[0].proven
    assert "executes" not in {p.premise for p in acl201[0].premises}
    assert "runs only when cfg.deterministic is true, and the config field `deterministic` defaults to False " \
           "(configs/default.yaml:1)" in acl201[0].message


def test_a_determinism_switch_the_loaded_config_turns_on_is_the_run(tmp_path):
    found = _scan(tmp_path, {"train.py": DETERMINISTIC_BY_CONFIG, "configs/default.yaml": "deterministic: true\n"},
                  preview=True)
    assert [f for f in found if f.rule == "ACL201"] == []


def test_a_determinism_switch_a_launch_config_turns_on_is_the_run(tmp_path):
    found = _scan(tmp_path, {"train.py": DETERMINISTIC_BY_CONFIG, "configs/default.yaml": "deterministic: false\n",
                             "configs/repro.yaml": "deterministic: true\n",
                             "run.sh": "python train.py --config configs/repro.yaml\n"}, preview=True)
    assert [f for f in found if f.rule == "ACL201" and f.path.endswith("train.py")] == []


# A model of a MindSpore-style zoo: the config path is required at launch, the launch scripts live in
# `scripts/` and name the config through a path normaliser, and the YAML holds (config, help texts).
ZOO_TRAIN = """
    import argparse

    import torch
    import yaml


    def get_config():
        parser = argparse.ArgumentParser()
        parser.add_argument("--config_path", type=str, required=True)
        parser.add_argument("--cudnn_benchmark", type=str, default=None)
        path = parser.parse_args().config_path
        with open(path) as f:
            cfg = list(yaml.load_all(f.read(), Loader=yaml.FullLoader))[0]
        return argparse.Namespace(**cfg)


    if __name__ == "__main__":
        config = get_config()
        if config.cudnn_benchmark:
            torch.backends.cudnn.benchmark = True
        model = torch.nn.Conv2d(3, 8, 3).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(1, 3, 8, 8).cuda()).sum().backward()
        optimizer.step()
"""

ZOO_LAUNCH = """
    #!/bin/bash
    get_real_path() {
      if [ "${1:0:1}" == "/" ]; then echo "$1"; else echo "$(realpath -m $PWD/$1)"; fi
    }
    config_path=$(get_real_path "./configs/default_config.yaml")
    BASE_PATH=$(cd "$(dirname $0)" || exit; pwd)
    python $BASE_PATH/../train.py --config_path="$config_path" EXTRA
"""

ZOO_CONFIG = """
    cudnn_benchmark: false
    lr: 0.1
    ---
    cudnn_benchmark: "whether cudnn picks the fastest kernels"
"""


def test_a_zoo_launch_script_in_scripts_decides_a_branch_through_the_config_it_names(tmp_path):
    found = [f for f in _scan(tmp_path, {"train.py": ZOO_TRAIN, "configs/default_config.yaml": ZOO_CONFIG,
                                         "scripts/run_train.sh": ZOO_LAUNCH.replace(" EXTRA", "")})
             if f.rule == "ACL202"]
    assert [f.severity for f in found] == ["info"]
    executes = next(p for p in found[0].premises if p.premise == "executes")
    assert "`cudnn_benchmark` is set to False in configs/default_config.yaml:1" in executes.evidence
    assert "scripts/run_train.sh" in executes.evidence


def test_a_zoo_launch_script_that_passes_the_flag_runs_the_branch(tmp_path):
    found = [f for f in _scan(tmp_path, {"train.py": ZOO_TRAIN, "configs/default_config.yaml": ZOO_CONFIG,
                                         "scripts/run_train.sh": ZOO_LAUNCH.replace("EXTRA",
                                                                                    "--cudnn_benchmark=True")})
             if f.rule == "ACL202"]
    assert [f.severity for f in found] == ["warning"]
    assert found[0].proven
