"""The run's configuration (linter.runconfig, linter.config_values): which branches a run takes, from
the launch's flags, the config files the run loads and the defaults written in the code. Every test
is a tiny training program on disk (an optimizer step), scanned by the engine."""

from __future__ import annotations

import textwrap

from acclint.config import Config
from acclint.linter.config_values import ConfigFiles
from acclint.linter.engine import scan
from acclint.linter.facts import FlagGuard
from acclint.linter.rulebase import Rule
from acclint.linter.runconfig import SKIPPED, TAKEN, UNKNOWN, flow_guards, run_config

TRAIN_STEP = """
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2)).sum().backward()
    opt.step()
"""


class _Capture(Rule):
    """Keeps each program the engine checks, with its project."""

    code, name, category, severity, summary = "ACL999", "capture", "seed", "info", "test only"

    def __init__(self):
        self.programs = {}

    def check_program(self, ctx):
        self.programs.setdefault(ctx.program.entry.path, (ctx.project, ctx.program))


def _scan(tmp_path, files: dict, entry: str = "train.py"):
    for name, source in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    capture = _Capture()
    result = scan([tmp_path], [capture], Config(), jobs=1, cwd=tmp_path)
    assert result.errors == []
    return next(found for path, found in capture.programs.items() if path == entry or path.endswith("/" + entry))


def _branch(tmp_path, files: dict, callee: str, entry: str = "train.py"):
    """The branch the program's runs take at the first step calling `callee` (its guards, callers' too)."""
    project, program = _scan(tmp_path, files, entry)
    guards = flow_guards(program)
    index = next(i for i, step in enumerate(program.flow) if getattr(step.fact, "callee", None) == callee)
    return run_config(project, program).branch(guards[index])


def _program(body: str, header: str = "") -> str:
    """A training entry point: `header` at module level, `body` in main() before a training step."""
    indented = textwrap.indent(textwrap.dedent(body), "    ")
    step = textwrap.indent(textwrap.dedent(TRAIN_STEP), "    ")
    return f"import argparse\n\nimport torch\n{textwrap.dedent(header)}\n\ndef main():\n{indented}{step}\n\n" \
           "if __name__ == \"__main__\":\n    main()\n"


ARGPARSE_AMP = _program("""
    parser = argparse.ArgumentParser()
    parser.add_argument("--amp", action="store_true")
    args = parser.parse_args()
    if args.amp:
        enable_amp()
""", "\n\ndef enable_amp():\n    torch.backends.cudnn.benchmark = True\n")


# -- argparse, click and launch flags ------------------------------------------------------------


def test_an_argparse_switch_off_by_default_is_skipped_and_names_the_flag(tmp_path):
    branch = _branch(tmp_path, {"train.py": ARGPARSE_AMP}, "enable_amp")
    assert branch.state == SKIPPED
    assert "runs only when args.amp is true, and `--amp` defaults to False (" in branch.evidence
    assert "train.py:" in branch.evidence


def test_a_launch_line_passing_the_switch_takes_the_branch(tmp_path):
    branch = _branch(tmp_path, {"train.py": ARGPARSE_AMP, "run.sh": "python train.py --amp --lr 0.1\n"}, "enable_amp")
    assert branch.state == TAKEN
    assert "`--amp` is passed by" in branch.evidence and "run.sh:1" in branch.evidence


def test_a_launch_line_saying_no_keeps_it_skipped(tmp_path):
    source = ARGPARSE_AMP.replace('action="store_true"', "type=str, default=\"True\"")
    branch = _branch(tmp_path, {"train.py": source, "run.sh": "python train.py --amp False\n"}, "enable_amp")
    assert branch.state == SKIPPED and "passed as False" in branch.evidence


CLICK_COMMAND = """
    import click
    import torch


    @click.command()
    @click.option("--mixed-precision", "amp", is_flag=True)
    @click.option("--lr", default=0.1)
    def main(amp, lr):
        if amp:
            enable_amp()
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        model(torch.ones(2)).sum().backward()
        opt.step()


    def enable_amp():
        pass


    if __name__ == "__main__":
        main()
"""


