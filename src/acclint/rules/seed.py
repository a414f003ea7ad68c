"""Category `seed`: every generator the run draws from is seeded, by code the entry point runs,
before the model is built. Checklist item 1 of every guide (knowledge.md §1)."""

from __future__ import annotations

from typing import ClassVar

from acclint.knowledge import table
from acclint.linter.context import ProgramContext
from acclint.linter.edits import InsertLine, safe_fix, span_location, unsafe_fix
from acclint.linter.facts import Call
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import ProgramRule, at_entry_start, where
from acclint.rules.program_facts import ProgramFacts


def _uncalled_seeders(ctx: ProgramContext, facts: ProgramFacts) -> list:
    """Local functions of the program's files that seed something but are never reached.

    Only those the entry script defines or that a reached file imports by name: a helper in
    a library that nothing here asked for says nothing about this program.
    """
    seeders = table("seeding")["seeders"]
    program = ctx.program
    imported = {(imp.name or imp.bound) for f in program.files for imp in f.imports}
    found = []
    for file in program.files:
        for function in file.functions.values():
            if (file.abspath, function.qualname) in program.reached_functions:
                continue
            if file is not program.entry and function.qualname.split(".")[0] not in imported:
                continue
            covers = set()
            for call in file.calls:
                if call.scope == function.qualname:
                    for name in call.names:
                        covers.update(seeders.get(name, {}).get("covers", ()))
            if covers:
                found.append((file, function, covers))
    return found


class UnseededGenerator(ProgramRule):
    """A generator the program never seeds. Warning when the program visibly draws from it."""

    generator: ClassVar[str]
    label: ClassVar[str]  # how the message names the generator
    used_by: ClassVar[str] = ""  # usage key that makes it a warning; empty = always a warning
    seed_call: ClassVar[str]
    seed_statement: ClassVar[tuple]  # (code, module it needs) that the unsafe autofix adds

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        if self.generator in facts.seeded:
            return
        use = facts.uses.get(self.used_by) if self.used_by else None
        severity = "warning" if (use is not None or not self.used_by) else "info"
        detail = (f"; {use.fact.callee}() at {where(use)} draws from it" if use is not None
                  else "" if not self.used_by else
                  "; nothing here draws from it directly, but libraries the run calls may")
        helpers = [f"`{fn.qualname}` ({file.path}:{file.spans[fn.node].line})"
                   for file, fn, covers in _uncalled_seeders(ctx, facts) if self.generator in covers]
        hint = f" {', '.join(helpers)} would seed it but is never called." if helpers else ""
        message = f"{self.label} is never seeded in the program started by {ctx.program.entry.path}{detail}.{hint}"
        # Unsafe: seeding changes every random draw the run makes from here on.
        autofix = unsafe_fix(f"add {self.seed_statement[0]}", at_entry_start(ctx, *self.seed_statement))
        self.report_program(ctx, message, f"call `{self.seed_call}` at the start of the entry point "
                            "(or a helper that does, e.g. transformers.set_seed)", severity, autofix)


_NUMPY_DOC = RuleDoc(
    what="Reports a training entry point whose program never seeds NumPy's global generator "
    "(`np.random.seed`, or a helper such as `transformers.set_seed`, `mindspore.set_seed`).",
    why="Data shuffling, masking and augmentation written with `np.random.*` then differ on every run, "
    "so the GPU run and the NPU run see different batches from step 0 and their loss curves cannot be "
    "compared. A program that never calls `np.random.*` itself gets an info finding: libraries may still draw from it.",
    fix="Seed NumPy at the start of the entry point, before data is built: `np.random.seed(seed)`, "
    "or call one seed-everything helper on both sides.",
)


