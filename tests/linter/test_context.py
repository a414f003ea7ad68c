"""Files given and context: a one-file scan judges the file's program whole, reports only on the
file, and agrees with a scan of the whole folder (docs/formats.md#files-given-and-context)."""

from __future__ import annotations

import shutil
from pathlib import Path
from textwrap import dedent

import pytest

from acclint.config import Config
from acclint.linter.analyze import analyze_file
from acclint.linter.discovery import discover
from acclint.linter.engine import ContextLoader, read_context, scan
from acclint.linter.facts import FileFacts
from acclint.linter.project import Project
from acclint.linter.rulebase import Rule, code
from acclint.rules import all_rules

RULES = all_rules()


def write(root: Path, files: dict) -> Path:
    for relative, source in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code(source), encoding="utf-8")
    return root


def findings(paths, cwd: Path, rules=RULES):
    result = scan([Path(p) for p in paths], rules, Config(), jobs=1, cwd=cwd)
    assert result.errors == [], result.errors
    return result


def keyed(result, path: str) -> set:
    return {(f.rule, f.line, f.column, f.message) for f in result.findings if f.path == path}


# The agreement of one-file, folder, cold and warm scans on every example: test_agreement.py.


SEED_HELPER = """
    import random

    import numpy as np
    import torch


    def seed_everything(seed):
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        torch.use_deterministic_algorithms(True)
"""

TRAIN_WITH_HELPER = """
    import os
    import sys

    import torch
    {import_line}

    if os.environ.get("PYTHONHASHSEED") != "0":  # read at start-up only: restart with it set
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, *sys.argv])


    def main():
        seed_everything(0)
        model = torch.nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(4)).sum().backward()
        optimizer.step()


    if __name__ == "__main__":
        main()
"""


def test_entry_script_alone_reads_its_seed_helper_from_disk(tmp_path):
    write(tmp_path, {"seeding.py": SEED_HELPER,
                     "train.py": TRAIN_WITH_HELPER.format(import_line="from seeding import seed_everything")})
    assert findings([tmp_path / "train.py"], tmp_path).findings == []
    # Without the helper on disk its determinism switch is unknown: the helper was really read.
    # (An unseen helper named like a seeder is taken to seed, so no ACL104 then.)
    (tmp_path / "seeding.py").unlink()
    assert "ACL201" in {f.rule for f in findings([tmp_path / "train.py"], tmp_path).findings}


def test_package_entry_point_with_a_relative_import(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/seeding.py": SEED_HELPER,
                     "pkg/train.py": TRAIN_WITH_HELPER.format(import_line="from .seeding import seed_everything")})
    assert findings([tmp_path / "pkg" / "train.py"], tmp_path).findings == []


def test_src_layout_import_from_a_script_folder(tmp_path):
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'mypkg'\n", "src/mypkg/__init__.py": "",
                     "src/mypkg/seeding.py": SEED_HELPER,
                     "scripts/train.py": TRAIN_WITH_HELPER.format(import_line="from mypkg.seeding import seed_everything")})
    assert findings([tmp_path / "scripts" / "train.py"], tmp_path).findings == []
    assert findings([tmp_path / "scripts"], tmp_path).findings == []


def test_context_files_are_judged_but_not_reported(tmp_path):
    write(tmp_path, {
        "seeding.py": code(SEED_HELPER) + "\n\ndef fast():\n    torch.backends.cudnn.benchmark = True\n",
        "train.py": TRAIN_WITH_HELPER.format(import_line="from seeding import seed_everything"),
    })
    result = findings([tmp_path / "train.py"], tmp_path)
    assert result.findings == [] and result.files_scanned == 1
    whole = findings([tmp_path], tmp_path)
    assert [(f.path, f.rule) for f in whole.findings] == [("seeding.py", "ACL202")]


