"""Knowing the run: the `trains` and `executes` premises a finding rests on, with their evidence, for
programs that are not training runs the migration is about, layers that never run, and the same cause
shown once (identical copies, launch lines of one run, one fix for two rules)."""

from __future__ import annotations

from pathlib import Path

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.linter.rulebase import code
from acclint.rules import all_rules

RULES = all_rules()

# A real (tiny) PyTorch training step on the GPU with a setting ACL202 reports.
TORCH_TRAIN = code("""
    import torch

    if __name__ == "__main__":
        torch.backends.cudnn.benchmark = True
        model = torch.nn.Linear(2, 2).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(2, 2).cuda()).sum().backward()
        optimizer.step()
""")


def write(root: Path, files: dict) -> Path:
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code(source) if source.startswith("\n") else source, encoding="utf-8")
    return root


def findings(root: Path, rule: str, preview: bool = True, paths=None) -> list:
    result = scan(paths or [root], RULES, Config(preview=preview), jobs=1, cwd=root)
    assert result.errors == []
    return [f for f in result.findings if f.rule == rule]


def premise(finding, name: str):
    return next(p for p in finding.premises if p.premise == name)


def not_training(root: Path, rule: str) -> str:
    """The evidence of the one finding of `rule`, which a default run shows as advice for want of a run."""
    [found] = findings(root, rule, preview=False)
    assert found.severity == "info" and not premise(found, "trains").proven
    return premise(found, "trains").evidence


def test_a_training_step_proves_the_run_with_its_line(tmp_path):
    write(tmp_path, {"train.py": TORCH_TRAIN})
    [found] = findings(tmp_path, "ACL202")
    assert found.proven and found.severity == "warning"
    assert premise(found, "trains").evidence == "`optimizer.step()` at train.py:8, reached from train.py"


def test_an_export_script_that_loads_a_checkpoint_reports_nothing_of_its_own(tmp_path):
    write(tmp_path, {"export.py": """
        import torch

        if __name__ == "__main__":
            torch.backends.cudnn.benchmark = True
            model = torch.nn.Conv2d(3, 8, 3).cuda()
            model.load_state_dict(torch.load("model.pt"))
            torch.onnx.export(model, torch.ones(1, 3, 8, 8).cuda(), "model.onnx")
    """, "train.py": TORCH_TRAIN})
    assert [f.path for f in findings(tmp_path, "ACL202")] == ["train.py"]


def test_an_eval_script_that_also_builds_an_optimizer_keeps_its_finding_unproven(tmp_path):
    write(tmp_path, {"eval.py": """
        import torch

        if __name__ == "__main__":
            torch.backends.cudnn.benchmark = True
            model = torch.nn.Linear(2, 2).cuda()
            model.load_state_dict(torch.load("model.pt"))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            print(model(torch.ones(2, 2).cuda()))
    """})
    assert "eval.py loads trained weights (`model.load_state_dict()` at eval.py:6)" in not_training(tmp_path, "ACL202")


def test_an_image_optimised_against_a_fixed_network_is_not_training(tmp_path):
    write(tmp_path, {"style.py": """
        import torch

        if __name__ == "__main__":
            torch.backends.cudnn.benchmark = True
            net = torch.nn.Conv2d(3, 3, 3).cuda()
            image = torch.rand(1, 3, 8, 8, device="cuda", requires_grad=True)
            optimizer = torch.optim.Adam([image], lr=0.01)
            for _ in range(10):
                optimizer.zero_grad()
                net(image).square().mean().backward()
                optimizer.step()
    """})
    assert not_training(tmp_path, "ACL202") == (
        "the optimizer built at style.py:7 steps `image` (`requires_grad=True` at style.py:6), not a model's "
        "parameters: style.py optimises an input against a fixed network")


def test_an_input_made_trainable_by_requires_grad_and_a_model_optimizer_still_trains(tmp_path):
    write(tmp_path, {"train.py": """
        import torch

        if __name__ == "__main__":
            torch.backends.cudnn.benchmark = True
            model = torch.nn.Linear(2, 2).cuda()
            x = torch.ones(2, 2, device="cuda", requires_grad=True)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model(x).sum().backward()
            optimizer.step()
    """})
    [found] = findings(tmp_path, "ACL202")
    assert found.proven


def test_a_training_cell_only_built_and_compiled_is_not_a_run(tmp_path):
    write(tmp_path, {"precompile.py": """
        import mindspore as ms
        from mindspore import nn

        if __name__ == "__main__":
            net = nn.Dense(2, 2)
            loss = nn.SoftmaxCrossEntropyWithLogits()
            opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
            train_net = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
            train_net.compile(ms.ops.ones((2, 2)), ms.ops.ones((2, 2)))
    """})
    assert not_training(tmp_path, "ACL707") == (
        "the training cell `train_net` built at precompile.py:8 is never run: precompile.py neither calls it nor "
        "reaches a training call (it is only built or compiled)")


