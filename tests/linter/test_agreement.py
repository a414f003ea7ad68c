"""The cache and the scope never change a result (docs/formats.md#files-given-and-context;
docs/cache.md): a file's findings are the same whether it is scanned cold or from a cache filled by an
earlier folder scan, alone or with its whole folder or repository. Checked on every bundled
example, every rule example, the shell fixtures, and a repository-shaped project of our own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from acclint.config import Config
from acclint.linter.analyze import analyze_file
from acclint.linter.cache import Cache
from acclint.linter.discovery import discover
from acclint.linter.engine import scan
from acclint.linter.facts import FileFacts
from acclint.linter.project import Project
from acclint.linter.rulebase import Rule, code
from acclint.rules import all_rules

RULES = all_rules()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SHELL_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "shell"


def claim(message: str) -> str:
    """The claim without what could not be proven: a helper given alone lacks the programs that
    prove its lines run in training, so its findings may say more there (docs/premises.md)."""
    return message.split(" Not proven: ")[0]


def keyed(result, path: str) -> set:
    return {(f.rule, f.line, f.column, claim(f.message)) for f in result.findings if f.path == path}


class Scans:
    """Scans of one project from its root: cold (no cache) or warm (a cache that a folder scan
    with a worker pool filled first)."""

    def __init__(self, root: Path, cache_root: Path):
        self.root = root
        self.cache_root = cache_root
        self.run([root], warm=True)  # fills the cache

    def run(self, paths: list, warm: bool):
        cache = Cache(self.cache_root, RULES, Config()) if warm else None
        result = scan(paths, RULES, Config(), jobs=2, cwd=self.root, cache=cache)
        assert result.errors == [], result.errors
        return result


def files_of(folder: Path) -> list:
    return discover([folder], folder).files


def program_starts(folder: Path) -> set:
    """Relative paths of the files that start something judged whole: entry scripts of training
    programs, and launch scripts with a run of one."""
    outcomes = [analyze_file(str(p), p.relative_to(folder).as_posix(), []) for p in files_of(folder)]
    facts = [o.facts for o in outcomes if o.facts is not None]
    shells = [f for f in facts if not isinstance(f, FileFacts)]
    project = Project([f for f in facts if isinstance(f, FileFacts)], shells, [str(folder)])
    starts = {program.entry.path for program in project.programs()}
    starts.update(run.launches[0][0].path for run in project.runs(shells))
    return starts


def per_file_findings(folder: Path, relative: str) -> set:
    outcome = analyze_file(str(folder / relative), relative, RULES)
    return {(f.rule, f.line, f.column, claim(f.message)) for f, *_ in outcome.findings}


def assert_agree(root: Path, cache_root: Path, scopes: tuple = ()) -> int:
    """For every file under `root`: cold and warm scans agree, alone and in the scan of `root`
    (and of each folder of `scopes`, relative to root, that holds it). A launch script or an entry
    script agrees exactly; a helper given alone lacks only the findings of the programs that
    reach it (and keeps its per-file findings). Returns the number of files that start a program."""
    scans = Scans(root, cache_root)
    whole = scans.run([root], warm=False)
    assert scans.run([root], warm=True).findings == whole.findings
    starts = program_starts(root)
    folders = {scope: (scans.run([root / scope], warm=False), scans.run([root / scope], warm=True)) for scope in scopes}
    for scope, (cold, warm) in folders.items():
        assert warm.findings == cold.findings, scope
    for path in files_of(root):
        relative = path.relative_to(root).as_posix()
        alone = keyed(scans.run([path], warm=False), relative)
        assert keyed(scans.run([path], warm=True), relative) == alone, relative
        wider = [keyed(whole, relative)] + [keyed(cold, relative) for scope, (cold, _) in folders.items()
                                            if relative.startswith(scope + "/")]
        for together in wider:
            if relative in starts or path.suffix == ".sh":
                assert alone == together, (relative, alone ^ together)
            else:
                assert alone <= together, (relative, alone - together)
        if path.suffix == ".py":
            assert per_file_findings(root, relative) <= alone, relative
    return len(starts)


def test_every_bundled_example_agrees_cold_warm_alone_and_in_its_folder(tmp_path):
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    assert assert_agree(tmp_path / "examples", tmp_path / "cache", scopes=("npu", "gpu")) >= 4


def test_the_shell_fixtures_agree_cold_warm_alone_and_in_their_folder(tmp_path):
    shutil.copytree(SHELL_FIXTURES, tmp_path / "shell")
    assert_agree(tmp_path / "shell", tmp_path / "cache")


EXAMPLE_FIXTURES = [
    pytest.param(example, id=f"{rule.code}-{kind}-{index}")
    for rule in RULES
    for kind, examples in (("invalid", rule.invalid), ("valid", rule.valid))
    for index, example in enumerate(examples)
]


@pytest.mark.parametrize("example", EXAMPLE_FIXTURES)
def test_every_rule_example_agrees_cold_warm_alone_and_in_its_folder(example, tmp_path):
    root = tmp_path / "p"
    for relative, source in example.on_disk().items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source, encoding="utf-8")
    assert_agree(root, tmp_path / "cache")


def test_the_rule_examples_that_start_programs_are_checked():
    # The agreement test above is only as strong as the fixtures that start a program: the rules
    # that judge whole programs must mostly be exemplified by programs.
    program_rules = [rule for rule in RULES if type(rule).check_program is not Rule.check_program]
    examples = [example for rule in program_rules for example in rule.invalid + rule.valid]
    starting = sum(any("__main__" in source or "value_and_grad" in source for source in example.files.values())
                   for example in examples)
    assert program_rules and starting >= len(examples) // 2


# -- a repository of our own: several programs, launch scripts in recipe folders, helpers -------
TRAINING_ENTRY = """
    import torch

    from model.gpt import GPT
    from utils.seeding import seed_all


    def main():
        seed_all(1234)
        torch.distributed.init_process_group(backend="hccl")
        model = GPT()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        model(torch.ones(2, 8)).sum().backward()
        optimizer.step()


    if __name__ == "__main__":
        main()