def test_a_click_flag_defaults_to_off_and_a_launch_passing_it_takes_the_branch(tmp_path):
    branch = _branch(tmp_path, {"train.py": CLICK_COMMAND}, "enable_amp")
    assert branch.state == SKIPPED and "`--mixed-precision` defaults to False" in branch.evidence
    (tmp_path / "run.sh").write_text("python train.py --mixed-precision --lr 0.2\n")
    assert _branch(tmp_path, {}, "enable_amp").state == TAKEN


# -- YAML / JSON passed on the command line, and the default config path -------------------------

CFG_GET = _program("""
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/default.yaml")
    args = parser.parse_args()
    cfg = load(args.config)
    if cfg.get("cudnn_benchmark", False):
        enable_benchmark()
""", "\n\ndef load(path):\n    return {}\n\n\ndef enable_benchmark():\n    torch.backends.cudnn.benchmark = True\n")


def test_the_default_config_path_sets_the_key_off_and_an_unloaded_config_is_named(tmp_path):
    branch = _branch(tmp_path, {"train.py": CFG_GET, "configs/default.yaml": "lr: 0.1\ncudnn_benchmark: false\n",
                                "configs/fast.yaml": "cudnn_benchmark: true\n"}, "enable_benchmark")
    assert branch.state == SKIPPED
    assert "`cudnn_benchmark` is set to False in" in branch.evidence and "configs/default.yaml:2" in branch.evidence
    assert "the default of `--config`" in branch.evidence
    assert "set to True only in" in branch.evidence and "configs/fast.yaml:1, which no launch of this program loads" \
        in branch.evidence


def test_a_key_no_config_sets_falls_back_to_the_lookup_default(tmp_path):
    branch = _branch(tmp_path, {"train.py": CFG_GET, "configs/default.yaml": "lr: 0.1\n"}, "enable_benchmark")
    assert branch.state == SKIPPED
    assert "`cudnn_benchmark` defaults to False" in branch.evidence and "train.py:" in branch.evidence


def test_a_yaml_passed_by_the_launch_sets_it_on(tmp_path):
    branch = _branch(tmp_path, {"train.py": CFG_GET, "configs/default.yaml": "cudnn_benchmark: false\n",
                                "configs/fast.yaml": "model:\n  depth: 2\ncudnn_benchmark: true\n",
                                "run.sh": "python train.py --config configs/fast.yaml\n"},
                     "enable_benchmark")
    assert branch.state == TAKEN
    assert "`cudnn_benchmark` is set to True in" in branch.evidence and "configs/fast.yaml:3" in branch.evidence
    assert "passed at" in branch.evidence and "run.sh:1" in branch.evidence


def test_a_positional_json_config_and_a_nested_key(tmp_path):
    source = CFG_GET.replace('cfg.get("cudnn_benchmark", False)', "cfg.train.deterministic") \
        .replace('parser.add_argument("--config", default="configs/default.yaml")', 'parser.add_argument("config")') \
        .replace("cfg = load(args.config)", "cfg = parser.parse_args()")
    branch = _branch(tmp_path, {"train.py": source,
                                "exp.json": '{\n  "train": {\n    "deterministic": true\n  }\n}\n',
                                "run.sh": "python train.py exp.json\n"}, "enable_benchmark")
    assert branch.state == TAKEN and "`train.deterministic` is set to True in" in branch.evidence
    assert "exp.json:3" in branch.evidence


def test_a_config_the_launch_passes_that_cannot_be_read_leaves_the_branch_unknown(tmp_path):
    branch = _branch(tmp_path, {"train.py": CFG_GET, "configs/fast.yaml": "cudnn_benchmark: true\n",
                                "run.sh": "python train.py --config $CONFIG\n"}, "enable_benchmark")
    assert branch.state == UNKNOWN
    assert "is not in the project" in branch.evidence and "configs/fast.yaml:1" in branch.evidence