LOCAL_CELL = """
    import mindspore as ms
    from mindspore import nn, ops


    class TrainStep(nn.Cell):
        def __init__(self, net_with_loss, optimizer):
            super().__init__()
            self.net_with_loss = net_with_loss
            self.weights = ms.ParameterTuple(net_with_loss.trainable_params())
            self.optimizer = optimizer
            self.grad = ops.GradOperation(get_by_list=True)

        def construct(self, x, y):
            loss = self.net_with_loss(x, y)
            self.optimizer(self.grad(self.net_with_loss, self.weights)(x, y))
            return loss
"""

EVALUATES = """
    import mindspore as ms
    from mindspore import nn
    from cells import TrainStep

    if __name__ == "__main__":
        ms.set_seed(1)
        net = nn.Dense(2, 2)
        ms.load_checkpoint("net.ckpt", net=net)
        cell = TrainStep(nn.WithLossCell(net, nn.MSELoss()), None)
        model = ms.Model(cell, eval_network=net, metrics={"mae": nn.MAE()})
        {use}
"""


def test_a_local_training_cell_handed_to_a_model_that_only_evaluates_is_not_a_run(tmp_path):
    write(tmp_path, {"cells.py": LOCAL_CELL, "eval.py": EVALUATES.replace("{use}", "model.eval(None)")})
    assert not_training(tmp_path, "ACL206") == (
        "the cell `cell` built at eval.py:9 is never run: eval.py neither calls it nor trains with what it hands it "
        "to, so its training step (cells.py:15) does not run")


def test_a_local_training_cell_a_model_trains_with_is_a_run(tmp_path):
    write(tmp_path, {"cells.py": LOCAL_CELL, "train.py": EVALUATES.replace("{use}", "model.train(1, None)")})
    [found] = findings(tmp_path, "ACL206", preview=False)
    assert premise(found, "trains").proven


def test_a_local_training_cell_called_by_hand_is_a_run(tmp_path):
    write(tmp_path, {"cells.py": LOCAL_CELL,
                     "train.py": EVALUATES.replace("{use}", "cell(ms.ops.ones((2, 2)), ms.ops.ones((2, 2)))")})
    [found] = findings(tmp_path, "ACL206", preview=False)
    assert premise(found, "trains").proven
    assert "cells.py:15" in premise(found, "trains").evidence


def test_a_tpu_only_run_is_not_about_the_migration(tmp_path):
    write(tmp_path, {"train_tpu.py": """
        import torch
        import torch_xla.core.xla_model as xm

        if __name__ == "__main__":
            torch.backends.cudnn.benchmark = True
            device = xm.xla_device()
            model = torch.nn.Linear(2, 2).to(device)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.ones(2, 2, device=device)).sum().backward()
            optimizer.step()
    """})
    assert not_training(tmp_path, "ACL202").endswith(
        "but on another device: train_tpu.py imports torch_xla.core.xla_model and nothing in the run uses a GPU or "
        "an NPU")


def test_an_example_of_a_project_copied_under_a_dependencies_folder_is_not_the_code_migrated(tmp_path):
    write(tmp_path, {"dependencies/other/setup.py": "", "dependencies/other/examples/train.py": TORCH_TRAIN,
                     "train.py": TORCH_TRAIN.replace("0.1", "0.2")})
    by_path = {f.path: f for f in findings(tmp_path, "ACL202", preview=False)}
    assert by_path["train.py"].proven
    copied = by_path["dependencies/other/examples/train.py"]
    assert copied.severity == "info" and premise(copied, "trains").evidence == (
        "dependencies/other/examples/train.py is a program of another project copied into this one, "
        "dependencies/other (its own setup.py): its runs are not the code being migrated")
    # Scanned from inside the copy, it is the project the user works on.
    inside = tmp_path / "dependencies" / "other"
    result = scan([inside], RULES, Config(), jobs=1, cwd=inside)
    assert [f.proven for f in result.findings if f.rule == "ACL202"] == [True]


def test_a_folder_named_like_a_dependency_without_a_project_of_its_own_is_the_users_code(tmp_path):
    write(tmp_path, {"external/models/train.py": TORCH_TRAIN})
    [found] = findings(tmp_path, "ACL202")
    assert found.proven