def test_a_one_file_scan_reads_only_what_its_program_reaches(tmp_path):
    write(tmp_path, {
        "seeding.py": SEED_HELPER,
        "train.py": TRAIN_WITH_HELPER.format(import_line="from seeding import seed_everything"),
        "unrelated.py": "import torch\n",
        "other/tool.py": "import seeding\n",
        "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py\n",
        "other/run_tool.sh": "#!/bin/bash\npython tool.py\n",
    })
    given = analyze_file(str(tmp_path / "train.py"), "train.py", []).facts
    loader = ContextLoader(tmp_path, tmp_path, (), failed={given.abspath})
    project = Project([given], [], [str(tmp_path)], loader=loader)
    read_context(project, [given], [], loader, jobs=1)
    assert sorted(Path(p).name for p in project.files) == ["seeding.py", "train.py"]
    assert [Path(p).name for p in project.shells] == ["run.sh"]


def test_launch_script_beside_the_entry_supplies_its_environment(tmp_path):
    write(tmp_path, {
        "train.py": """
            import random

            import numpy as np
            import torch


            if __name__ == "__main__":
                random.seed(0)
                np.random.seed(0)
                torch.manual_seed(0)
                torch.use_deterministic_algorithms(True)
                model = torch.nn.Linear(4, 1)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.ones(4)).sum().backward()
                optimizer.step()
        """,
        "run.sh": "#!/bin/bash\nexport PYTHONHASHSEED=0\ntorchrun --nproc_per_node 8 train.py\n",
    })
    assert findings([tmp_path / "train.py"], tmp_path).findings == []
    (tmp_path / "run.sh").unlink()
    assert [f.rule for f in findings([tmp_path / "train.py"], tmp_path).findings] == ["ACL102"]


def test_launch_script_alone_reads_the_script_it_runs(tmp_path):
    write(tmp_path, {
        "train.py": """
            import torch


            if __name__ == "__main__":
                torch.distributed.init_process_group(backend="hccl")
                model = torch.nn.Linear(2, 1)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.ones(2)).sum().backward()
                optimizer.step()
        """,
        "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py\n",
    })
    alone = findings([tmp_path / "run.sh"], tmp_path)
    assert [(f.path, f.line, f.rule) for f in alone.findings] == [("run.sh", 2, "ACL205")]
    assert alone.files_scanned == 1


# -- explicit settings are reported where they are written -------------------------------------
BACKEND_HELPER = """
    import torch


    def setup_backend():
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.deterministic = False
        torch.use_deterministic_algorithms(False)
"""