def test_a_config_named_only_at_launch_with_no_config_setting_the_key_takes_the_default(tmp_path):
    source = CFG_GET.replace('parser.add_argument("--config", default="configs/default.yaml")',
                             'parser.add_argument("config")')
    branch = _branch(tmp_path, {"train.py": source, "configs/a.yaml": "lr: 0.1\n"}, "enable_benchmark")
    assert branch.state == SKIPPED
    assert branch.evidence.startswith("runs only when `cudnn_benchmark` is set; no config of the project sets it "
                                      "(default False at ")


def test_a_config_named_only_at_launch_that_some_config_sets_is_unknown(tmp_path):
    source = CFG_GET.replace('parser.add_argument("--config", default="configs/default.yaml")',
                             'parser.add_argument("config")')
    branch = _branch(tmp_path, {"train.py": source, "configs/a.yaml": "cudnn_benchmark: true\n"}, "enable_benchmark")
    assert branch.state == UNKNOWN and "configs/a.yaml:1" in branch.evidence


# -- Python configs with _base_, LazyConfig imports --------------------------------------------


def test_python_config_inheritance_with_base_and_delete(tmp_path):
    (tmp_path / "_base_").mkdir()
    (tmp_path / "_base_" / "runtime.py").write_text(
        "env_cfg = dict(cudnn_benchmark=True, mp_cfg=dict(start='fork'))\nmodel = dict(type='Net', depth=50)\n")
    (tmp_path / "exp.py").write_text(
        "_base_ = ['./_base_/runtime.py']\nmodel = dict(_delete_=True, type='Small')\n"
        "env_cfg = dict(cudnn_benchmark=False)\nimport os\nx = os.environ['X']\n")
    values = ConfigFiles().read(str(tmp_path / "exp.py"))
    assert values.problem is None
    assert values.values[("env_cfg", "cudnn_benchmark")].value is False
    assert values.values[("env_cfg", "cudnn_benchmark")].line == 3
    assert values.values[("env_cfg", "mp_cfg", "start")].value == "fork"  # merged from the base
    assert ("model", "depth") not in values.values  # dropped by _delete_
    assert values.values[("model", "type")].value == "Small"
    assert repr(values.values[("x",)].value) == "<expr>"  # code, not a value: never executed


def test_a_python_config_passed_by_the_launch_decides_a_nested_guard(tmp_path):
    source = _program("""
        parser = argparse.ArgumentParser()
        parser.add_argument("config")
        args = parser.parse_args()
        cfg = Config.fromfile(args.config)
        if cfg.env_cfg.cudnn_benchmark:
            enable_benchmark()
    """, "from mmengine import Config\n\n\ndef enable_benchmark():\n    pass\n")
    files = {"train.py": source, "configs/_base_/runtime.py": "env_cfg = dict(cudnn_benchmark=True)\n",
             "configs/exp.py": "_base_ = ['./_base_/runtime.py']\nlr = 0.1\n",
             "dist_train.sh": "python -m torch.distributed.launch train.py configs/exp.py --launcher pytorch\n"}
    branch = _branch(tmp_path, files, "enable_benchmark")
    assert branch.state == TAKEN and "configs/_base_/runtime.py:1" in branch.evidence


def test_lazyconfig_relative_imports_root_the_module_values(tmp_path):
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "train.py").write_text("train = dict(amp=dict(enabled=True), max_iter=10)\n")
    (tmp_path / "exp.py").write_text("from .common.train import train\ntrain.max_iter = 5\n")
    values = ConfigFiles().read(str(tmp_path / "exp.py"))
    assert values.values[("train", "amp", "enabled")].value is True


# -- Hydra / OmegaConf ------------------------------------------------------------------------