LAYER_NET = """
    import mindspore as ms
    from mindspore import nn


    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(2, 2)
            self.drop = nn.Dropout(p=0.1)
            self.head_drop = nn.Dropout(p=0.2)

        def construct(self, x):
            # x = self.drop(x)
            return self.head_drop(self.fc(x))


    if __name__ == "__main__":
        ms.set_seed(0)
        net = Net()
        opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
        train_net = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
        train_net.set_train()
        train_net(ms.ops.ones((2, 2)), ms.ops.ones((2, 2)))
"""


def test_a_layer_built_but_never_called_does_not_execute(tmp_path):
    write(tmp_path, {"train.py": LAYER_NET})
    by_line = {f.line: f for f in findings(tmp_path, "ACL209")}
    assert by_line[10].proven
    unused = by_line[9]
    assert not unused.proven
    assert premise(unused, "executes").evidence == (
        "`self.drop` is built at train.py:9 but nothing in train.py calls or reads it: the layer never runs")


def test_a_layer_reached_by_name_is_not_claimed_unused(tmp_path):
    write(tmp_path, {"train.py": LAYER_NET.replace("# x = self.drop(x)", 'x = getattr(self, "drop")(x)')})
    assert all(f.proven for f in findings(tmp_path, "ACL209"))


def test_a_class_nothing_builds_does_not_execute(tmp_path):
    write(tmp_path, {"train.py": LAYER_NET, "unused.py": """
        from mindspore import nn


        class Old(nn.Cell):
            def __init__(self):
                super().__init__()
                self.drop = nn.Dropout(0.2)

            def construct(self, x):
                return self.drop(x)
    """})
    [found] = [f for f in findings(tmp_path, "ACL704") if f.path == "unused.py"]
    assert not found.proven and premise(found, "executes").evidence.startswith("no training program runs unused.py")


def test_a_module_only_an_evaluation_script_imports_does_not_execute_in_training(tmp_path):
    write(tmp_path, {"train.py": LAYER_NET, "test.py": """
        import mindspore as ms

        from metrics import Head

        if __name__ == "__main__":
            net = Head()
            ms.load_param_into_net(net, ms.load_checkpoint("net.ckpt"))
            print(net(ms.ops.ones((2, 2))))
    """, "metrics.py": """
        from mindspore import nn


        class Head(nn.Cell):
            def __init__(self):
                super().__init__()
                self.drop = nn.Dropout(0.2)

            def construct(self, x):
                return self.drop(x)
    """})
    [found] = [f for f in findings(tmp_path, "ACL704", preview=False) if f.path == "metrics.py"]
    assert found.severity == "info"
    assert premise(found, "executes").evidence == "no training program runs metrics.py:7"


def test_identical_copies_are_one_finding_naming_the_others(tmp_path):
    write(tmp_path, {f"runs/{name}/train.py": TORCH_TRAIN for name in ("a", "b", "c", "d", "e")})
    write(tmp_path, {"runs/f/train.py": TORCH_TRAIN + "# tuned\n"})
    found = findings(tmp_path, "ACL202")
    assert [f.path for f in found] == ["runs/a/train.py", "runs/f/train.py"]
    assert found[0].message.endswith("(and 4 identical copies: runs/b/train.py, runs/c/train.py, runs/d/train.py, ...)")
    assert "identical" not in found[1].message
    # Each copy scanned alone shows its own finding.
    alone = findings(tmp_path, "ACL202", paths=[tmp_path / "runs" / "c" / "train.py"])
    assert [f.path for f in alone] == ["runs/c/train.py"] and "identical" not in alone[0].message


def test_launch_lines_of_one_run_are_one_finding_and_other_runs_stay_apart(tmp_path):
    write(tmp_path, {"main.py": """
        import torch
        import torch_npu

        if __name__ == "__main__":
            torch.distributed.init_process_group("hccl")
            model = torch.nn.Linear(2, 2).npu()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.ones(2, 2).npu()).sum().backward()
            optimizer.step()
    """, "run_8p.sh": """
        #!/bin/bash
        export HCCL_CONNECT_TIMEOUT=1200
        RANK_ID=0 python main.py --local_rank 0 --epochs 3 &
        for i in 1 2 3 4 5 6 7; do
            RANK_ID=$i python main.py --local_rank $i --epochs 3 &
        done
        torchrun --nproc_per_node 8 main.py --epochs 90
    """})
    found = findings(tmp_path, "ACL205")
    assert [(f.path, f.line) for f in found] == [("run_8p.sh", 3), ("run_8p.sh", 7)]
    assert found[0].message.endswith("(and line 5: the same run)")
    assert "same run" not in found[1].message