class UnseededPythonRandom(UnseededGenerator):
    code = "ACL101"
    name = "unseeded-python-random"
    category = "seed"
    severity = "warning"
    summary = "Python's `random` generator is never seeded by the training entry point"
    generator, label, used_by, seed_call = "python-random", "Python's `random` generator", "python-random", "random.seed(seed)"
    seed_statement = ("random.seed(0)", "random")
    doc = RuleDoc(
        what="Reports a training entry point whose program never calls `random.seed` (directly, through a "
        "local helper it calls, or through a known helper such as `transformers.set_seed`, "
        "`lightning.seed_everything`, `accelerate.utils.set_seed`, `msprobe seed_all`).",
        why="`random.shuffle`, `random.choice` and friends then produce another order on every run; the GPU "
        "and NPU runs start from different data and no later comparison means anything. Info when the program "
        "never calls `random.*` itself.",
        fix="Call `random.seed(seed)` (or one seed-everything helper) at the top of the entry point on both sides.",
    )
    invalid = (
        Example.script("""
            import random
            import torch


            def main():
                data = list(range(10))
                random.shuffle(data)
                torch.manual_seed(0)
                model = torch.nn.Linear(2, 2)
                model(torch.ones(2)).sum().backward()


            if __name__ == "__main__":  # expect: ACL101
                main()
        """, "random.shuffle without random.seed"),
    )
    valid = (
        Example.script("""
            import random as rnd
            import torch


            def main():
                rnd.seed(0)
                data = list(range(10))
                rnd.shuffle(data)
                torch.manual_seed(0)
                torch.nn.Linear(2, 2)(torch.ones(2)).sum().backward()


            if __name__ == "__main__":
                main()
        """, "seeded through an alias"),
        Example(
            {
                "train.py": """
                    import random
                    import torch
                    from utils.seeding import seed_everything

                    if __name__ == "__main__":
                        seed_everything(1)
                        random.shuffle([1, 2])
                        torch.nn.Linear(2, 2)(torch.ones(2)).sum().backward()
                """,
                "utils/seeding.py": """
                    import random
                    import numpy as np
                    import torch


                    def seed_everything(seed):
                        random.seed(seed)
                        np.random.seed(seed)
                        torch.manual_seed(seed)
                """,
            },
            "seeded by a local helper in another file",
        ),
        Example.script("""
            import random


            def helper():
                return random.random()
        """, "a library module: not an entry point"),
    )


class UnseededNumpy(UnseededGenerator):
    code = "ACL103"
    name = "unseeded-numpy"
    category = "seed"
    severity = "warning"
    summary = "NumPy's global generator is never seeded by the training entry point"
    generator, label, used_by, seed_call = "numpy", "NumPy's global generator", "numpy-random", "np.random.seed(seed)"
    seed_statement = ("numpy.random.seed(0)", "numpy")
    doc = _NUMPY_DOC
    invalid = (
        Example.script("""
            import numpy as np
            import torch

            torch.manual_seed(0)
            noise = np.random.rand(4)
            model = torch.nn.Linear(4, 1)
            loss = model(torch.tensor(noise, dtype=torch.float32)).sum()
            loss.backward()  # expect: ACL103
        """, "a module-level training script, no main guard"),
        Example(
            {
                "train.py": """
                    import numpy as np
                    import torch
                    from helpers import seed_all


                    if __name__ == "__main__":  # expect: ACL103
                        torch.manual_seed(0)
                        x = np.random.randn(3)
                        torch.nn.Linear(3, 1)(torch.tensor(x).float()).sum().backward()
                """,
                "helpers.py": """
                    import numpy as np


                    def seed_all(seed):
                        np.random.seed(seed)
                """,
            },
            "the helper is imported but never called",
        ),
    )
    valid = (
        Example.script("""
            import numpy
            import torch
            from transformers import set_seed


            if __name__ == "__main__":
                set_seed(42)
                x = numpy.random.rand(3)
                torch.nn.Linear(3, 1)(torch.ones(3)).sum().backward()
        """, "transformers.set_seed covers numpy"),
        Example.script("""
            import numpy as np
            import mindspore as ms
            from mindspore import nn


            if __name__ == "__main__":
                ms.set_seed(1)
                x = np.random.rand(3)
                net = nn.Dense(3, 1)
                grad_fn = ms.value_and_grad(lambda a: net(a).sum(), None, net.trainable_params())
        """, "mindspore.set_seed also seeds numpy"),
    )