def test_hydra_main_composes_its_defaults_list(tmp_path):
    source = _program("""
        if cfg.trainer.deterministic:
            enable_benchmark()
        if cfg.get("benchmark", False):
            enable_benchmark_too()
    """, "import hydra\n\n\ndef enable_benchmark():\n    pass\n\n\ndef enable_benchmark_too():\n    pass\n")
    source = source.replace("def main():", '@hydra.main(config_path="conf", config_name="config")\ndef main(cfg):')
    files = {"train.py": source, "conf/config.yaml": "defaults:\n  - trainer: fast\n  - _self_\nlr: 0.1\n",
             "conf/trainer/fast.yaml": "deterministic: true\n", "conf/trainer/slow.yaml": "benchmark: true\n"}
    assert _branch(tmp_path, files, "enable_benchmark").state == TAKEN
    too = _branch(tmp_path, files, "enable_benchmark_too")
    assert too.state == SKIPPED and "`benchmark` defaults to False" in too.evidence


def test_hydra_overrides_on_the_command_line(tmp_path):
    source = _program("""
        if cfg.trainer.deterministic:
            enable_benchmark()
    """, "import hydra\n\n\ndef enable_benchmark():\n    pass\n")
    source = source.replace("def main():", '@hydra.main(config_path="conf", config_name="config")\ndef main(cfg):')
    files = {"train.py": source, "conf/config.yaml": "trainer:\n  deterministic: true\n",
             "run.sh": "python train.py trainer.deterministic=false\n"}
    branch = _branch(tmp_path, files, "enable_benchmark")
    assert branch.state == SKIPPED and "`trainer.deterministic` is passed as False" in branch.evidence


# -- dataclass fields and getattr defaults -------------------------------------------------------


def test_dataclass_field_default_and_getattr_default(tmp_path):
    source = _program("""
        config = TrainConfig()
        if config.compile:
            enable_compile()
        if getattr(config, "channels_last", True):
            enable_channels_last()
    """, "from dataclasses import dataclass\n\n\n@dataclass\nclass TrainConfig:\n    compile: bool = False\n"
         "\n\ndef enable_compile():\n    pass\n\n\ndef enable_channels_last():\n    pass\n")
    compiled = _branch(tmp_path, {"train.py": source}, "enable_compile")
    assert compiled.state == SKIPPED and "`compile` defaults to False" in compiled.evidence
    assert _branch(tmp_path, {"train.py": source}, "enable_channels_last").state == TAKEN


def test_a_configuration_key_nothing_resolves_is_unknown_not_taken(tmp_path):
    source = _program("""
        from transformers import HfArgumentParser, TrainingArguments
        (args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
        if args.fp16:
            enable_benchmark()
    """, "\n\ndef enable_benchmark():\n    pass\n")
    branch = _branch(tmp_path, {"train.py": source}, "enable_benchmark")
    assert branch is None or branch.state != TAKEN


def test_a_plain_local_or_an_attribute_of_the_program_is_not_configuration(tmp_path):
    source = _program("""
        use_cuda = torch.cuda.is_available()
        if use_cuda:
            enable_benchmark()
    """, "\n\ndef enable_benchmark():\n    pass\n")
    assert _branch(tmp_path, {"train.py": source}, "enable_benchmark") is None


# -- bounded cost: read once, size-limited, bad input ignored ----------------------------------


def test_bad_yaml_is_ignored_without_a_traceback(tmp_path):
    branch = _branch(tmp_path, {"train.py": CFG_GET, "configs/default.yaml": "cudnn_benchmark: [true\n  bad: :\n"},
                     "enable_benchmark")
    assert branch.state == UNKNOWN and "could not be read (invalid YAML" in branch.evidence