def test_one_deterministic_switch_fixes_two_findings_shown_as_one(tmp_path):
    write(tmp_path, {"train.py": """
        import mindspore as ms
        from mindspore import nn
        from mindspore.communication import init

        if __name__ == "__main__":
            ms.set_seed(0)
            init("hccl")
            net = nn.Dense(2, 2)
            opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
            train_net = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
            train_net.set_train()
            train_net(ms.ops.ones((2, 2)), ms.ops.ones((2, 2)))
    """})
    result = scan([tmp_path], RULES, Config(preview=True), jobs=1, cwd=tmp_path)
    at_entry = [f for f in result.findings if f.line == 5 and f.rule in ("ACL205", "ACL206")]
    assert [f.rule for f in at_entry] == ["ACL206"]
    assert "The same fix also settles ACL205 here: HCCL_DETERMINISTIC is not set" in at_entry[0].message


_MODULE_WITH_SELF_TEST = """
    import torch


    class Profiler:
        def __init__(self, model):
            self.model = model


    if __name__ == "__main__":
        torch.backends.cudnn.benchmark = True
        model = torch.nn.Linear(2, 2).cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        Profiler(model)
        model(torch.randn(2, 2).cuda()).sum().backward()
        optimizer.step()
"""


def test_the_main_block_of_a_package_module_is_its_self_test_not_a_training_run(tmp_path):
    write(tmp_path, {"lib/__init__.py": "", "lib/profiler.py": _MODULE_WITH_SELF_TEST})
    evidence = not_training(tmp_path, "ACL202")
    assert "lib/profiler.py is a module of a package that defines classes" in evidence
    assert "its own `__main__` block (lib/profiler.py:9)" in evidence


def test_a_folder_the_scripts_beside_it_import_as_a_namespace_package_holds_modules_with_self_tests(tmp_path):
    write(tmp_path, {"networks/profiler.py": _MODULE_WITH_SELF_TEST,
                     "train_network.py": "import networks.profiler as profiler\n"})
    evidence = not_training(tmp_path, "ACL202")
    assert evidence.startswith("networks/profiler.py is a module of a package that defines classes")


def test_a_script_outside_a_package_training_in_its_main_block_trains(tmp_path):
    write(tmp_path, {"tools/profile.py": _MODULE_WITH_SELF_TEST})
    [found] = findings(tmp_path, "ACL202", preview=False)
    assert found.proven and found.severity == "warning"


def test_a_package_entry_whose_main_block_calls_the_training_function_trains(tmp_path):
    write(tmp_path, {"app/__init__.py": "", "app/train.py": """
        import torch


        class Net(torch.nn.Module):
            pass


        def main():
            torch.backends.cudnn.benchmark = True
            model = torch.nn.Linear(2, 2).cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.ones(2, 2).cuda()).sum().backward()
            optimizer.step()


        if __name__ == "__main__":
            main()
    """})
    [found] = findings(tmp_path, "ACL202", preview=False)
    assert found.proven


def test_a_program_claim_rests_on_the_reporting_programs_run_not_on_a_program_importing_its_module(tmp_path):
    write(tmp_path, {"lib/__init__.py": "", "lib/profiler.py": _MODULE_WITH_SELF_TEST, "train.py": """
        import torch

        from lib.profiler import Profiler

        if __name__ == "__main__":
            torch.manual_seed(0)
            torch.use_deterministic_algorithms(True)
            model = torch.nn.Linear(2, 2).cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            Profiler(model)
            model(torch.ones(2, 2).cuda()).sum().backward()
            optimizer.step()
    """})
    # train.py trains and imports lib/profiler.py, but "lib/profiler.py never seeds" is a claim about the
    # run lib/profiler.py starts: its module's self-test.
    for rule in ("ACL104", "ACL201"):
        [found] = findings(tmp_path, rule)
        assert found.path == "lib/profiler.py" and not found.proven
        assert premise(found, "trains").evidence == (
            "lib/profiler.py is a module of a package that defines classes, and the only training it reaches is "
            "in its own `__main__` block (lib/profiler.py:9): a self-test of the module, not a training run")


def test_a_library_that_probes_for_cuda_does_not_put_a_tpu_script_on_the_gpu(tmp_path):
    write(tmp_path, {
        "pyproject.toml": "",
        "src/mylib/__init__.py": "",
        "src/mylib/devices.py": """
            import torch


            def best_device():
                if torch.cuda.is_available():
                    return "cuda"
                return "cpu"
        """,
        "examples/train_tpu.py": """
            import torch
            import torch_xla.core.xla_model as xm

            from mylib.devices import best_device

            if __name__ == "__main__":
                print(best_device())
                device = xm.xla_device()
                model = torch.nn.Linear(2, 2).to(device)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.ones(2, 2, device=device)).sum().backward()
                optimizer.step()
        """,
    })
    # The project's library (src/mylib, imported as installed) asks for CUDA on any machine; the script
    # written for the TPU is what chooses the run's device.
    evidence = premise(next(f for f in findings(tmp_path, "ACL201") if f.path == "examples/train_tpu.py"),
                       "trains").evidence
    assert evidence.endswith("but on another device: examples/train_tpu.py imports torch_xla.core.xla_model and "
                             "nothing in the run uses a GPU or an NPU")