class UnseededTorch(UnseededGenerator):
    code = "ACL104"
    name = "unseeded-torch"
    category = "seed"
    severity = "warning"
    summary = "torch's generators (CPU and CUDA/NPU) are never seeded by the training entry point"
    frameworks = ("torch",)
    generator, label, used_by, seed_call = "torch-cpu", "torch's CPU generator", "", "torch.manual_seed(seed)"
    seed_statement = ("torch.manual_seed(0)", "torch")
    doc = RuleDoc(
        what="Reports a PyTorch training entry point whose program never calls `torch.manual_seed` (directly, "
        "through local code it calls, or through a helper that does). In torch 2.x `torch.manual_seed` also "
        "seeds every CUDA generator and, through `_seed_custom_device`, every NPU generator when torch_npu is "
        "loaded; `torch.cuda.manual_seed_all` / `torch.npu.manual_seed_all` alone leave the CPU generator unseeded.",
        why="Initial weights (`nn.Linear` draws U(-1/sqrt(in), 1/sqrt(in)) on the CPU before `.to(device)`), "
        "dropout masks and DataLoader shuffling all come from these generators. Unseeded, the GPU and NPU runs "
        "start from different weights, and the first loss already differs.",
        fix="Call `torch.manual_seed(seed)` at the start of the entry point, before the model is built, on both sides.",
    )
    invalid = (
        Example.script("""
            import torch
            import torch_npu


            def train():
                torch.npu.manual_seed_all(0)
                model = torch.nn.Linear(8, 2).npu()
                model(torch.ones(8).npu()).sum().backward()


            if __name__ == "__main__":  # expect: ACL104
                train()
        """, "only the NPU generators are seeded"),
    )
    valid = (
        Example.script("""
            import torch as t


            if __name__ == "__main__":
                t.manual_seed(1234)
                m = t.nn.Linear(8, 2)
                m(t.ones(8)).sum().backward()
        """, "seeded through an alias"),
        Example(
            {
                "pretrain_gpt.py": """
                    from megatron.training import pretrain


                    def model_provider():
                        pass


                    if __name__ == "__main__":
                        pretrain(None, model_provider, None, None)
                """,
            },
            "Megatron's pretrain seeds through initialize_megatron",
        ),
    )


class UnseededMindSpore(UnseededGenerator):
    code = "ACL106"
    name = "unseeded-mindspore"
    category = "seed"
    severity = "warning"
    summary = "MindSpore's global seed is never set by the training entry point"
    frameworks = ("mindspore",)
    generator, label, used_by, seed_call = "mindspore", "MindSpore's global seed", "", "mindspore.set_seed(seed)"
    seed_statement = ("mindspore.set_seed(0)", "mindspore")
    doc = RuleDoc(
        what="Reports a MindSpore training entry point whose program never calls `mindspore.set_seed` "
        "(or a helper that does, such as msprobe's `seed_all`).",
        why="Without it weight initializers (`HeUniform` for `nn.Dense` since r2.1, `Normal(0.01)` for "
        "`nn.Embedding`) and NumPy pick random seeds, so every card and every run starts from other weights; "
        "in multi-card runs replicated weights are no longer identical.",
        fix="Call `mindspore.set_seed(seed)` at the start of the entry point, before building the network.",
    )
    invalid = (
        Example.script("""
            import mindspore as ms
            from mindspore import nn

            net = nn.Dense(3, 1)
            grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())  # expect: ACL106
        """, "no set_seed"),
    )
    valid = (
        Example.script("""
            from mindspore import nn, set_seed, value_and_grad

            set_seed(0)
            net = nn.Dense(3, 1)
            grad_fn = value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())
        """, "set_seed imported by name"),
    )


