"""Category `determinism`: the run computes the same thing twice, on each side (docs/knowledge/determinism.md)."""

from __future__ import annotations

from typing import Optional

from acclint.findings import Premise
from acclint.knowledge import table
from acclint.linter.context import ProgramContext
from acclint.linter.edits import InsertLine, InsertStatement, ReplaceValue, SetArgument, safe_fix, unsafe_fix
from acclint.linter.frameworks import program_loads_transfer_to_npu
from acclint.linter.project import launch_trains
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import EffectRule, ExplicitRule, ProgramRule, Written
from acclint.rules.data_loading import runs_workers, worker_init_fn
from acclint.rules.deterministic_ops import nondeterministic_uses
from acclint.rules.device_pins import runs_only_off
from acclint.rules.dropout_values import complement_of, default_keep, keep_first, probability_arg, switch_off
from acclint.rules.flags import runs_only_when
from acclint.rules.launch_run import one_process, other_device, processes
from acclint.rules.program_facts import ProgramFacts, determinism_setting
from acclint.rules.values import Origin, enclosing_function, number, passed_by_a_caller, value_origin


def _seeded(facts: ProgramFacts) -> bool:
    return "torch-cpu" in facts.seeded or "mindspore" in facts.seeded


class DeterministicAlgorithmsOff(EffectRule):
    code = "ACL201"
    name = "deterministic-algorithms-off"
    category = "determinism"
    severity = "warning"
    summary = "torch.use_deterministic_algorithms(True) is not switched on"
    frameworks = ("torch",)
    tensor_framework = "torch"
    effect = "deterministic-algorithms"
    off_consequence = "nondeterministic kernels make two runs of the same side differ."
    switch_on = {"torch.use_deterministic_algorithms": ("mode", 0, "True")}
    switch_on_statement = ("torch.use_deterministic_algorithms(True)", "torch")
    doc = RuleDoc(
        what="Reports a PyTorch training entry point that never calls `torch.use_deterministic_algorithms(True)` "
        "(directly, through a helper such as `transformers.enable_full_determinism`, or via MindSpeed's "
        "`--npu-deterministic` in its launch script), or that switches it off.",
        why="Without it scatter/index_add/embedding backward and atomics-based reductions are nondeterministic "
        "on CUDA, and on Ascend the documented deterministic kernels (matmul, embedding, layer_norm, "
        "FlashAttentionScoreGrad, ...) are not selected: two runs of the same side differ, so a GPU-vs-NPU "
        "difference cannot be told from noise. torch_npu honours only the first effective setting per thread.",
        fix="Call `torch.use_deterministic_algorithms(True)` at the start of the entry point on both sides "
        "(with MindSpeed: `--npu-deterministic`).",
    )
    invalid = (
        Example.script("""
            import torch


            if __name__ == "__main__":  # expect: ACL201
                torch.manual_seed(0)
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """),
        Example.script("""
            import torch


            if __name__ == "__main__":
                torch.use_deterministic_algorithms(False)  # expect: ACL201
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """, "switched off"),
        Example.script("""
            import argparse

            import torch

            parser = argparse.ArgumentParser()
            parser.add_argument("--deterministic", action="store_true")


            if __name__ == "__main__":
                args = parser.parse_args()
                torch.manual_seed(0)
                if args.deterministic:
                    torch.use_deterministic_algorithms(True)  # expect: ACL201
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """, "opt-in: on only behind a flag that defaults to off, so the default run is nondeterministic"),
        Example.script("""
            import sys

            import torch
            from omegaconf import OmegaConf
            from hydra.utils import instantiate


            if __name__ == "__main__":  # expect: ACL201
                torch.manual_seed(0)
                config = OmegaConf.load(sys.argv[1])
                trainer = instantiate(config.trainer)
                trainer.train()
        """, "a trainer built from a config: info only, naming the calls acclint could not follow "
             "(`instantiate()`, `trainer.train()`), since the code they run may switch it on"),
        Example({
            "train.py": """
                import torch

                from experiment import ExperimentConfig


                if __name__ == "__main__":  # expect: ACL201
                    torch.manual_seed(0)
                    trainer = ExperimentConfig().build()
                    trainer.train()
            """,
            "experiment.py": """
                import importlib


                class ExperimentConfig:
                    trainer = "trainers.Trainer"

                    def build(self):
                        module, name = self.trainer.rsplit(".", 1)
                        return getattr(importlib.import_module(module), name)()
            """,
        }, "`config.build()` that looks its trainer class up by name: info, the call is named"),
        Example({
            "DCN/setup.py": "",
            "DCN/run_dcn.py": """
                import torch


                if __name__ == "__main__":  # expect: ACL201
                    torch.manual_seed(0)
                    model = torch.nn.Linear(2, 1).cuda()
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                    model(torch.ones(2).cuda()).sum().backward()
                    optimizer.step()
            """,
            "DCN/examples/run_toy.py": """
                import torch


                if __name__ == "__main__":  # expect: ACL201
                    model = torch.nn.Linear(2, 1).cuda()
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                    model(torch.rand(2).cuda()).sum().backward()
                    optimizer.step()
            """,
            "DCN/test/train_full_8p.sh": """
                #!/bin/bash
                python3 -u run_dcn.py --epochs 3
            """,
        }, "a model folder copied from a library (its own setup.py) whose launch script trains with run_dcn.py: "
           "a warning there; the library's example under examples/ is info (trains not proven: no launch script "
           "of the project starts it)"),
    )
    valid = (
        Example.script("""
            import sys

            import torch


            def train(argv):
                torch.use_deterministic_algorithms(True)
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()


            def evaluate(argv):
                pass


            COMMANDS = {"train": train, "eval": evaluate}

            if __name__ == "__main__":
                COMMANDS[sys.argv[1]](sys.argv[2:])
        """, "a sub-command dict: the functions it maps names to are followed"),
        Example.script("""
            import functools

            import torch
            import torch.multiprocessing as mp


            def worker(rank, lr):
                torch.use_deterministic_algorithms(True)
                model = torch.nn.Linear(2, 1)
                torch.optim.SGD(model.parameters(), lr=lr).step()


            if __name__ == "__main__":
                mp.spawn(functools.partial(worker, lr=0.1), nprocs=2)
        """, "a worker handed to mp.spawn through functools.partial is followed"),
        Example.script("""
            import torch


            if __name__ == "__main__":
                torch.use_deterministic_algorithms(True, warn_only=True)
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """),
        Example({
            "train.py": """
                import argparse

                import torch

                parser = argparse.ArgumentParser()
                parser.add_argument("--deterministic", action="store_true")


                if __name__ == "__main__":
                    args = parser.parse_args()
                    torch.manual_seed(0)
                    if args.deterministic:
                        torch.use_deterministic_algorithms(True)
                    torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
            """,
            "run.sh": """
                #!/bin/bash
                python train.py --deterministic
            """,
        }, "opt-in, and the launch script opts in"),
        Example.script("""
            import unittest

            import torch


            class DeterministicKernelTest(unittest.TestCase):
                def setUp(self):
                    torch.use_deterministic_algorithms(True)

                def tearDown(self):
                    torch.use_deterministic_algorithms(False)
        """, "unittest setUp/tearDown switch it on and off around each test: test code, not training",
            path="test_kernels.py"),
        Example(
            {
                "train.py": """
                    import torch


                    if __name__ == "__main__":
                        torch.manual_seed(0)
                        torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
                """,
                "run_npu.sh": """
                    #!/bin/bash
                    torchrun --nproc_per_node 8 train.py --npu-deterministic
                """,
            },
            "switched on by MindSpeed's launcher flag",
        ),
    )

    def missing_message(self, ctx: ProgramContext, facts: ProgramFacts) -> str:
        uses = nondeterministic_uses(ctx, facts)
        named = f" Ops this program reaches that then differ between runs: {', '.join(uses[:3])}." if uses else ""
        return (f"{ctx.program.entry.path} never calls torch.use_deterministic_algorithms(True): nondeterministic "
                f"kernels make two runs of the same side differ.{named}")

    def fix_text(self) -> str:
        return "call torch.use_deterministic_algorithms(True) at the start of the entry point"