def test_an_intel_extension_for_pytorch_run_is_not_about_the_migration(tmp_path):
    write(tmp_path, {"train_cpu.py": """
        import intel_extension_for_pytorch as ipex
        import torch

        if __name__ == "__main__":
            torch.manual_seed(0)
            model = torch.nn.Linear(2, 2)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model, optimizer = ipex.optimize(model, optimizer=optimizer, dtype=torch.bfloat16)
            model(torch.ones(2, 2)).sum().backward()
            optimizer.step()
    """})
    assert not_training(tmp_path, "ACL201").endswith(
        "but on another device: train_cpu.py imports intel_extension_for_pytorch and nothing in the run uses a GPU "
        "or an NPU")


def test_an_example_a_copied_project_ships_is_not_the_script_its_launch_scripts_train_with(tmp_path):
    write(tmp_path, {
        "DCN/setup.py": "",
        "DCN/run_dcn.py": TORCH_TRAIN,
        "DCN/examples/run_toy.py": TORCH_TRAIN.replace("0.1", "0.2"),
        "DCN/test/train_full_8p.sh": "#!/bin/bash\npython3 -u run_dcn.py --epochs 3\n",
    })
    by_path = {f.path: f for f in findings(tmp_path, "ACL202", preview=False)}
    assert by_path["DCN/run_dcn.py"].proven
    toy = by_path["DCN/examples/run_toy.py"]
    assert toy.severity == "info" and premise(toy, "trains").evidence == (
        "DCN/examples/run_toy.py is an example shipped with the project at DCN (its own setup.py), whose launch "
        "scripts start run_dcn.py (test/train_full_8p.sh:2) and never this script: not the training run being "
        "migrated")


def test_a_projects_ci_jobs_do_not_make_its_examples_someone_elses(tmp_path):
    # A first-party project whose CI smoke-tests one program: its examples are still its users' recipes.
    write(tmp_path, {
        "mm/pyproject.toml": "",
        "mm/pretrain.py": TORCH_TRAIN,
        "mm/examples/finetune/finetune.py": TORCH_TRAIN.replace("0.1", "0.2"),
        "mm/ci/smoke.sh": "#!/bin/bash\npython3 pretrain.py --train-iters 2\n",
    })
    by_path = {f.path: f for f in findings(tmp_path, "ACL202", preview=False)}
    assert by_path["mm/examples/finetune/finetune.py"].proven


def test_a_launch_after_cd_into_a_folder_of_the_project_is_looked_up_there(tmp_path):
    write(tmp_path, {
        "vision/setup.py": "",
        "vision/references/classification/train.py": TORCH_TRAIN,
        "vision/references/segmentation/train.py": TORCH_TRAIN.replace("0.1", "0.2"),
        "vision/test/train_full_8p.sh": "#!/bin/bash\ncur_path=`pwd`\ncd $cur_path/references/classification\n"
                                        "python3 train.py\n",
    })
    by_path = {f.path: f for f in findings(tmp_path, "ACL202")}
    assert by_path["vision/references/classification/train.py"].proven
    assert premise(by_path["vision/references/segmentation/train.py"], "trains").evidence == (
        "vision/references/segmentation/train.py is an example shipped with the project at vision (its own "
        "setup.py), whose launch scripts start references/classification/train.py (test/train_full_8p.sh:4) and "
        "never this script: not the training run being migrated")


def test_an_example_stays_a_training_run_when_a_launch_script_may_start_it(tmp_path):
    # A launch after a `cd` acclint cannot read may start this script: nothing is claimed.
    write(tmp_path, {
        "vision/setup.py": "",
        "vision/references/segmentation/train.py": TORCH_TRAIN,
        "vision/run.py": TORCH_TRAIN.replace("0.1", "0.2"),
        "vision/test/train_full_8p.sh": "#!/bin/bash\npython3 run.py\ncd $(dirname $0)/../$TASK\npython3 train.py\n",
    })
    by_path = {f.path: f for f in findings(tmp_path, "ACL202")}
    assert by_path["vision/references/segmentation/train.py"].proven