class PythonHashSeedUnset(ProgramRule):
    code = "ACL102"
    name = "pythonhashseed-unset"
    category = "seed"
    severity = "info"
    summary = "PYTHONHASHSEED is not fixed for the training run"
    doc = RuleDoc(
        what="Reports a training entry point for which neither the launch script nor the program sets "
        "`PYTHONHASHSEED` (the guides' `seed_all` sets it; MindSpeed's `--npu-deterministic` too).",
        why="String hashing is salted per process, so the iteration order of sets (and anything built from "
        "them: vocabularies, file lists) changes from run to run. Note that `os.environ['PYTHONHASHSEED']` set "
        "inside the running interpreter only reaches child processes (DataLoader workers started with spawn, "
        "launched ranks); export it in the launch script to fix the main process too.",
        fix="`export PYTHONHASHSEED=0` in the launch script (or set it before spawning workers).",
    )
    invalid = (
        Example.script("""
            import torch

            if __name__ == "__main__":  # expect: ACL102
                torch.manual_seed(0)
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """),
    )
    valid = (
        Example.script("""
            import os
            import torch

            if __name__ == "__main__":
                os.environ["PYTHONHASHSEED"] = "0"
                torch.manual_seed(0)
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        if "pythonhashseed" not in facts.effects:
            self.report_program(ctx, f"PYTHONHASHSEED is not set for {ctx.program.entry.path}: set and dict-of-str "
                                "iteration orders change between runs.", "export PYTHONHASHSEED=0 in the launch script",
                                autofix=self._autofix(ctx))

    @staticmethod
    def _autofix(ctx: ProgramContext):
        # Safe: it fixes string hashing and nothing else the program computes.
        launches = ctx.program.launches
        if launches:
            return safe_fix("export PYTHONHASHSEED=0", *(
                InsertLine(path=shell.abspath, at=span_location(launch.span), text="export PYTHONHASHSEED=0")
                for shell, launch in launches))
        return safe_fix("set PYTHONHASHSEED", at_entry_start(ctx, 'os.environ["PYTHONHASHSEED"] = "0"', "os"))


class DeviceSeedCurrentOnly(ProgramRule):
    code = "ACL105"
    name = "device-seed-current-only"
    category = "seed"
    severity = "warning"
    summary = "Only the current CUDA/NPU device is seeded in a multi-device program"
    frameworks = ("torch",)
    doc = RuleDoc(
        what="Reports `torch.cuda.manual_seed` / `torch.npu.manual_seed` (current device only) in a distributed "
        "or multi-device program that never calls `torch.manual_seed` or `manual_seed_all`.",
        why="`manual_seed` seeds only the device that is current when the (lazy) call runs; torch_npu's own "
        "docstring warns it is insufficient for multi-NPU determinism. Other devices keep random seeds, so "
        "replicas start from different dropout streams.",
        fix="Use `torch.manual_seed(seed)` (seeds every device in torch 2.x) or `torch.npu.manual_seed_all(seed)`.",
    )
    invalid = (
        Example.script("""
            import torch
            import torch.distributed as dist

            if __name__ == "__main__":
                dist.init_process_group("hccl")
                torch.npu.manual_seed(0)  # expect: ACL105
                torch.nn.Linear(2, 1).npu()(torch.ones(2).npu()).sum().backward()
        """),
    )
    valid = (
        Example.script("""
            import torch
            import torch.distributed as dist

            if __name__ == "__main__":
                dist.init_process_group("hccl")
                torch.manual_seed(0)
                torch.npu.manual_seed(0)
                torch.nn.Linear(2, 1).npu()(torch.ones(2).npu()).sum().backward()
        """),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        if "distributed" not in facts.uses and not ctx.program.launches:
            return
        for device in ("cuda", "npu"):
            current = facts.seeded.get(f"{device}-current")
            if current is not None and device not in facts.seeded:
                self.report_at_source(ctx, current, f"{current.what} seeds only the current {device.upper()} "
                                      "device; other devices of this multi-device run stay unseeded.",
                                      f"use torch.manual_seed(seed) or torch.{device}.manual_seed_all(seed)")


class SeedHelperNeverCalled(ProgramRule):
    code = "ACL107"
    name = "seed-helper-never-called"
    category = "seed"
    severity = "warning"
    summary = "A seeding helper is defined or imported but the entry point never calls it"
    doc = RuleDoc(
        what="Reports a local function that seeds generators (e.g. a `seed_all` copied from the migration guide) "
        "that the entry script defines or imports but never calls, while the generators it would seed stay unseeded.",
        why="The script looks seeded on review, and the run is not: weights and data order differ between the "
        "GPU and NPU runs. This is one of the most common reasons a 'seeded' port does not reproduce.",
        fix="Call the helper at the start of the entry point (before the model is built), or delete it.",
    )
    invalid = (
        Example(
            {
                "train.py": """
                    import torch
                    from utils.seeding import seed_all


                    if __name__ == "__main__":
                        model = torch.nn.Linear(2, 1)
                        model(torch.ones(2)).sum().backward()
                """,
                "utils/seeding.py": """
                    import random
                    import torch


                    def seed_all(seed=42):  # expect: ACL107
                        random.seed(seed)
                        torch.manual_seed(seed)
                """,
            },
            "imported from a local module, never called",
        ),
    )
    valid = (
        Example(
            {
                "train.py": """
                    import torch
                    import utils.seeding as seeding


                    def main():
                        seeding.seed_all(1)
                        torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()


                    if __name__ == "__main__":
                        main()
                """,
                "utils/seeding.py": """
                    import random
                    import torch


                    def seed_all(seed=42):
                        random.seed(seed)
                        torch.manual_seed(seed)
                """,
            },
            "called through a module alias",
        ),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        for file, function, covers in _uncalled_seeders(ctx, facts):
            unseeded = sorted(g for g in covers if g not in facts.seeded)
            if unseeded:
                ctx.report(self, file, function.node,
                           f"`{function.qualname}` seeds {', '.join(unseeded)} but {ctx.program.entry.path} never "
                           "calls it, so those generators stay unseeded.",
                           fix=f"call {function.qualname}(seed) at the start of the entry point")


class SeedAfterModel(ProgramRule):
    code = "ACL108"
    name = "seed-after-model-construction"
    category = "seed"
    severity = "warning"
    summary = "The seed is set only after the model is constructed"
    doc = RuleDoc(
        what="Reports a seed call (torch or MindSpore) that runs after the first model construction in the "
        "program's execution order, following local functions and classes.",
        why="The model's initial weights were drawn before the generator was seeded, so they differ between "
        "runs and between the GPU and NPU sides even though the script is 'seeded'. Parity checks start by "
        "comparing initial weights; they fail here first.",
        fix="Move the seed call before the model is built (or load the same checkpoint on both sides).",
    )
    invalid = (
        Example.script("""
            import torch


            class Net(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = torch.nn.Linear(4, 2)


            def main():
                model = Net()  # expect: ACL108
                torch.manual_seed(0)
                model.fc(torch.ones(4)).sum().backward()


            if __name__ == "__main__":
                main()
        """),
    )
    valid = (
        Example.script("""
            import torch


            class Net(torch.nn.Module):
                pass


            def main():
                torch.manual_seed(0)
                model = Net()
                model(torch.ones(4)).sum().backward()


            if __name__ == "__main__":
                main()
        """),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        model = facts.first_model
        if model is None:
            return
        for generator in ("torch-cpu", "mindspore"):
            source = facts.seeded.get(generator)
            if source is not None and source.step is not None and source.step.index > model.index:
                # Reported at the construction: the seed helper itself is not what is wrong.
                ctx.report(self, model.file, model.fact.node,
                           f"{model.fact.callee}() is constructed before {source.describe()} seeds the generator: "
                           "its initial weights come from an unseeded generator.",
                           fix="seed before constructing the model")


RULES = [UnseededPythonRandom(), PythonHashSeedUnset(), UnseededNumpy(), UnseededTorch(), DeviceSeedCurrentOnly(),
         UnseededMindSpore(), SeedHelperNeverCalled(), SeedAfterModel()]