# A training entry point that switches cudnn.benchmark on when its YAML config says so (ACL202 examples).
_BENCHMARK_BY_CONFIG = """
import argparse

import torch
import yaml


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/default.yaml")
    with open(parser.parse_args().config) as handle:
        cfg = yaml.safe_load(handle)
    if cfg.get("cudnn_benchmark", False):
        torch.backends.cudnn.benchmark = True  # expect: ACL202
    model = torch.nn.Conv2d(3, 8, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(1, 3, 8, 8)).sum().backward()
    optimizer.step()


if __name__ == "__main__":
    main()
"""


class CudnnBenchmark(ExplicitRule):
    code = "ACL202"
    name = "cudnn-benchmark"
    category = "determinism"
    severity = "warning"
    summary = "cudnn.benchmark = True picks convolution algorithms by timing"
    doc = RuleDoc(
        what="Reports `torch.backends.cudnn.benchmark = True` wherever it is written: in an entry point, a "
        "backend-setup helper, or a module no scanned program reaches. Under a branch (`if args.benchmark:`, "
        "`if cfg.get(\"cudnn_benchmark\", False):`) it is a warning when a run of the program takes the branch "
        "(a launch flag, a config file the run loads, a default), and info naming the key and where its default "
        "comes from when no run does.",
        why="cuDNN then times several algorithms per input shape and keeps the fastest, which can differ "
        "between runs and machines; results change in the last bits and the GPU reference is not reproducible. "
        "The flag has no effect on NPU, so the two sides also differ in kind.",
        fix="Set `torch.backends.cudnn.benchmark = False` (PyTorch's default) for parity runs.",
    )
    invalid = (
        Example.script("""
            import torch


            if __name__ == "__main__":
                torch.backends.cudnn.benchmark = True  # expect: ACL202
                model = torch.nn.Linear(2, 1)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.ones(2)).sum().backward()
                optimizer.step()
        """, "in a training entry point: proven (the run executes it)"),
        Example(
            {
                "train.py": _BENCHMARK_BY_CONFIG,
                "configs/default.yaml": """
                    lr: 0.1
                    cudnn_benchmark: false
                """,
            },
            "a config-gated branch whose YAML default is false: reported as info naming `cudnn_benchmark` and "
            "configs/default.yaml, the config the run loads by default",
        ),
        Example(
            {
                "train.py": _BENCHMARK_BY_CONFIG,
                "configs/default.yaml": """
                    cudnn_benchmark: false
                """,
                "configs/fast.yaml": """
                    cudnn_benchmark: true
                """,
                "run.sh": """
                    python train.py --config configs/fast.yaml
                """,
            },
            "the launch script passes a YAML that sets it: a warning, proven by configs/fast.yaml",
        ),
        Example.script("""
            import torch
            import torch.backends.cudnn as cudnn


            if __name__ == "__main__":
                cudnn.benchmark = True  # expect: ACL202
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """, "through a module alias"),
        Example(
            {
                "setup_backend.py": """
                    import torch


                    def setup_backend():
                        torch.backends.cudnn.benchmark = True  # expect: ACL202
                """,
            },
            "in a helper that no scanned program calls",
        ),
        Example(
            {
                "runs/lr0.01/train.py": """
                    import torch

                    if __name__ == "__main__":
                        torch.backends.cudnn.benchmark = True  # expect: ACL202
                        model = torch.nn.Conv2d(3, 8, 3).cuda()
                        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                        model(torch.ones(2, 3, 8, 8).cuda()).sum().backward()
                        optimizer.step()
                """,
                "runs/lr0.1/train.py": """
                    import torch

                    if __name__ == "__main__":
                        torch.backends.cudnn.benchmark = True
                        model = torch.nn.Conv2d(3, 8, 3).cuda()
                        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                        model(torch.ones(2, 3, 8, 8).cuda()).sum().backward()
                        optimizer.step()
                """,
            },
            "byte-identical copies of a training script, committed beside each run's logs: one finding, naming "
            "the copy",
        ),
    )
    valid = (
        Example.script("""
            import torch


            if __name__ == "__main__":
                torch.backends.cudnn.benchmark = False
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """),
        Example.script("""
            import torch


            def setup_backend(args):
                torch.backends.cudnn.benchmark = args.benchmark
        """, "not written as True: a setting the user chooses at launch"),
        Example({
            "tests/test_conv.py": """
                import pytest
                import torch
                from transformers.testing_utils import TestCasePlus


                @pytest.fixture
                def fast_backend():
                    torch.backends.cudnn.benchmark = True


                class ConvSpeedTest(TestCasePlus):
                    def test_speed(self):
                        torch.backends.cudnn.benchmark = True
            """,
        }, "test code (a pytest fixture, a test class of a helper library): run by a test runner, not in training"),
    )

    def written(self, facts):
        for fact in facts.assignments:
            value = fact.value.literal
            if "torch.backends.cudnn.benchmark" in fact.names and fact.value.is_literal and value not in (False, 0, None):
                yield Written(fact.node, "cudnn.benchmark = True lets cuDNN choose convolution algorithms by timing: "
                              "results differ between runs.", "torch.backends.cudnn.benchmark = False",
                              autofix=unsafe_fix("set cudnn.benchmark = False", ReplaceValue(code="False")))