"""
NOT_TRAINING = """
    import torch

    from model.gpt import GPT


    def main():
        torch.distributed.init_process_group(backend="hccl")
        model = GPT()
        {body}


    if __name__ == "__main__":
        main()
"""
NPU_LAUNCH = """
    #!/bin/bash
    {exports}
    NPUS_PER_NODE=8
    DISTRIBUTED_ARGS="--nproc_per_node $NPUS_PER_NODE --nnodes 1 --master_port 6000"
    torchrun $DISTRIBUTED_ARGS {script} --seq-length 4096 {flags}
"""
REPOSITORY = {
    "pyproject.toml": "[project]\nname = 'tiny-llm'\n",
    "pretrain_gpt.py": TRAINING_ENTRY,
    "posttrain_gpt.py": TRAINING_ENTRY.replace("lr=1e-4", "lr=1e-5"),
    "inference.py": NOT_TRAINING.format(body="print(model(torch.ones(2, 8)))"),
    "evaluation.py": NOT_TRAINING.format(body="print(model(torch.ones(2, 8)).mean())"),
    "tools/convert_ckpt.py": NOT_TRAINING.format(body="torch.save(model.state_dict(), 'out.pt')"),
    "tools/preprocess_data.py": """
        import json


        if __name__ == "__main__":
            print(json.dumps({"tokens": 3}))
    """,
    "model/__init__.py": "",
    "model/gpt.py": """
        import torch


        class GPT(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(8, 8)
                self.drop = torch.nn.Dropout(p=0.1)

            def forward(self, x):
                return self.drop(self.proj(x))
    """,
    "utils/__init__.py": "",
    "utils/seeding.py": """
        import random

        import numpy as np
        import torch


        def seed_all(seed):
            random.seed(seed)
            np.random.seed(seed)
            torch.manual_seed(seed)
            torch.backends.cudnn.benchmark = True
    """,
    "run_local.sh": "#!/bin/bash\nexport PYTHONHASHSEED=0\ntorchrun --nproc_per_node 2 pretrain_gpt.py\n",
    "examples/llama/pretrain_llama.sh": NPU_LAUNCH.format(exports="", script="pretrain_gpt.py",
                                                          flags="--attention-dropout 0.1"),
    "examples/llama/pretrain_llama_det.sh": NPU_LAUNCH.format(exports="export HCCL_DETERMINISTIC=true",
                                                              script="pretrain_gpt.py", flags=""),
    "examples/llama/generate_llama.sh": NPU_LAUNCH.format(exports="", script="inference.py", flags=""),
    "examples/llama/evaluate_llama.sh": NPU_LAUNCH.format(exports="", script="evaluation.py", flags=""),
    "examples/qwen/posttrain_qwen.sh": NPU_LAUNCH.format(exports="export PYTHONHASHSEED=0",
                                                         script="posttrain_gpt.py", flags="--use-fused-rmsnorm"),
    "examples/qwen/ckpt_convert_qwen.sh": NPU_LAUNCH.format(exports="", script="tools/convert_ckpt.py", flags=""),
    "examples/qwen/data_convert_qwen.sh": "#!/bin/bash\npython tools/preprocess_data.py --workers 4\n",
    "examples/moe/pretrain_moe.sh": NPU_LAUNCH.format(exports="", script="pretrain_moe.py", flags=""),
    "examples/moe/generate_moe.sh": NPU_LAUNCH.format(exports="", script="generate_moe.py", flags=""),
    "examples/moe/launch_moe.sh": NPU_LAUNCH.format(exports="", script="launcher.py", flags=""),
    # Imports are found where Python finds them, never through the folder a scan was given:
    # `tools/` is no import root of `tools/ft/finetune_small.py`, whether `tools/` is scanned or not.
    "tools/common.py": """
        import torch


        def make_deterministic():
            torch.use_deterministic_algorithms(True)
    """,
    "tools/ft/finetune_small.py": """
        import torch

        from common import make_deterministic


        if __name__ == "__main__":
            make_deterministic()
            model = torch.nn.Linear(2, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.ones(2)).sum().backward()
            optimizer.step()
    """,
    "tests/test_gpt.py": """
        import torch

        from model.gpt import GPT


        def test_forward():
            assert GPT()(torch.ones(2, 8)).shape == (2, 8)
    """,
}


def _repository(root: Path) -> Path:
    for relative, source in REPOSITORY.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code(source), encoding="utf-8")
    return root


def test_a_repository_agrees_cold_warm_alone_per_folder_and_whole(tmp_path):
    root = _repository(tmp_path / "repo")
    assert len(files_of(root)) >= 16  # enough for the worker pool that fills the cache
    starts = assert_agree(root, tmp_path / "cache", scopes=("examples", "examples/llama", "examples/qwen", "tools"))
    assert starts >= 6  # two training entries, four launch scripts with a training run


def test_acl205_judges_each_launch_by_the_script_it_runs(tmp_path):
    root = _repository(tmp_path / "repo")
    whole = scan([root], RULES, Config(), jobs=1, cwd=root)
    reported = sorted(f.path for f in whole.findings if f.rule == "ACL205")
    # Training runs without HCCL_DETERMINISTIC (the script found at the repository root, or not
    # on disk but named as training); never the launches of inference, evaluation or conversion
    # scripts, nor of a script not on disk whose name says nothing. posttrain_gpt.py has no launch
    # script beside it, so it is judged (and reported) as a program with no known launch.
    assert reported == ["examples/llama/pretrain_llama.sh", "examples/moe/pretrain_moe.sh",
                        "examples/qwen/posttrain_qwen.sh", "posttrain_gpt.py", "run_local.sh"]
    # Each run is judged with its own launch only: another recipe exporting the variable for the
    # same entry script does not silence this one, and scanning the entry script too changes nothing.
    alone = scan([root / "examples/llama/pretrain_llama.sh"], RULES, Config(), jobs=1, cwd=root)
    with_entry = scan([root / "examples/llama/pretrain_llama.sh", root / "pretrain_gpt.py"], RULES, Config(), jobs=1,
                      cwd=root)
    assert keyed(alone, "examples/llama/pretrain_llama.sh") == keyed(with_entry, "examples/llama/pretrain_llama.sh")
    assert "ACL205" in {rule for rule, *_ in keyed(alone, "examples/llama/pretrain_llama.sh")}
    # A flag of the launch line lands on it from its run (dropout of the alignment run).
    assert ("ACL209", 5) in {(rule, line) for rule, line, *_ in keyed(alone, "examples/llama/pretrain_llama.sh")}