@pytest.mark.parametrize("layout", ["alone", "unreached", "reached"])
def test_explicit_settings_fire_in_any_file(layout, tmp_path):
    files = {"backend.py": BACKEND_HELPER}
    if layout != "alone":
        call = "    setup_backend()\n" if layout == "reached" else ""
        files["train.py"] = (
            "import torch\nfrom backend import setup_backend\n\n\nif __name__ == '__main__':\n" + call +
            "    model = torch.nn.Linear(2, 1)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "    model(torch.ones(2)).sum().backward()\n    optimizer.step()\n")
    write(tmp_path, files)
    for given in ([tmp_path / "backend.py"], [tmp_path]):
        result = findings(given, tmp_path)
        lines = sorted((f.line, f.rule) for f in result.findings if f.path == "backend.py")
        assert lines == [(5, "ACL202"), (6, "ACL203"), (7, "ACL201")], (layout, given, result.findings)


def test_a_switch_turned_off_is_reported_once_not_again_by_the_program(tmp_path):
    write(tmp_path, {"train.py": """
        import torch


        if __name__ == "__main__":
            torch.use_deterministic_algorithms(False)
            model = torch.nn.Linear(2, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.ones(2)).sum().backward()
            optimizer.step()
    """})
    acl201 = [f for f in findings([tmp_path], tmp_path).findings if f.rule == "ACL201"]
    assert [(f.line, "switches deterministic algorithms off" in f.message) for f in acl201] == [(5, True)]


# -- one finding per place ---------------------------------------------------------------------
def test_a_line_shared_by_several_programs_is_reported_once(tmp_path):
    entry = """
        import torch
        from common import build


        if __name__ == "__main__":
            model = build()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.ones(2)).sum().backward()
            optimizer.step()
    """
    write(tmp_path, {
        "common.py": """
            import torch


            def build():
                return torch.nn.Dropout(p=0.1)
        """,
        "train_a.py": entry, "train_b.py": entry, "train_c.py": entry,
    })
    for name in ("train_a.py", "train_b.py", "train_c.py"):
        (tmp_path / name).write_text(dedent(entry).replace("if __name__", "torch.manual_seed(0)\n\nif __name__"))
    shared = [f for f in findings([tmp_path], tmp_path).findings if f.path == "common.py"]
    assert [(f.rule, f.line) for f in shared] == [("ACL209", 5)]
    assert "reached by 3 programs; shown for the one started by train_a.py" in shared[0].message


# -- the right programs ----------------------------------------------------------------------
def programs_of(tmp_path: Path, files: dict) -> list:
    write(tmp_path, files)
    outcomes = [analyze_file(str(p), p.relative_to(tmp_path).as_posix(), []).facts
                for p in discover([tmp_path], tmp_path).files]
    project = Project([o for o in outcomes if isinstance(o, FileFacts)], [], [str(tmp_path)])
    return sorted(p.entry.path for p in project.programs())


KERNEL_SELF_TEST = """
    import torch
    import triton


    @triton.jit
    def _kernel(x_ptr):
        pass


    def layer_norm(x):
        return x * 2


    def test_layer_norm():
        x = torch.randn(8, requires_grad=True)
        y = layer_norm(x)
        y.backward(torch.ones_like(y))
        assert torch.allclose(x.grad, torch.full_like(x, 2.0))


    if __name__ == "__main__":
        test_layer_norm()
"""


def test_backward_alone_is_not_a_training_program(tmp_path):
    assert programs_of(tmp_path, {"layer_norm_kernel.py": KERNEL_SELF_TEST}) == []


def test_optimizer_step_trainer_pretrain_and_mindspore_loops_are_training(tmp_path):
    assert programs_of(tmp_path, {
        "step.py": "import torch\nif __name__ == '__main__':\n    opt = torch.optim.SGD([], lr=1)\n    opt.step()\n",
        "hf.py": "from transformers import Trainer\nif __name__ == '__main__':\n    trainer = Trainer()\n    trainer.train()\n",
        "gpt.py": "from megatron.training import pretrain\nif __name__ == '__main__':\n    pretrain(None, None)\n",
        "ms_model.py": "from mindspore import Model\nmodel = Model(None)\nmodel.train(10, None)\n",
        "ms_fn.py": "import mindspore as ms\nfrom mindspore import nn\noptimizer = nn.SGD([], 0.1)\n"
                    "grad_fn = ms.value_and_grad(None, None, [])\n",
        "torch_eval.py": "import torch\nif __name__ == '__main__':\n    model = torch.nn.Linear(2, 2)\n    model.train()\n",
    }) == ["gpt.py", "hf.py", "ms_fn.py", "ms_model.py", "step.py"]


def test_pytest_files_are_not_training_programs_unless_their_main_trains(tmp_path):
    trains = ("    model = torch.nn.Linear(2, 1)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
              "    model(torch.ones(2)).sum().backward()\n    opt.step()\n")
    assert programs_of(tmp_path, {
        "test_training.py": "import torch\n\ndef test_step():\n" + trains + "\nif __name__ == '__main__':\n    test_step()\n",
        "tests/check_train.py": "import torch\n\ndef test_fit():\n" + trains + "\nif __name__ == '__main__':\n    test_fit()\n",
        "test_script.py": "import torch\n\ndef main():\n" + trains + "\nif __name__ == '__main__':\n    main()\n",
    }) == ["test_script.py"]


def test_an_imported_module_does_not_run_its_main_block(tmp_path):
    # The accelerate CLI imports a test script whose __main__ trains: the CLI does not train.
    assert programs_of(tmp_path, {
        "cli.py": "import launcher\n\nif __name__ == '__main__':\n    launcher.describe()\n",
        "launcher.py": "import torch\n\ndef describe():\n    print('launch')\n\ndef main():\n"
                       "    opt = torch.optim.SGD([], lr=1)\n    opt.step()\n\nif __name__ == '__main__':\n    main()\n",
    }) == ["launcher.py"]


def test_a_scheduler_step_is_not_training(tmp_path):
    # Megatron's checkpoint loading steps `opt_param_scheduler` for an inference script.
    assert programs_of(tmp_path, {
        "infer.py": "import torch\n\nif __name__ == '__main__':\n    model = torch.nn.Linear(2, 2)\n"
                    "    opt_param_scheduler.step(increment=10)\n    model(torch.ones(2))\n",
    }) == []


def _package_tree(root: Path, modules: int) -> Path:
    """An entry script importing a package whose modules import each other in a chain and a
    fan-out, deeper and wider than the pool threshold; the last module holds a cuDNN switch."""
    files = {"pkg/__init__.py": "", "train.py": TRAIN_WITH_HELPER.format(import_line="from pkg.m0 import seed_everything")}
    for index in range(modules):
        imports = [f"from pkg import m{index + 1}"] if index + 1 < modules else []
        imports += [f"from pkg import leaf{index}"]
        body = SEED_HELPER if index == 0 else "import torch\n"
        files[f"pkg/m{index}.py"] = "\n".join(imports) + "\n" + code(body)
        files[f"pkg/leaf{index}.py"] = "X = 1\n"
    files[f"pkg/leaf{modules - 1}.py"] = "import torch\n\n\ndef setup():\n    torch.backends.cudnn.benchmark = True\n"
    return write(root, files)


def test_context_read_in_parallel_as_it_unfolds_matches_a_serial_read(tmp_path):
    root = _package_tree(tmp_path, 20)
    given = analyze_file(str(root / "train.py"), "train.py", []).facts
    read = {}
    for jobs in (1, 2):
        loader = ContextLoader(root, root, (), failed={given.abspath})
        project = Project([given], [], [str(root)], loader=loader)
        read_context(project, [given], [], loader, jobs=jobs)
        read[jobs] = sorted(project.files)
    assert len(read[1]) == 1 + 1 + 40  # train.py, pkg/__init__.py, 20 chained modules and 20 leaves
    assert read[2] == read[1]


def test_a_warm_one_file_scan_takes_its_context_from_the_cache(tmp_path):
    from acclint.linter.cache import Cache

    root = _package_tree(tmp_path / "p", 20)
    rules = all_rules()
    scans = []
    for _ in range(2):
        cache = Cache(tmp_path / "cache", rules, Config())
        scans.append(scan([root / "train.py"], rules, Config(), jobs=2, cwd=root, cache=cache))
    context = Cache(tmp_path / "cache", rules, Config()).without_rules()
    stored = [p for p in context.folder.rglob("*") if p.is_file()]
    assert len(stored) == 41  # every context file (not train.py, which the rules analysed)
    assert [(f.rule, f.line) for f in scans[0].findings] == [(f.rule, f.line) for f in scans[1].findings]
    # The cached outcome is what a warm read uses (not a re-analysis that happens to agree):
    # drop `from pkg import m1` from m0's cached facts and m1 is no longer read.
    probe = Cache(tmp_path / "cache", rules, Config()).without_rules()
    outcome, digest = probe.lookup(str(root / "pkg" / "m0.py"), "pkg/m0.py")
    assert outcome is not None and probe.hits == 1
    outcome.facts.imports = [imp for imp in outcome.facts.imports if "m1" not in (imp.name or "")]
    probe.store(str(root / "pkg" / "m0.py"), "pkg/m0.py", digest, outcome)
    loader = ContextLoader(root, root, (), failed={str(root / "train.py")}, cache=probe)
    given = analyze_file(str(root / "train.py"), "train.py", []).facts
    project = Project([given], [], [str(root)], loader=loader)
    read_context(project, [given], [], loader, jobs=1)
    assert str(root / "pkg" / "m1.py") not in project.files