class CudnnDeterministicUnset(ExplicitRule, ProgramRule):
    code = "ACL203"
    name = "cudnn-deterministic-unset"
    category = "determinism"
    severity = "warning"
    summary = "cuDNN layers on CUDA without cudnn.deterministic = True"
    frameworks = ("torch",)
    tensor_framework = "torch"
    doc = RuleDoc(
        what="Reports `torch.backends.cudnn.deterministic = False` wherever it is written, and the first cuDNN-backed "
        "layer (convolutions, RNNs) of a program that runs on CUDA when neither "
        "`torch.backends.cudnn.deterministic = True` nor `torch.use_deterministic_algorithms(True)` is in force.",
        why="Even with benchmarking off, cuDNN may pick nondeterministic backward algorithms for convolutions "
        "(PyTorch randomness notes): gradients differ in the last bits from run to run on the GPU reference.",
        fix="Set `torch.backends.cudnn.deterministic = True` (and `benchmark = False`) in the entry point.",
    )
    invalid = (
        Example.script("""
            import torch

            if __name__ == "__main__":
                torch.manual_seed(0)
                conv = torch.nn.Conv2d(3, 8, 3).cuda()  # expect: ACL203
                conv(torch.ones(1, 3, 8, 8).cuda()).sum().backward()
        """),
        Example(
            {
                "backend.py": """
                    import torch


                    def configure():
                        torch.backends.cudnn.deterministic = False  # expect: ACL203
                """,
            },
            "switched off explicitly, in any file",
        ),
    )
    valid = (
        Example.script("""
            import torch

            if __name__ == "__main__":
                torch.backends.cudnn.deterministic = True
                conv = torch.nn.Conv2d(3, 8, 3).cuda()
                conv(torch.ones(1, 3, 8, 8).cuda()).sum().backward()
        """),
        Example.script("""
            import torch
            import torch_npu
            from torch_npu.contrib import transfer_to_npu

            if __name__ == "__main__":
                conv = torch.nn.Conv2d(3, 8, 3).cuda()
                conv(torch.ones(1, 3, 8, 8).cuda()).sum().backward()
        """, "transfer_to_npu sends the cuda calls to the NPU, where no cuDNN runs"),
    )

    def written(self, facts):
        for fact in facts.assignments:
            setting = determinism_setting(fact)
            if setting is not None and setting[0] == "cudnn-deterministic" and not setting[1]:
                yield Written(fact.node, "cudnn.deterministic = False lets cuDNN pick nondeterministic backward "
                              "algorithms: gradients differ in the last bits from run to run.",
                              "torch.backends.cudnn.deterministic = True")

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        layer = facts.uses.get("cudnn-layers")
        if layer is None or "cuda" not in facts.uses:
            return
        if program_loads_transfer_to_npu(ctx.program.files):
            return  # transfer_to_npu (or MindSpeed's adaptor) sends the "cuda" calls to the NPU: no cuDNN runs
        if "cudnn-deterministic" in facts.effects or "deterministic-algorithms" in facts.effects:
            return
        if "cudnn-deterministic" in facts.effects_off:
            return  # written explicitly: reported at that line
        ctx.report(self, layer.file, layer.fact.node, f"{layer.fact.callee} runs on cuDNN and "
                   "cudnn.deterministic is not set: its backward algorithm may be nondeterministic.",
                   fix="torch.backends.cudnn.deterministic = True",
                   autofix=unsafe_fix("set cudnn.deterministic = True", InsertStatement(
                       code="torch.backends.cudnn.deterministic = True", imports=("torch",))))