def test_each_config_is_read_once_and_large_ones_are_not_read(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text("x: 1\n")
    files = ConfigFiles()
    first = files.read(str(path))
    path.write_text("x: 2\n")
    assert files.read(str(path)) is first and first.values[("x",)].value == 1
    big = tmp_path / "big.yaml"
    big.write_text("x: 1\n" + "# padding\n" * 200_000)
    assert files.read(str(big)).problem is not None


def test_a_base_cycle_stops(tmp_path):
    (tmp_path / "a.py").write_text("_base_ = './b.py'\nx = 1\n")
    (tmp_path / "b.py").write_text("_base_ = './a.py'\ny = 2\n")
    values = ConfigFiles().read(str(tmp_path / "a.py"))
    assert values.values[("x",)].value == 1 and values.values[("y",)].value == 2


def test_a_guard_written_as_a_lookup_records_its_default(tmp_path):
    project, program = _scan(tmp_path, {"train.py": CFG_GET, "configs/default.yaml": "lr: 0.1\n"})
    guards = [g for step_guards in flow_guards(program) for g, _ in step_guards]
    assert FlagGuard("cfg.cudnn_benchmark", "truthy", fallback=False) in guards


def test_a_launch_passing_the_declared_option_of_another_destination_takes_the_branch(tmp_path):
    source = ARGPARSE_AMP.replace('parser.add_argument("--amp", action="store_true")',
                                  'parser.add_argument("--mixed-precision", dest="amp", action="store_true")')
    files = {"train.py": source, "run.sh": "python train.py --mixed-precision\n"}
    assert _branch(tmp_path, files, "enable_amp").state == TAKEN


def test_an_attribute_the_program_computes_is_not_a_configuration_question(tmp_path):
    source = _program("""
        parser = argparse.ArgumentParser()
        parser.add_argument("--world-size", type=int, default=1)
        args = parser.parse_args()
        args.distributed = args.world_size > 1
        if args.distributed:
            enable_benchmark()
    """, "\n\ndef enable_benchmark():\n    pass\n")
    assert _branch(tmp_path, {"train.py": source}, "enable_benchmark") is None


HYDRA_SEEDED = _program("""
    if cfg.get("seed"):
        torch.manual_seed(cfg.seed)
""").replace("def main():", '@hydra.main(config_path="configs", config_name="train")\ndef main(cfg):') \
    .replace("import argparse", "import argparse\n\nimport hydra")
HYDRA_CONFIGS = {"configs/train.yaml": "defaults:\n  - _self_\n  - experiment: null\nseed: null\n",
                 "configs/experiment/example.yaml": "# @package _global_\nseed: 12345\n"}


def test_a_hydra_group_option_the_launch_selects_is_composed_with_its_package(tmp_path):
    files = {"train.py": HYDRA_SEEDED, **HYDRA_CONFIGS}
    skipped = _branch(tmp_path, files, "torch.manual_seed")
    assert skipped.state == SKIPPED and "`seed` is set to None in configs/train.yaml:4" in skipped.evidence
    assert "set to 12345 only in configs/experiment/example.yaml:2" in skipped.evidence
    (tmp_path / "run.sh").write_text("python train.py experiment=example\n")
    taken = _branch(tmp_path, {}, "torch.manual_seed")
    assert taken.state == TAKEN and "configs/experiment/example.yaml:2 (selected at run.sh:1)" in taken.evidence


def test_a_hydra_group_option_not_in_the_project_is_unknown(tmp_path):
    files = {"train.py": HYDRA_SEEDED, **HYDRA_CONFIGS, "run.sh": "python train.py experiment=my_experiment.yaml\n"}
    branch = _branch(tmp_path, files, "torch.manual_seed")
    assert branch.state == UNKNOWN and "experiment=my_experiment.yaml" in branch.evidence


def test_a_required_option_is_given_by_every_run(tmp_path):
    source = ARGPARSE_AMP.replace('parser.add_argument("--amp", action="store_true")',
                                  'parser.add_argument("--amp", type=int, required=True)') \
        .replace("if args.amp:", "if args.amp is not None:")
    branch = _branch(tmp_path, {"train.py": source}, "enable_amp")
    assert branch.state == TAKEN and "`--amp` is required" in branch.evidence