class CublasWorkspaceMissing(ProgramRule):
    code = "ACL204"
    name = "cublas-workspace-config-missing"
    category = "determinism"
    severity = "warning"
    summary = "Deterministic algorithms on CUDA without CUBLAS_WORKSPACE_CONFIG"
    frameworks = ("torch",)
    tensor_framework = "torch"
    doc = RuleDoc(
        what="Reports `torch.use_deterministic_algorithms(True)` in a program that runs on CUDA when "
        "`CUBLAS_WORKSPACE_CONFIG` is set neither in the program (before CUDA starts) nor in its launch script.",
        why="For CUDA >= 10.2 deterministic cuBLAS needs `:4096:8` or `:16:8`; PyTorch raises a RuntimeError at "
        "the first cuBLAS call otherwise (PR #41377), and the variable must exist before the CUDA context.",
        fix="`export CUBLAS_WORKSPACE_CONFIG=:4096:8` in the launch script, or set os.environ at the very top.",
    )
    invalid = (
        Example.script("""
            import torch

            if __name__ == "__main__":
                torch.use_deterministic_algorithms(True)  # expect: ACL204
                m = torch.nn.Linear(2, 1).cuda()
                m(torch.ones(2, device="cuda")).sum().backward()
        """),
        Example.script("""
            import argparse

            import torch

            parser = argparse.ArgumentParser()
            parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")


            if __name__ == "__main__":
                args = parser.parse_args()
                torch.use_deterministic_algorithms(True)  # expect: ACL204
                model = torch.nn.Linear(2, 1).to(args.device)
                model(torch.ones(2).to(args.device)).sum().backward()
        """, "a cuda default in argparse"),
    )
    valid = (
        Example.script("""
            import os
            import torch

            os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"

            if __name__ == "__main__":
                torch.use_deterministic_algorithms(True)
                m = torch.nn.Linear(2, 1).cuda()
                m(torch.ones(2, device="cuda")).sum().backward()
        """),
        Example.script("""
            import torch


            if __name__ == "__main__":
                torch.use_deterministic_algorithms(True)
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """, "CPU only"),
        Example.script("""
            import random

            import numpy as np
            import torch


            def seed_everything(seed):
                random.seed(seed)
                np.random.seed(seed)
                torch.manual_seed(seed)
                if torch.cuda.is_available():
                    torch.cuda.manual_seed_all(seed)
                torch.use_deterministic_algorithms(True)


            if __name__ == "__main__":
                seed_everything(0)
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """, "a seed helper that also seeds CUDA does not make a CPU-only program use CUDA"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        source = facts.effects.get("deterministic-algorithms")
        if source is None or "cuda" not in facts.uses or "cublas-workspace" in facts.effects:
            return
        self.report_at_source(ctx, source, "deterministic algorithms are on for CUDA but CUBLAS_WORKSPACE_CONFIG "
                              "is not set: cuBLAS raises at its first call (or stays nondeterministic).",
                              "export CUBLAS_WORKSPACE_CONFIG=:4096:8",
                              autofix=safe_fix("set CUBLAS_WORKSPACE_CONFIG=:4096:8", InsertStatement(
                                  code='os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")', imports=("os",))))


# A MindSpore pretraining script that picks its collective back end from a string flag.
_DUAL_BACKEND_PRETRAIN = """
    import argparse

    import mindspore
    from mindspore import nn
    from mindspore.communication import init

    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--use_ascend", default="False", type=str)
        parser.add_argument("--epochs", default=1, type=int)
        args = parser.parse_args()
        if args.use_ascend == "True":
            init()
        else:
            init("nccl")
        net = nn.Dense(3, 1)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params()))
        step(mindspore.ops.ones((2, 3)), mindspore.ops.ones((2, 1)))
"""


# A MindSpore model-zoo style entry: the device and data parallelism come from its flags.
_DUAL_DEVICE_MS_TRAIN = """
    import argparse

    import mindspore as ms
    from mindspore import nn
    from mindspore.communication import init

    parser = argparse.ArgumentParser()
    parser.add_argument("--device_target", default="Ascend")
    parser.add_argument("--run_distribute", default="False")

    if __name__ == "__main__":
        args = parser.parse_args()
        ms.set_context(device_target=args.device_target)
        if args.run_distribute == "True":
            init()
        net = nn.Dense(2, 2)
        opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
        train_net = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
        train_net.set_train()
        train_net(ms.ops.ones((2, 2)), ms.ops.ones((2, 2)))
"""


# A torch_npu data-parallel training step on an HCCL process group.
NPU_DDP_TRAIN = """
    import torch
    import torch_npu

    if __name__ == "__main__":
        torch.distributed.init_process_group("hccl")
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).npu())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(2, 2).npu()).sum().backward()
        optimizer.step()
"""


# A model-zoo entry whose device comes from the config file it loads: by default the GPU one, which the
# option's default names through a path join (model_utils/config.py style).
_ZOO_CONFIG_TRAIN = """
    import argparse
    import os

    import mindspore as ms
    import yaml
    from mindspore import nn
    from mindspore.communication import init

    current_dir = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser()
    parser.add_argument("--config_path", default=os.path.join(current_dir, "default_config_gpu.yaml"))

    if __name__ == "__main__":
        args = parser.parse_args()
        with open(args.config_path) as handle:
            config = yaml.safe_load(handle)
        ms.set_context(device_target=config["device_target"])
        init()
        net = nn.Dense(2, 2)
        train_net = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params()))
        train_net(ms.ops.ones((2, 2)), ms.ops.ones((2, 2)))
"""
_ZOO_CONFIGS = {"default_config_gpu.yaml": "device_target: GPU\n", "default_config.yaml": "device_target: Ascend\n"}


class HcclDeterministicUnset(ProgramRule):
    code = "ACL205"
    name = "hccl-deterministic-unset"
    category = "determinism"
    severity = "warning"
    summary = "HCCL collectives without HCCL_DETERMINISTIC=true"
    doc = RuleDoc(
        what="Reports an Ascend multi-card training run (an `hccl` process group, `mindspore.communication.init`, "
        "or an NPU launch script with torchrun/msrun) where `HCCL_DETERMINISTIC` is not set to `true`/`strict` in "
        "the launch script or the program. A launch line is judged with the script it runs, found on disk beside "
        "it or in a folder above it up to the project root: a launch of an inference, evaluation, conversion or "
        "data-preparation script (one that does not train) is not reported. When the script is not on disk, the "
        "launch line is reported only if it shows it trains (a training word in the script's name such as "
        "`pretrain_gpt.py`, or a flag such as `--train-iters`). A launch that selects another device "
        "(`--device_target GPU`, or a device key of the config file it loads, such as the GPU config a model "
        "zoo's `--config_path` defaults to) is never blamed, nor one that starts a single process "
        "(`--nproc_per_node 1`, `RANK_SIZE=1`, or one `python` line in no loop whose program spawns no workers); "
        "a launch line that writes its process count states it as the evidence that HCCL reduces across "
        "processes. Launch lines of one run (a line per rank) are one finding.",
        why="HCCL's reduction collectives (AllReduce, ReduceScatter, Reduce) are nondeterministic by default "
        "(`false`): gradient sums change order between runs, so loss curves drift apart even on the same NPUs. "
        "NCCL on the GPU side has its own order; only a deterministic HCCL makes NPU runs repeatable.",
        fix="`export HCCL_DETERMINISTIC=true` in the launch script (MindSpeed: `--npu-deterministic` sets it).",
    )
    invalid = (
        Example(
            {
                "train.py": """
                    import torch


                    if __name__ == "__main__":
                        torch.distributed.init_process_group(backend="hccl")
                        torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
                """,
                "run.sh": """
                    #!/bin/bash
                    export HCCL_CONNECT_TIMEOUT=1200
                    torchrun --nproc_per_node 8 train.py  # expect: ACL205
                """,
            },
            "hccl process group, launch script without the variable",
        ),
        Example(
            {
                "train.py": """
                    import argparse
                    import os

                    import torch

                    parser = argparse.ArgumentParser()
                    parser.add_argument("--deterministic", action="store_true")


                    def make_deterministic():
                        torch.use_deterministic_algorithms(True)
                        os.environ["HCCL_DETERMINISTIC"] = "true"


                    if __name__ == "__main__":
                        args = parser.parse_args()
                        torch.manual_seed(0)
                        if args.deterministic:
                            make_deterministic()
                        torch.distributed.init_process_group(backend="hccl")
                        torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
                """,
                "run.sh": """
                    #!/bin/bash
                    torchrun --nproc_per_node 8 train.py  # expect: ACL205
                """,
            },
            "set only by a helper called behind an opt-in flag: the default run has it off",
        ),
        Example.script("""
            import torch


            if __name__ == "__main__":  # expect: ACL205
                torch.distributed.init_process_group("hccl")
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """, "no launch script scanned"),
        Example(
            {
                "run_ms.sh": """
                    #!/bin/bash
                    source /usr/local/Ascend/ascend-toolkit/set_env.sh
                    msrun --worker_num=8 --local_worker_num=8 train_ms.py  # expect: ACL205
                """,
            },
            "an NPU launch script whose training script is not part of the scan",
        ),
        Example(
            {
                "examples/mcore/llama2/pretrain_llama2_7b_ptd.sh": """
                    #!/bin/bash
                    export CUDA_DEVICE_MAX_CONNECTIONS=1

                    NPUS_PER_NODE=8
                    MASTER_ADDR=localhost
                    MASTER_PORT=6000
                    NNODES=1
                    NODE_RANK=0

                    DISTRIBUTED_ARGS="
                        --nproc_per_node $NPUS_PER_NODE --nnodes $NNODES --node_rank $NODE_RANK
                        --master_addr $MASTER_ADDR --master_port $MASTER_PORT
                    "
                    GPT_ARGS="
                        --use-mcore-models
                        --tensor-model-parallel-size 1
                        --num-layers 32
                        --use-flash-attn
                        --use-fused-rmsnorm
                        --use-fused-swiglu
                        --normalization RMSNorm
                        --bf16
                    "
                    torchrun $DISTRIBUTED_ARGS pretrain_gpt.py $GPT_ARGS --distributed-backend nccl  # expect: ACL205
                """,
            },
            "a MindSpeed-LLM recipe: NPUS_PER_NODE and MindSpeed-only flags, no Ascend variable",
        ),
        Example(
            {
                "scripts/run_npu.sh": """
                    #!/bin/bash
                    export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3
                    torchrun --nproc_per_node 4 run.py --train-iters 1000  # expect: ACL205
                """,
            },
            "a script that is not on disk, with a flag only training reads",
        ),
        Example(
            {
                "test/train_full_8p.sh": """
                    #!/bin/bash
                    export RANK_SIZE=8
                    KERNEL_NUM=$(($(nproc)/8))
                    for((RANK_ID=0;RANK_ID<RANK_SIZE;RANK_ID++));
                    do
                        export RANK_ID=$RANK_ID
                        PID_START=$((KERNEL_NUM * RANK_ID))
                        PID_END=$((PID_START + KERNEL_NUM - 1))
                        nohup taskset -c $PID_START-$PID_END python3 main.py --lr 0.8 > train_$RANK_ID.log 2>&1 &  # expect: ACL205
                    done
                    wait
                """,
                "main.py": """
                    import torch
                    import torch_npu

                    if __name__ == "__main__":  # the run's launch line in test/ is where it is reported
                        torch.use_deterministic_algorithms(True)
                        torch.distributed.init_process_group("hccl")
                        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).npu())
                        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                        model(torch.ones(2, 2).npu()).sum().backward()
                        optimizer.step()
                """,
                "setup.cfg": "",
            },
            "one process per card started in a RANK_ID loop (nohup taskset ... python3 main.py &), "
            "the script in the folder above the launch script",
        ),
        Example(
            {
                "run_pretrain.py": _DUAL_BACKEND_PRETRAIN,
                "run_npu.sh": """
                    #!/bin/bash
                    mpirun -n 8 python run_pretrain.py --use_ascend True --epochs 15  # expect: ACL205
                """,
            },
            "the same script launched with --use_ascend True takes the HCCL branch",
        ),
        Example(
            {
                "train.py": _DUAL_DEVICE_MS_TRAIN,
                "run_distribute_train.sh": """
                    #!/bin/bash
                    export RANK_SIZE=8
                    export RANK_TABLE_FILE=$1
                    export DEVICE_ID=0
                    python train.py --device_target Ascend --run_distribute True > log0 2>&1 &  # expect: ACL205
                    for((i=1;i<8;i++)); do
                        export DEVICE_ID=$i
                        python train.py --device_target Ascend --run_distribute True > log$i 2>&1 &
                    done
                """,
            },
            "two launch lines of one 8-card run (rank 0, then ranks 1-7): one finding",
        ),
        Example(
            {
                "train.py": _ZOO_CONFIG_TRAIN,
                **_ZOO_CONFIGS,
                "run_distribute_train_ascend.sh": """
                    #!/bin/bash
                    mpirun -n 8 python train.py --config_path=./default_config.yaml  # expect: ACL205
                """,
            },
            "the Ascend launch passes the Ascend config of a program whose default config is the GPU one",
        ),
        Example(
            {
                "main.py": """
                    import torch
                    import torch.multiprocessing as mp
                    import torch_npu


                    def worker(rank):
                        torch.distributed.init_process_group("hccl", rank=rank, world_size=8)
                        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2).npu())
                        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                        model(torch.ones(2, 2).npu()).sum().backward()
                        optimizer.step()


                    if __name__ == "__main__":
                        mp.spawn(worker, nprocs=8)
                """,
                "train_full_8p.sh": """
                    #!/bin/bash
                    source /usr/local/Ascend/ascend-toolkit/set_env.sh
                    python3 main.py --multiprocessing-distributed  # expect: ACL205
                """,
            },
            "one `python` line whose program spawns a worker per card itself",
        ),
    )
    valid = (
        Example(
            {
                "train.py": _DUAL_DEVICE_MS_TRAIN,
                "run_standalone_train_ascend.sh": """
                    #!/bin/bash
                    export DEVICE_ID=$1
                    python train.py --device_target Ascend --run_distribute True > log.txt 2>&1 &
                """,
            },
            "one `python` process, in no loop and with no world size exported: a one-card run",
        ),
        Example(
            {
                "train.py": _ZOO_CONFIG_TRAIN,
                **_ZOO_CONFIGS,
                "run_distribute_train_gpu.sh": """
                    #!/bin/bash
                    export RANK_SIZE=8
                    CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 mpirun -n 8 python train.py
                """,
            },
            "the launch loads the program's default config, default_config_gpu.yaml: device_target GPU, NCCL",
        ),
        Example(
            {
                "train.py": NPU_DDP_TRAIN,
                "train_full_1p.sh": """
                    #!/bin/bash
                    source /usr/local/Ascend/ascend-toolkit/set_env.sh
                    NUM_GPUS_PER_WORKER=1
                    python -m torch.distributed.launch --nproc_per_node $NUM_GPUS_PER_WORKER train.py
                """,
            },
            "a multi-process launcher told to start one process: HCCL reduces nothing",
        ),
        Example.script("""
            import mindspore as ms
            from mindspore import nn
            from mindspore.communication import init

            ms.set_context(deterministic="ON")
            init("nccl")  # the GPU back end: no HCCL in this run
            net = nn.Dense(3, 1)
            grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())
        """, "MindSpore data parallel on GPUs: init('nccl')"),
        Example(
            {
                "train.py": _DUAL_DEVICE_MS_TRAIN.replace('if args.run_distribute == "True":',
                                                          'if int(os.environ.get("RANK_SIZE", 1)) > 1:')
                .replace("import argparse", "import argparse\n    import os"),
                "run_standalone_train.sh": """
                    #!/bin/bash
                    export RANK_SIZE=1
                    export DEVICE_ID=0
                    python -u train.py --device_target Ascend > log.txt 2>&1 &
                """,
            },
            "a standalone launch: one process with RANK_SIZE=1 is a one-card run",
        ),
        Example(
            {
                "train.py": """
                    import torch


                    if __name__ == "__main__":
                        torch.distributed.init_process_group(backend="hccl")
                        torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
                """,
                "run.sh": """
                    #!/bin/bash
                    export HCCL_DETERMINISTIC=true
                    torchrun --nproc_per_node 8 train.py
                """,
            },
        ),
        Example.script("""
            import torch


            if __name__ == "__main__":
                torch.distributed.init_process_group("nccl")
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """, "NCCL on GPUs"),
        Example(
            {
                "train.py": """
                    import torch

                    from devices import infer_device

                    if __name__ == "__main__":
                        torch.cuda.set_device(0)
                        torch.distributed.init_process_group(backend="nccl")
                        model = torch.nn.Linear(2, 1).to(infer_device())
                        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                        model(torch.ones(2)).sum().backward()
                        optimizer.step()
                """,
                "devices.py": """
                    import torch


                    def infer_device():
                        if hasattr(torch, "npu") and torch.npu.is_available():
                            return "npu"
                        return "cuda"
                """,
            },
            "a library's device helper may answer npu, but the program creates its process group on NCCL",
        ),
        Example(
            {
                "run_pretrain.py": _DUAL_BACKEND_PRETRAIN,
                "run_gpu.sh": """
                    #!/bin/bash
                    mpirun -n 8 python run_pretrain.py --use_ascend False --epochs 15
                """,
            },
            "the launch passes --use_ascend False: the run takes the init('nccl') branch, not HCCL",
        ),
        Example(
            {
                "examples/gpt3/train_gpt3_175b_distributed.sh": """
                    #!/bin/bash
                    export CUDA_DEVICE_MAX_CONNECTIONS=1

                    GPUS_PER_NODE=8
                    DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes 1"
                    GPT_MODEL_ARGS="--num-layers 96 --hidden-size 12288 --use-mcore-models"
                    TRAINING_ARGS="--micro-batch-size 1 --use-flash-attn --fp16 --distributed-backend nccl"
                    torchrun $DISTRIBUTED_ARGS pretrain_gpt.py $GPT_MODEL_ARGS $TRAINING_ARGS
                """,
            },
            "a plain Megatron-LM GPU recipe shares --use-flash-attn and --distributed-backend nccl",
        ),
        Example(
            {
                "tools/data_convert.sh": """
                    #!/bin/bash
                    source /usr/local/Ascend/ascend-toolkit/set_env.sh
                    python ./preprocess_data.py --input ./dataset/train.parquet --workers 4
                """,
            },
            "a single-process data tool in an NPU script",
        ),
        Example(
            {
                "pyproject.toml": "",
                "inference.py": """
                    import torch


                    if __name__ == "__main__":
                        torch.distributed.init_process_group(backend="hccl")
                        model = torch.nn.Linear(2, 1)
                        print(model(torch.ones(2)))
                """,
                "examples/llama/generate_llama.sh": """
                    #!/bin/bash
                    NPUS_PER_NODE=8
                    torchrun --nproc_per_node $NPUS_PER_NODE inference.py --max-new-tokens 64
                """,
            },
            "a multi-card NPU launch of an inference script (found at the repository root): no training run",
        ),
        Example(
            {
                "eval_npu.sh": """
                    #!/bin/bash
                    source /usr/local/Ascend/ascend-toolkit/set_env.sh
                    msrun --worker_num 8 evaluation.py --task mmlu
                """,
            },
            "a launch of a script that is not on disk and whose name says it evaluates",
        ),
        Example(
            {
                "train.py": _DUAL_DEVICE_MS_TRAIN,
                "run_standalone_train_gpu.sh": """
                    #!/bin/bash
                    python train.py --device_target GPU > log 2>&1 &
                """,
            },
            "a single-process GPU launch of a program that could also run on Ascend: not where HCCL is missing",
        ),
        Example(
            {
                "train.py": _DUAL_DEVICE_MS_TRAIN.replace("set_context(device_target=args.device_target)",
                                                          'set_context(device_target=args.device_target, '
                                                          'deterministic="ON")'),
                "run_distribute_train.sh": """
                    #!/bin/bash
                    export RANK_SIZE=8
                    export RANK_TABLE_FILE=$1
                    for((i=0;i<8;i++)); do
                        export DEVICE_ID=$i
                        python train.py --device_target Ascend --run_distribute True > log$i 2>&1 &
                    done
                """,
            },
            "MindSpore's deterministic switch sets HCCL_DETERMINISTIC=true itself",
        ),
    )

    @staticmethod
    def _needs_hccl(ctx: ProgramContext, facts: ProgramFacts) -> bool:
        if "hccl" in facts.uses:
            return True
        # A process group the program creates on NCCL is a CUDA run, whatever device helpers of its
        # libraries could return; only transfer_to_npu would turn that "nccl" into HCCL.
        if "nccl" in facts.uses and not program_loads_transfer_to_npu(ctx.program.files):
            return False
        return "npu" in facts.uses and "distributed" in facts.uses

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        if "hccl-deterministic" in facts.effects:
            return
        off = facts.effects_off.get("hccl-deterministic")
        if off is not None:
            self.report_at_source(ctx, off, f"{off.describe()} leaves HCCL reductions nondeterministic.",
                                  "HCCL_DETERMINISTIC=true")
            return
        # Never blamed on a launch that selects another device (a GPU script, by its flags or the config it
        # loads) nor on one that starts a single process: HCCL reduces nothing there.
        on_npu = [(shell, launch) for shell, launch in ctx.program.launches
                  if other_device(ctx, shell, launch) is None
                  and one_process(launch, _at(shell, launch), ctx.program, shell) is None]
        npu_launch = [(shell, launch, evidence) for shell, launch in on_npu
                      if _multi_process(launch) and (evidence := _ascend_evidence(shell)) is not None]
        if not self._needs_hccl(ctx, facts) and not npu_launch:
            return
        launches = npu_launch or [(shell, launch, _ascend_evidence(shell)) for shell, launch in on_npu]
        if not launches and ctx.program.launches:
            return  # every launch of it runs on another device, or on one card
        opt_in = facts.optional_effects.get("hccl-deterministic")
        for shell, launch, evidence in launches:
            self._report_launch(ctx, shell, launch, self._message(evidence, opt_in))
        if not launches:
            self.report_program(ctx, self._message(None, opt_in), "export HCCL_DETERMINISTIC=true in the launch script")

    def check_shell(self, ctx: ProgramContext, shell) -> None:
        """NPU launch scripts whose training script is not on disk."""
        if _shell_sets(shell.script.final_env(), "HCCL_DETERMINISTIC"):
            return
        evidence = _ascend_evidence(shell)
        if evidence is None:
            return
        for launch in shell.script.launches:
            # A script found on disk is judged by its run (a training program) or is no training
            # launch; one that is not on disk counts only where the launch line shows it trains.
            if _multi_process(launch) and "npu-deterministic" not in launch.flags() \
                    and other_device(None, shell, launch) is None and one_process(launch, _at(shell, launch)) is None \
                    and ctx.project.launch_target(shell, launch.script) is None and launch_trains(launch):
                if not _shell_sets(launch.effective_env(), "HCCL_DETERMINISTIC"):
                    self._report_launch(ctx, shell, launch, self._message(evidence))

    def _report_launch(self, ctx: ProgramContext, shell, launch, message: str) -> None:
        """Reported at the launch line; where the line writes how many processes its run has, that is the
        evidence that HCCL reduces across them."""
        found = processes(launch, _at(shell, launch))
        material = (Premise("material", True, found.evidence),) if found is not None and found.count > 1 else ()
        ctx.report_shell(self, launch.span, message, fix="export HCCL_DETERMINISTIC=true", autofix=_EXPORT_HCCL,
                         premises=material)

    @staticmethod
    def _message(evidence: Optional[str], opt_in=None) -> str:
        why = f" (an NPU launch: {evidence})" if evidence else ""
        opted = (f" The program sets it only on an opt-in path: "
                 f"{runs_only_when(opt_in.source.describe(), opt_in.guard, opt_in.default)}." if opt_in else "")
        return (f"HCCL_DETERMINISTIC is not set to true for this multi-card NPU run{why}: HCCL reductions "
                f"(AllReduce/ReduceScatter) sum in a varying order.{opted}")


def _at(shell, launch) -> str:
    return f"{shell.path}:{launch.span.line}"


def _multi_process(launch) -> bool:
    return launch.launcher in table("npu_launch")["multi_process_launchers"]


# Safe: it only makes HCCL's reductions repeatable, which is what the rule asks for.
_EXPORT_HCCL = safe_fix("export HCCL_DETERMINISTIC=true", InsertLine(text="export HCCL_DETERMINISTIC=true"))


def _shell_sets(env: dict, name: str) -> bool:
    entry = env.get(name)
    return entry is not None and (entry.value is None or entry.value.strip().lower() in {"true", "strict", "1", "on"})


def _ascend_shell(shell) -> bool:
    return _ascend_evidence(shell) is not None


def _ascend_evidence(shell) -> Optional[str]:
    """What in a launch script shows it starts an Ascend NPU run (knowledge/npu_launch.toml), or None."""
    hints = table("npu_launch")
    script = shell.script
    for launch in script.launches:
        if launch.launcher in hints["launchers"]:
            return f"it runs {launch.launcher}"
    prefixes, names = tuple(hints["env_prefixes"]), set(hints["env_names"])
    for name, assignment in script.variables.items():
        if name in names or name.startswith(prefixes):
            return f"it sets {name} at line {assignment.span.line}"
    for source in (*script.sourced, *script.unresolved_sources):
        if any(hint in source.lower() for hint in hints["source_hints"]):
            return f"it sources {source}"
    npu_only = set(hints["npu_only_flags"])
    for launch in script.launches:
        flag = next((f for f in launch.flags() if f in npu_only), None)
        if flag is not None:
            return f"it passes the MindSpeed flag --{flag}"
    return None


class MindSporeDeterministicOff(EffectRule):
    code = "ACL206"
    name = "mindspore-deterministic-off"
    category = "determinism"
    severity = "warning"
    summary = "MindSpore deterministic computing is not switched on"
    frameworks = ("mindspore",)
    tensor_framework = "mindspore"
    effect = "mindspore-deterministic"
    off_consequence = "Ascend kernels and collectives use nondeterministic implementations."
    switch_on = {"mindspore.set_context": ("deterministic", None, '"ON"'),
                 "mindspore.set_deterministic": ("deterministic", 0, "True")}
    switch_on_statement = ('mindspore.set_context(deterministic="ON")', "mindspore")
    # Switching it on also sets HCCL_DETERMINISTIC=true (mindspore/context.py, set_context(deterministic="ON");
    # mindspore/device_manager.py, set_deterministic(True); read in MindSpore 2.10): one call fixes both.
    also_fixes = ("ACL205",)
    doc = RuleDoc(
        what="Reports a MindSpore training entry point that never calls `mindspore.set_deterministic(True)` "
        "(2.5+) or `mindspore.set_context(deterministic=\"ON\")` (default \"OFF\"), or that switches it off. A "
        "program whose every device pin is a literal CPU or GPU (`set_context(device_target=\"CPU\")`, "
        "`ms.set_device(\"GPU\")`) is not asked: the switch acts on Ascend kernels and HCCL collectives.",
        why="Ascend kernels and communication in the global group then use nondeterministic implementations; "
        "two MindSpore runs differ, so a difference against the PyTorch reference cannot be attributed. Call it "
        "before `mindspore.communication.init()` so collectives are covered.",
        fix="`mindspore.set_deterministic(True)` (or `set_context(deterministic=\"ON\")`) at the top of the entry point.",
    )
    invalid = (
        Example.script("""
            import mindspore as ms
            from mindspore import nn

            ms.set_seed(0)
            net = nn.Dense(3, 1)
            grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())  # expect: ACL206
        """),
        Example.script("""
            import mindspore as ms
            from mindspore import nn

            ms.set_seed(0)
            ms.set_context(deterministic="OFF")  # expect: ACL206
            net = nn.Dense(3, 1)
            grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())
        """, "switched off"),
        Example.script("""
            import mindspore as ms
            from mindspore import nn


            class ClipTrainStep(nn.TrainOneStepCell):
                def construct(self, *inputs):
                    loss = self.network(*inputs)
                    self.optimizer(self.grad(self.network, self.weights)(*inputs))
                    return loss


            if __name__ == "__main__":  # expect: ACL206
                ms.set_seed(0)
                net = nn.WithLossCell(nn.Dense(8, 8), nn.MSELoss())
                step = ClipTrainStep(net, nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9))
                step.set_train()
                for _ in range(3):
                    step(ms.ops.ones((4, 8)), ms.ops.ones((4, 8)))
        """, "a loop calling a locally subclassed TrainOneStepCell by hand"),
    )
    valid = (
        Example.script("""
            import mindspore as ms
            from mindspore import nn

            ms.set_context(deterministic="ON")
            net = nn.Dense(3, 1)
            grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())
        """),
        Example.script("""
            import mindspore as ms
            from mindspore import nn, ops

            if __name__ == "__main__":
                ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
                ms.set_seed(0)
                net = nn.Dense(4, 2)
                opt = nn.SGD(net.trainable_params(), learning_rate=0.01)
                step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
                step.set_train()
                step(ops.ones((8, 4)), ops.ones((8, 2)))
        """, "pinned to CPU: the switch acts on Ascend kernels and HCCL collectives only"),
    )

    def required(self, ctx: ProgramContext, facts: ProgramFacts) -> bool:
        # A program pinned to CPU or GPU never runs the Ascend kernels and HCCL collectives the switch acts
        # on: asking for it changes nothing there (the Ascend port of the program is another program).
        return runs_only_off(ctx, table("usage")["device_pins"]["deterministic_acts_on"]) is None

    def missing_message(self, ctx: ProgramContext, facts: ProgramFacts) -> str:
        return f"{ctx.program.entry.path} never switches on MindSpore deterministic computing (default \"OFF\")."

    def fix_text(self) -> str:
        return "mindspore.set_deterministic(True) before communication.init()"


# Unsafe: the data order changes (on purpose) from the one the global generator gave.
_SEEDED_GENERATOR = unsafe_fix("pass a seeded generator=", SetArgument(
    keyword="generator", code="torch.Generator().manual_seed(0)", imports=("torch",)))


def _dataloaders(ctx: ProgramContext):
    names = set(table("usage")["dataloaders"])
    for step in ctx.program.calls():
        if step.fact.names & names:
            yield step


class DataLoaderShuffleUnseeded(ProgramRule):
    code = "ACL207"
    name = "dataloader-shuffle-unseeded"
    category = "determinism"
    severity = "warning"
    summary = "DataLoader(shuffle=True) without its own seeded generator in a seeded program"
    frameworks = ("torch",)
    tensor_framework = "torch"
    doc = RuleDoc(
        what="Reports `DataLoader(..., shuffle=True)` without `generator=` in a program that otherwise seeds torch.",
        why="The sampler then draws its permutation seed from the global torch generator at the moment the "
        "iterator starts: every extra random draw before it (a different init order, one more layer, a fused op "
        "on one side) changes the data order, so the GPU and NPU runs see different batches.",
        fix="Pass `generator=torch.Generator().manual_seed(seed)` to the DataLoader.",
    )
    invalid = (
        Example.script("""
            import torch


            if __name__ == "__main__":
                torch.manual_seed(0)
                loader = torch.utils.data.DataLoader(range(8), batch_size=2, shuffle=True)  # expect: ACL207
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """),
    )
    valid = (
        Example.script("""
            import torch


            if __name__ == "__main__":
                torch.manual_seed(0)
                g = torch.Generator()
                g.manual_seed(0)
                loader = torch.utils.data.DataLoader(range(8), batch_size=2, shuffle=True, generator=g)
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """),
        Example.script("""
            import torch


            if __name__ == "__main__":
                loader = torch.utils.data.DataLoader(range(8), shuffle=True)
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """, "not seeded at all: ACL104 reports that instead"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        if not _seeded(facts):
            return
        for step in _dataloaders(ctx):
            shuffle = step.fact.arg("shuffle", 2)
            if shuffle is not None and shuffle.value.literal is True and step.fact.arg("generator") is None:
                ctx.report(self, step.file, step.fact.node, "shuffle=True without generator=: the order depends "
                           "on every earlier draw from the global torch generator.",
                           fix="DataLoader(..., generator=torch.Generator().manual_seed(seed))",
                           autofix=_SEEDED_GENERATOR)


class DataLoaderWorkersUnseeded(ProgramRule):
    code = "ACL208"
    name = "dataloader-workers-unseeded"
    category = "determinism"
    severity = "info"
    summary = "DataLoader workers seeded from the global generator"
    frameworks = ("torch",)
    tensor_framework = "torch"
    doc = RuleDoc(
        what="Reports `DataLoader(num_workers>0)` with neither `generator=` nor `worker_init_fn=` in a seeded "
        "program that draws from Python's or NumPy's generator.",
        why="Since torch 1.9 each worker seeds `random`, NumPy and torch from a base seed drawn from the "
        "loader's generator, or from the global torch generator when none is given: random augmentations in "
        "workers then shift with any other change in global draws between the two sides.",
        fix="Pass a seeded `generator=` (and a `worker_init_fn` for other libraries).",
    )
    invalid = (
        Example.script("""
            import torch


            if __name__ == "__main__":
                torch.manual_seed(0)
                import random
                random.seed(0)
                random.random()
                loader = torch.utils.data.DataLoader(range(8), num_workers=4)  # expect: ACL208
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """),
    )
    valid = (
        Example.script("""
            import torch


            if __name__ == "__main__":
                torch.manual_seed(0)
                import random
                random.seed(0)
                random.random()
                loader = torch.utils.data.DataLoader(range(8), num_workers=4, generator=torch.Generator().manual_seed(0))
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        if not _seeded(facts) or not ({"numpy-random", "python-random"} & set(facts.uses)):
            return
        for step in _dataloaders(ctx):
            if runs_workers(step.fact) and step.fact.arg("generator") is None and worker_init_fn(step.fact) is None:
                ctx.report(self, step.file, step.fact.node, "worker seeds come from the global torch generator "
                           "(no generator=, no worker_init_fn=).", fix="pass generator=torch.Generator().manual_seed(seed)",
                           autofix=_SEEDED_GENERATOR)


class DropoutInParityRun(ProgramRule):
    code = "ACL209"
    name = "dropout-in-parity-run"
    category = "determinism"
    severity = "info"
    summary = "Dropout is active in a seeded parity run"
    doc = RuleDoc(
        what="Reports dropout with a non-zero probability (torch `nn.Dropout`/`F.dropout`, MindSpore "
        "`nn.Dropout`, whose first argument is the keep probability: drop = 1 - keep_prob, Megatron `--attention-dropout`/`--hidden-dropout`) in a program that is seeded for parity. "
        "The probability may be a literal or a name acclint follows one step: a constant, a constructor's default "
        "that no caller in the program overrides, or a config attribute whose config class (declared, or the one "
        "the file and its imported modules agree on) gives a default.",
        why="CUDA and Ascend generate dropout masks with different Philox implementations, so even with equal "
        "seeds the masks differ and the losses diverge from step 0. The guides switch dropout off to align "
        "losses (Megatron defaults are 0.1; MindSpeed-LLM recipes set 0.0).",
        fix="Set dropout to 0 for the alignment run (`nn.Dropout(p=0.0)`, `--attention-dropout 0.0 --hidden-dropout 0.0`). "
        "When the probability comes from a name, set it where it is defined: the constant, the constructor's "
        "default (or pass 0.0 where the module is built), the config's value.",
        references=(
            # The probability hidden in a config's default: a model built without touching dropout keeps 0.1.
            "https://github.com/princeton-nlp/SimCSE/issues/127",
            # Equal seeds, another dropout implementation: other masks, other outputs (expected behaviour).
            "https://github.com/pytorch/pytorch/issues/149726",
        ),
    )
    invalid = (
        Example.script("""
            import torch


            if __name__ == "__main__":
                torch.manual_seed(0)
                drop = torch.nn.Dropout(p=0.1)  # expect: ACL209
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """),
        Example({
            "train.py": """
                import torch
                from torch import nn

                from model import Block, TinyConfig

                ATTENTION_DROPOUT = 0.1


                class Net(nn.Module):
                    def __init__(self, config: TinyConfig, dropout=0.2):
                        super().__init__()
                        self.block = Block(config)
                        self.attn_drop = nn.Dropout(ATTENTION_DROPOUT)  # expect: ACL209
                        self.drop = nn.Dropout(dropout)  # expect: ACL209


                if __name__ == "__main__":
                    torch.manual_seed(0)
                    net = Net(TinyConfig())
                    torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
            """,
            "model.py": """
                from dataclasses import dataclass

                from torch import nn


                @dataclass
                class TinyConfig:
                    hidden_dropout_prob: float = 0.1


                class Block(nn.Module):
                    def __init__(self, config):
                        super().__init__()
                        self.dropout = nn.Dropout(config.hidden_dropout_prob)  # expect: ACL209
            """,
        }, title="the probability from a module constant, a constructor default, a config class's default"),
        Example.script("""
            import mindspore as ms
            from mindspore import nn, ops

            DROP = 0.1


            if __name__ == "__main__":
                ms.set_seed(0)
                net = nn.SequentialCell(nn.Dense(4, 2), nn.Dropout(1 - DROP))  # expect: ACL209
                opt = nn.SGD(net.trainable_params(), learning_rate=0.01)
                step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
                step.set_train()
                step(ops.ones((8, 4)), ops.ones((8, 2)))
        """, title="MindSpore: keep_prob written as 1 - p by the code drops p"),
    )
    valid = (
        Example.script("""
            import torch


            if __name__ == "__main__":
                torch.manual_seed(0)
                drop = torch.nn.Dropout(p=0.0)
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """),
        Example.script("""
            import torch
            from torch import nn


            class Net(nn.Module):
                def __init__(self, dropout=0.1):
                    super().__init__()
                    self.drop = nn.Dropout(dropout)


            if __name__ == "__main__":
                torch.manual_seed(0)
                net = Net(dropout=0.0)
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """, title="the caller switches the constructor's default off"),
        Example.script("""
            import mindspore as ms
            from mindspore import nn, ops

            DROP = 0.0


            if __name__ == "__main__":
                ms.set_seed(0)
                net = nn.SequentialCell(nn.Dense(4, 2), nn.Dropout(keep_prob=1.0), nn.Dropout(1 - DROP))
                opt = nn.SGD(net.trainable_params(), learning_rate=0.01)
                step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
                step.set_train()
                step(ops.ones((8, 4)), ops.ones((8, 2)))
        """, title="MindSpore: keep_prob=1.0 and 1 - 0.0 keep everything (no dropout)"),
    )

    consequence = "draws device-specific masks: GPU and NPU losses diverge from step 0 even with equal seeds."

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        if not _seeded(facts):
            return
        dropouts = set(table("usage")["dropouts"])
        for step in ctx.program.calls():
            if not step.fact.names & dropouts:
                continue
            found = self._drop_probability(ctx, step)
            if found is None:
                continue
            drop, said, written = found
            if number(drop) and drop > 0:
                fix = f"use 0.0 for `{said}` in the alignment run" if said else "use p=0.0 for the alignment run"
                ctx.report(self, step.file, step.fact.node, f"dropout p={drop:g}{written} {self.consequence}", fix=fix,
                           autofix=None if said else unsafe_fix("switch dropout off", switch_off(step.fact)))
        for shell, launch in ctx.program.launches:
            for flag in ("attention-dropout", "hidden-dropout"):
                value = launch.flags().get(flag)
                if value is not None and _positive(value.value):
                    ctx.report_shell(self, value.span, f"--{flag} {value.value}: dropout masks differ between "
                                     "CUDA and Ascend.", fix=f"--{flag} 0.0 for the alignment run")


    def _drop_probability(self, ctx: ProgramContext, step) -> Optional[tuple]:
        """(drop probability, the name it comes from or "", how it is written) of a dropout call, or None
        when not followed. MindSpore's nn.Dropout reads a keep probability first: drop = 1 - keep, and
        `1 - x` written there is the drop probability x converted by the code."""
        arg, keep = probability_arg(step.fact)
        if arg is None:
            return (1 - default_keep() if keep_first(step.fact) else 0.5), "", ""
        value, converted = arg.value, complement_of(arg.value)
        if converted is not None:  # keep_prob=1 - x drops x; p=1 - x drops 1 - x
            keep, value = not keep, converted
        if value.is_literal:
            number_ = value.literal if number(value.literal) else None
            if number_ is None:
                return None
            return (1 - number_ if keep else number_), "", f" (keep_prob={number_:g})" if keep else ""
        origin = self._origin(ctx, step, value)
        if origin is None or not number(origin.value):
            return None
        kept = f"keep_prob={origin.value:g}, " if keep else ""
        return (1 - origin.value if keep else origin.value), value.dotted, f" ({kept}`{value.dotted}`: {origin.what}, {origin.where})"

    @staticmethod
    def _origin(ctx: ProgramContext, step, value) -> Optional[Origin]:
        """The probability a name stands for: a constant, a parameter's default that no caller in the program
        overrides, or the config class's default of a config attribute."""
        call = step.fact
        origin = value_origin(ctx.project, step.file, call.scope, call.order, value)
        function = enclosing_function(step.file, call.scope)
        if origin is None or function is None or value.dotted not in function.defaults:
            return origin
        overridden = passed_by_a_caller(ctx.project, ctx.program, step.file, function, value.dotted)
        return None if overridden else origin


def _positive(text) -> bool:
    try:
        return float(text) > 0
    except (TypeError, ValueError):
        return False


RULES = [DeterministicAlgorithmsOff(), CudnnBenchmark(), CudnnDeterministicUnset(), CublasWorkspaceMissing(),
         HcclDeterministicUnset(), MindSporeDeterministicOff(), DataLoaderShuffleUnseeded(),
         DataLoaderWorkersUnseeded(), DropoutInParityRun()]
