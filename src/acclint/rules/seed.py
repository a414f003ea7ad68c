"""Category `seed`: every generator the run draws from is seeded, by code the entry point runs,
before the model is built. Checklist item 1 of every guide (docs/knowledge/guides.md#the-checklist; facts: docs/knowledge/seeding.md)."""

from __future__ import annotations

from typing import ClassVar

from acclint.knowledge import table
from acclint.knowledge.library import seeders as library_seeders
from acclint.linter.context import ProgramContext
from acclint.linter.edits import InsertLine, InsertStatement, safe_fix, span_location, unsafe_fix
from acclint.linter.facts import MODULE_SCOPE, FunctionDef
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import ProgramRule, absence, absence_premise, at_entry_start, program_premises, where
from acclint.rules.data_loading import loader_draws
from acclint.rules.memo import per_flow
from acclint.rules.program_facts import ProgramFacts, first_model_label, reached_use
from acclint.rules.weights_replaced import draws_replaced
from acclint.linter.documented import display_beside
from acclint.rules.flags import documented_starts, passed_by_launch, runs_only_when


def _uncalled_seeders(ctx: ProgramContext, facts: ProgramFacts) -> list:
    """Local functions that seed something, that the entry script defines or imports by name,
    and that the program never reaches. A helper that only library code imports says nothing
    about this program (MindSpeed-LLM registers its seed_all as a patch; MindFormers calls its
    set_seed through a trainer acclint does not follow). The same for every run of the entry."""
    return per_flow(ctx, "uncalled-seeders", _find_uncalled_seeders)


def _find_uncalled_seeders(ctx: ProgramContext) -> list:
    seeders = library_seeders()
    program, entry = ctx.program, ctx.program.entry
    candidates = [(entry, function) for function in entry.functions.values()]
    for imp in entry.imports:
        target = ctx.project.local_target(entry, imp.bound, MODULE_SCOPE, {}) if imp.name not in (None, "*") else None
        if target is not None and isinstance(target[1], FunctionDef) and target[0] is not entry:
            candidates.append(target)
    found = []
    for file, function in candidates:
        if (file.abspath, function.qualname) in program.reached_functions:
            continue
        covers = set()
        for call in file.calls:
            if call.scope == function.qualname:
                for name in call.names:
                    covers.update(seeders.get(name, {}).get("covers", ()))
        if covers:
            found.append((file, function, covers))
    return found


def _is_seeded(facts: ProgramFacts, generator: str) -> bool:
    """Seeding every device (`npu`) also seeds the current one (`npu-current`)."""
    return generator in facts.seeded or generator.endswith("-current") and generator[:-len("-current")] in facts.seeded


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
        # The draw named is one the program's runs execute, where there is one (`reached_use`).
        use, reached = reached_use(ctx, facts, self.used_by) if self.used_by else (None, None)
        # A dataset loaded in the main process draws there too, although the flow never enters its
        # `__getitem__` (the DataLoader calls it); draws in worker processes are ACL110's.
        loaded = None if use is not None or not self.used_by else next(
            (d for d in loader_draws(ctx, in_workers=False) if d.generator == self.used_by), None)
        severity = "warning" if (use is not None or loaded is not None or not self.used_by) else "info"
        detail = (f"; {use.fact.callee}() at {where(use)} draws from it" if use is not None
                  else f"; {loaded.describe()} draws from it" if loaded is not None
                  else "" if not self.used_by else
                  "; nothing here draws from it directly, but libraries the run calls may")
        helpers = [f"`{fn.qualname}` ({file.path}:{file.spans[fn.node].line})"
                   for file, fn, covers in _uncalled_seeders(ctx, facts) if self.generator in covers]
        hint = f" {', '.join(helpers)} would seed it but is never called." if helpers else ""
        message = f"{self.label} is never seeded in the program started by {ctx.program.entry.path}{detail}.{hint}"
        # Unsafe: seeding changes every random draw the run makes from here on.
        autofix = unsafe_fix(f"add {self.seed_statement[0]}", at_entry_start(ctx, *self.seed_statement))
        # Draws that only initialise weights a checkpoint then replaces never reach training.
        replaced = draws_replaced(ctx, self.used_by) if use is not None else None
        self.report_absence(ctx, facts, message, f"call `{self.seed_call}` at the start of the entry point "
                            "(or a helper that does, e.g. transformers.set_seed)", severity, autofix,
                            premises=tuple(p for p in (reached, replaced) if p is not None))


_NUMPY_DOC = RuleDoc(
    what="Reports a training entry point whose program never seeds NumPy's global generator "
    "(`np.random.seed`, or a helper such as `transformers.set_seed`, `mindspore.set_seed`).",
    why="Data shuffling, masking and augmentation written with `np.random.*` then differ on every run, "
    "so the GPU run and the NPU run see different batches from step 0 and their loss curves cannot be "
    "compared. A program that never calls `np.random.*` itself (nor in the dataset, transforms or collate function "
    "of a DataLoader without workers) gets an info finding: libraries may still draw from it.",
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
        "never calls `random.*` itself (nor in the dataset, transforms or collate function of a DataLoader without "
        "workers; draws in workers are ACL110's).",
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
        Example.script("""
            import random

            import mindspore as ms
            from mindspore import nn, ops


            if __name__ == "__main__":
                ms.set_seed(1)
                order = list(range(8))
                random.shuffle(order)
                net = nn.Dense(4, 2)
                opt = nn.SGD(net.trainable_params(), learning_rate=0.01)
                step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
                step.set_train()
                step(ops.ones((8, 4)), ops.ones((8, 2)))
        """, "mindspore.set_seed seeds `random` too (it calls mindspore.dataset.config.set_seed)"),
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
        Example.script("""
            import argparse

            import numpy as np
            import torch

            parser = argparse.ArgumentParser()
            parser.add_argument("--mixup", type=float, default=0.0)
            parser.add_argument("--cutmix", type=float, default=0.0)


            def mix(x, alpha):
                lam = np.random.beta(alpha, alpha)
                return lam * x


            if __name__ == "__main__":  # expect: ACL103
                args = parser.parse_args()
                torch.manual_seed(0)
                mixup_active = args.mixup > 0 or args.cutmix > 0
                model = torch.nn.Linear(4, 1)
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                x = torch.ones(8, 4)
                if mixup_active:
                    x = mix(x, args.mixup)
                model(x).sum().backward()
                opt.step()
        """, "the only draw runs behind `--mixup` or `--cutmix`, off by default and passed by no launch: advice "
             "(info), its `executes` premise names the test and the default"),
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
    tensor_framework = "torch"
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
        Example({
            "lib/__init__.py": "",
            "lib/probe.py": """
                import torch


                class Probe(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layer = torch.nn.Linear(2, 2)

                    def forward(self, x):
                        return self.layer(x)


                if __name__ == "__main__":  # expect: ACL104
                    model = Probe().cuda()
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                    model(torch.rand(2, 2).cuda()).sum().backward()
                    optimizer.step()
            """,
            "train.py": """
                import torch

                from lib.probe import Probe


                if __name__ == "__main__":
                    torch.manual_seed(0)
                    model = Probe().cuda()
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                    model(torch.ones(2, 2).cuda()).sum().backward()
                    optimizer.step()
            """,
        }, "the `__main__` self-test of a package module that train.py imports: info (trains not proven), "
           "since the claim is about the run lib/probe.py starts, not about train.py's"),
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
                "train.py": """
                    import mindspore as ms
                    from mindspore import nn

                    from mylib.utils import to_numpy

                    ms.set_seed(0)
                    net = nn.Dense(3, 1)
                    grad_fn = ms.value_and_grad(lambda x: net(x).sum(), None, net.trainable_params())
                    print(to_numpy(net.weight))
                """,
                "mylib/__init__.py": "",
                "mylib/utils.py": """
                    import torch


                    def to_numpy(tensor):
                        return torch.as_tensor(tensor.asnumpy()).numpy()
                """,
            },
            "a MindSpore program that reaches a helper importing torch: it trains with MindSpore",
        ),
        Example.script("""
            from transformers import AutoConfig, AutoModelForCausalLM, Trainer, TrainingArguments


            def model_init():
                return AutoModelForCausalLM.from_config(AutoConfig.for_model("gpt2", n_layer=1))


            if __name__ == "__main__":
                trainer = Trainer(model_init=model_init, args=TrainingArguments(output_dir="out", seed=1234))
                trainer.train()
        """, "a Hugging Face Trainer seeds when it is constructed (TrainingArguments.seed)"),
        Example(
            {
                "train.py": """
                    import torch

                    from trainers.flux import FluxTrainer

                    if __name__ == "__main__":
                        trainer = FluxTrainer(torch.nn.Linear(4, 4))
                        trainer.train()
                """,
                "trainers/__init__.py": "",
                "trainers/base.py": """
                    import torch


                    class BaseTrainer:
                        def __init__(self, model):
                            self.model = model
                            self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

                        def train(self):
                            torch.manual_seed(1234)
                            self.model(torch.ones(4)).sum().backward()
                            self.optimizer.step()
                """,
                "trainers/flux.py": """
                    from trainers.base import BaseTrainer


                    class FluxTrainer(BaseTrainer):
                        def train(self):
                            print("flux")
                            super().train()
                """,
            },
            "seeded in the base class's train(), reached through super().train()",
        ),
        Example(
            {
                "train.py": """
                    import torch
                    from transformers import TrainingArguments

                    from fused.trainer import FusedLossTrainer

                    if __name__ == "__main__":
                        model = torch.nn.Linear(4, 4)
                        trainer = FusedLossTrainer(model=model, args=TrainingArguments(output_dir="out"))
                        trainer.train()
                """,
                "fused/__init__.py": "",
                "fused/trainer.py": """
                    from trl import SFTTrainer


                    class FusedLossTrainer(SFTTrainer):
                        def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
                            return super().compute_loss(model, inputs, return_outputs, **kwargs)
                """,
            },
            "a project's own subclass of a seeding trainer seeds when it is built (the base __init__ runs)",
        ),
        Example.script("""
            from sentence_transformers import InputExample, SentenceTransformer, losses
            from torch.utils.data import DataLoader


            if __name__ == "__main__":
                model = SentenceTransformer("all-MiniLM-L6-v2")
                examples = [InputExample(texts=["a", "b"]), InputExample(texts=["c", "d"])]
                loader = DataLoader(examples, shuffle=True, batch_size=2)
                model.fit(train_objectives=[(loader, losses.MultipleNegativesRankingLoss(model))], epochs=1)
        """, "SentenceTransformer.fit trains through a SentenceTransformerTrainer, which seeds when it is built"),
        Example.script("""
            import colossalai
            import torch


            if __name__ == "__main__":
                colossalai.launch_from_torch(config={})
                model = torch.nn.Linear(4, 4).cuda()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.ones(4).cuda()).sum().backward()
                optimizer.step()
        """, "colossalai.launch_from_torch seeds random, NumPy and torch (seed=1024 unless given)"),
        Example(
            {
                "chat.py": """
                    import torch

                    from mylib import generate

                    if __name__ == "__main__":
                        model = torch.nn.Linear(8, 8)
                        print(generate(model, torch.ones(8)))
                """,
                "mylib/__init__.py": """
                    from mylib.engine import generate
                """,
                "mylib/engine.py": """
                    import torch

                    from mylib.autograd import wrap

                    # Library set-up at import time, deep in the import chain: builds gradient machinery.
                    _probe = wrap(torch.nn.Linear(2, 2))


                    def generate(model, x):
                        return model(x).argmax()
                """,
                "mylib/autograd.py": """
                    import torch


                    def wrap(module):
                        out = module(torch.ones(2)).sum()
                        out.backward()
                        return module
                """,
            },
            "an inference script: gradients computed while a library is imported are not this program training",
        ),
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
        Example.script("""
            import torch
            from common.reproducibility import seed_everything


            if __name__ == "__main__":
                seed_everything(42)
                model = torch.nn.Linear(8, 2)
                model(torch.ones(8)).sum().backward()
        """, "a seeding helper from a module acclint cannot read is taken to seed everything"),
        Example.script("""
            import torch
            from mmdet.apis import init_random_seed, set_random_seed


            def main(cfg):
                seed = init_random_seed(cfg.seed)
                set_random_seed(seed, deterministic=cfg.deterministic)
                model = torch.nn.Conv2d(3, 8, 3)
                model(torch.ones(1, 3, 8, 8)).sum().backward()


            if __name__ == "__main__":
                main(None)
        """, "mmdetection 2.x tools/train.py: set_random_seed seeds random, NumPy and torch"),
        Example(
            {
                "train.py": """
                    import torch
                    from utils.general import init_seeds


                    def train(opt):
                        init_seeds(opt.seed + 1, deterministic=True)
                        model = torch.nn.Conv2d(3, 16, 3)
                        model(torch.ones(1, 3, 32, 32)).sum().backward()


                    if __name__ == "__main__":
                        train(None)
                """,
                "utils/general.py": """
                    import random

                    import numpy as np
                    import torch


                    def init_seeds(seed=0, deterministic=False):
                        random.seed(seed)
                        np.random.seed(seed)
                        torch.manual_seed(seed)
                        torch.cuda.manual_seed_all(seed)
                        if deterministic:
                            torch.use_deterministic_algorithms(True)
                """,
            },
            "yolov5: init_seeds is a local helper, read and followed",
        ),
    )


class UnseededMindSpore(UnseededGenerator):
    code = "ACL106"
    name = "unseeded-mindspore"
    category = "seed"
    severity = "warning"
    summary = "MindSpore's global seed is never set by the training entry point"
    frameworks = ("mindspore",)
    tensor_framework = "mindspore"
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
        Example.script("""
            import mindspore as ms
            from mindcv.models import create_model
            from mindcv.utils import set_seed


            def train(args):
                set_seed(args.seed)
                network = create_model(model_name=args.model, num_classes=10)
                grad_fn = ms.value_and_grad(lambda x: network(x).sum(), None, network.trainable_params())


            if __name__ == "__main__":
                train(None)
        """, "mindcv train.py: mindcv.utils.set_seed seeds MindSpore, NumPy and random"),
        Example.script("""
            import mindspore as ms
            from mindnlp.engine import Trainer, TrainingArguments
            from mindnlp.transformers import AutoModelForSequenceClassification


            if __name__ == "__main__":
                model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
                trainer = Trainer(model=model, args=TrainingArguments(output_dir="out"))
                trainer.train()
        """, "a mindnlp Trainer seeds when it is constructed (set_seed(args.seed): random, NumPy, MindSpore)"),
    )


class PythonHashSeedUnset(ProgramRule):
    code = "ACL102"
    name = "pythonhashseed-unset"
    category = "seed"
    severity = "info"
    summary = "PYTHONHASHSEED is not fixed when the training interpreter starts"
    doc = RuleDoc(
        what="Reports a training entry point started without `PYTHONHASHSEED` in its environment: no launch "
        "script exports it, and the program does not restart itself with it. A program that writes it into "
        "`os.environ` itself (directly, through a helper such as the guides' `seed_all`, or MindSpeed's "
        "`--npu-deterministic`) is reported at that write: it fixes only the processes started afterwards.",
        why="String hashing is salted per process, so the iteration order of sets of strings (and anything built "
        "from them: vocabularies, label maps, file lists) changes from run to run. Python reads "
        "`PYTHONHASHSEED` once, when the interpreter starts: `os.environ['PYTHONHASHSEED'] = '0'` in the running "
        "program reaches its children (DataLoader workers started with spawn, ranks it launches) but leaves its "
        "own hash seed random.",
        fix="`export PYTHONHASHSEED=0` in the launch script, before the launch line (or, with no launch script, "
        "restart the interpreter once with it set: `os.execv(sys.executable, [sys.executable, *sys.argv])`).",
        references=("docs.python.org/3/using/cmdline.html#envvar-PYTHONHASHSEED",
                    "Lightning-AI/pytorch-lightning#2156 (seed_everything's os.environ write had no effect on the process)"),
    )
    invalid = (
        Example.script("""
            import torch

            if __name__ == "__main__":  # expect: ACL102
                torch.manual_seed(0)
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """),
        Example.script("""
            import os
            import torch

            if __name__ == "__main__":
                os.environ["PYTHONHASHSEED"] = "0"  # expect: ACL102
                torch.manual_seed(0)
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """, "set inside the running interpreter: only its children see it"),
    )
    valid = (
        Example({
            "run.sh": """
                #!/bin/bash
                export PYTHONHASHSEED=0
                torchrun --nproc_per_node 8 train.py
            """,
            "train.py": """
                import torch

                if __name__ == "__main__":
                    torch.manual_seed(0)
                    torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
            """,
        }, "exported by the launch script"),
        Example.script("""
            import os
            import sys
            import torch

            if __name__ == "__main__":
                if os.environ.get("PYTHONHASHSEED") != "0":
                    os.environ["PYTHONHASHSEED"] = "0"
                    os.execv(sys.executable, [sys.executable, *sys.argv])
                torch.manual_seed(0)
                torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()
        """, "restarted with it set"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        if "pythonhashseed" in facts.effects:
            return
        in_process = facts.effects.get("pythonhashseed-children")
        if in_process is None:
            self.report_program(ctx, f"PYTHONHASHSEED is not set for {ctx.program.entry.path}: the iteration order of sets "
                                "of strings changes between runs.", "export PYTHONHASHSEED=0 in the launch script",
                                autofix=self._autofix(ctx, at_entry_start(ctx, _RESTART, "os", "sys")))
        elif not _restarts(ctx):
            self.report_at_source(
                ctx, in_process, f"{in_process.what} sets PYTHONHASHSEED inside the running interpreter: Python reads "
                "it only at start-up, so it fixes the hash seed of the processes started afterwards, not of "
                f"{ctx.program.entry.path} itself, whose sets of strings still iterate in another order each run.",
                "export PYTHONHASHSEED=0 in the launch script (or restart with os.execv once it is set)",
                autofix=self._autofix(ctx, InsertStatement(code=_RESTART, imports=("os", "sys"))))

    @staticmethod
    def _autofix(ctx: ProgramContext, restart: InsertStatement):
        # Safe: it fixes string hashing and nothing else the program computes.
        launches = ctx.program.launches
        if launches:
            return safe_fix("export PYTHONHASHSEED=0", *(
                InsertLine(path=shell.abspath, at=span_location(launch.span), text="export PYTHONHASHSEED=0")
                for shell, launch in launches))
        # Unsafe: a restart runs the module's top level twice and drops interpreter flags (`-m`, `-u`).
        return unsafe_fix("restart the interpreter with PYTHONHASHSEED=0", restart)


_RESTART = ('if os.environ.get("PYTHONHASHSEED") != "0":  # read only at start-up: restart with it set\n'
            '    os.environ["PYTHONHASHSEED"] = "0"\n'
            '    os.execv(sys.executable, [sys.executable, *sys.argv])')


def _restarts(ctx: ProgramContext) -> bool:
    """The program replaces itself with a fresh interpreter (which reads the environment it wrote)."""
    restart = frozenset(table("seeding")["env"]["PYTHONHASHSEED"]["restart_calls"])
    return any(step.fact.names & restart for step in ctx.program.calls())


class DeviceSeedCurrentOnly(ProgramRule):
    code = "ACL105"
    name = "device-seed-current-only"
    category = "seed"
    severity = "warning"
    summary = "Only the current CUDA/NPU device is seeded in a multi-device program"
    frameworks = ("torch",)
    tensor_framework = "torch"
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
            unseeded = sorted(g for g in covers if not _is_seeded(facts, g))
            if unseeded:
                message, severity = absence(
                    facts, f"`{function.qualname}` seeds {', '.join(unseeded)} but {ctx.program.entry.path} never "
                    "calls it, so those generators stay unseeded.")
                # Shown at the helper's definition, which runs nowhere: the claim is about the program.
                ctx.report(self, file, function.node, message, severity=severity,
                           fix=f"call {function.qualname}(seed) at the start of the entry point",
                           premises=(absence_premise(ctx, facts),), rests_on=program_premises(self))


class SeedAfterModel(ProgramRule):
    code = "ACL108"
    name = "seed-after-model-construction"
    category = "seed"
    severity = "warning"
    summary = "The seed is set only after the model is constructed"
    doc = RuleDoc(
        what="Reports a seed call (torch or MindSpore) that runs after the first model construction in the "
        "program's execution order, following local functions and classes. A model construction draws weights: "
        "a weighted `torch.nn` / `mindspore.nn` layer (`nn.Linear`, `nn.Conv2d`, `nn.Dense`, ... also inside "
        "`nn.Sequential`), a library factory (`torchvision.models.*`, `timm.create_model`, a task model's "
        "`from_pretrained`, whose new head is drawn at random; a causal LM or generator loaded from its own checkpoint "
        "draws nothing), or a local Module/Cell subclass whose construction builds one. "
        "Losses, activations, configs and Megatron ModuleSpec builders are not models.",
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
        Example.script("""
            import torch
            from torch import nn


            if __name__ == "__main__":
                model = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 1))  # expect: ACL108
                torch.manual_seed(1234)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.ones(16)).sum().backward()
                optimizer.step()
        """, "a model built from torch.nn layers"),
        Example.script("""
            import torch
            from transformers import AutoModelForSequenceClassification, set_seed


            if __name__ == "__main__":
                model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=3)  # expect: ACL108
                set_seed(42)
                model(**{}).loss.backward()
        """, "from_pretrained draws the new classification head at random"),
    )
    valid = (
        Example.script("""
            import torch
            from transformers import AutoModelForCausalLM, set_seed


            if __name__ == "__main__":
                model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
                set_seed(42)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
                model(**{}).loss.backward()
                optimizer.step()
        """, "a causal LM loaded from its own checkpoint keeps every weight: nothing is drawn before the seed"),
        Example.script("""
            import torch
            from torch import nn
            from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
            from megatron.core.transformer import TransformerConfig


            if __name__ == "__main__":
                criterion = nn.CrossEntropyLoss()
                act = nn.ReLU()
                spec = get_gpt_layer_local_spec()
                config = TransformerConfig(num_layers=2, hidden_size=8, num_attention_heads=2)
                torch.manual_seed(0)
                model = nn.Linear(8, 2)
                criterion(model(torch.ones(1, 8)), torch.zeros(1, dtype=torch.long)).backward()
        """, "losses, activations, ModuleSpec builders and configs have no weights"),
        Example.script("""
            import torch
            from torch import nn


            class BaseModel(nn.Module):
                def __init__(self, seed=1024):
                    super().__init__()
                    torch.manual_seed(seed)


            class Ranker(BaseModel):
                def __init__(self):
                    super().__init__(seed=7)
                    self.linear = nn.Linear(8, 1)


            if __name__ == "__main__":
                model = Ranker()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.ones(8)).sum().backward()
                optimizer.step()
        """, "the model's own base constructor seeds before its first layer is built"),
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
        weights = facts.first_weights or model
        for generator in ("torch-cpu", "mindspore"):
            source = facts.seeded.get(generator)
            # A model whose own constructor seeds before its first layer is built starts seeded.
            if source is not None and source.step is not None and source.step.index > weights.index:
                # Reported at the construction: the seed helper itself is not what is wrong.
                ctx.report(self, model.file, model.fact.node,
                           f"{first_model_label(model)} is constructed before {source.describe()} seeds the "
                           "generator: its initial weights come from an unseeded generator.",
                           fix="seed before constructing the model")


class SeedBehindOptionalFlag(ProgramRule):
    code = "ACL109"
    name = "seed-behind-optional-flag"
    category = "seed"
    severity = "warning"
    summary = "Seeding runs only when a flag that defaults to None is passed"
    doc = RuleDoc(
        what="Reports seeding that runs only under `if args.seed is not None:` (or `if args.seed:`, or the `else` "
        "of `if args.seed is None:`) when the flag or config field defaults to None (for `if args.seed:` also "
        "0 or False), and no launch script of the program passes it. Seeding reached through a guarded call "
        "of a helper counts too. A program with no launch script beside its entry is taken to start as the "
        "shell blocks of its project's Markdown (README, docs) show; with neither, the finding is info.",
        why="The script looks seeded on review, but a run started without the flag, which is how the "
        "default command and most copied commands start it, seeds nothing: initial weights, dropout masks and "
        "data order differ between the GPU and the NPU run (pytorch/examples imagenet `--seed` defaults to None).",
        fix="Pass the flag in every launch command (`--seed 1234`) or give it a default (`default=1234`).",
    )
    invalid = (
        Example.script("""
            import argparse
            import random

            import torch

            parser = argparse.ArgumentParser()
            parser.add_argument("--seed", default=None, type=int, help="seed for initializing training")


            def main():
                args = parser.parse_args()
                if args.seed is not None:
                    random.seed(args.seed)  # expect: ACL109
                    torch.manual_seed(args.seed)
                model = torch.nn.Linear(4, 2)
                model(torch.ones(4)).sum().backward()


            if __name__ == "__main__":
                main()
        """, "pytorch/examples imagenet: --seed defaults to None"),
        Example(
            {
                "train.py": """
                    import argparse

                    import torch
                    from utils import set_seed


                    def main():
                        parser = argparse.ArgumentParser()
                        parser.add_argument("--seed", type=int)
                        args = parser.parse_args()
                        if args.seed:
                            set_seed(args.seed)
                        model = torch.nn.Linear(4, 2)
                        model(torch.ones(4)).sum().backward()


                    if __name__ == "__main__":
                        main()
                """,
                "utils.py": """
                    import torch


                    def set_seed(seed):
                        torch.manual_seed(seed)  # expect: ACL109
                """,
                "run.sh": """
                    #!/bin/bash
                    torchrun --nproc_per_node 8 train.py --lr 0.1
                """,
            },
            "a helper called behind `if args.seed:`; the launch script does not pass --seed",
        ),
        Example(
            {
                "main.py": """
                    import argparse

                    import torch


                    def main():
                        parser = argparse.ArgumentParser()
                        parser.add_argument("--seed", type=int, help="for reproducible runs")
                        parser.add_argument("--epochs", type=int, default=90)
                        args = parser.parse_args()
                        if args.seed is not None:
                            torch.manual_seed(args.seed)  # expect: ACL109
                        model = torch.nn.Linear(4, 2)
                        for _ in range(args.epochs):
                            model(torch.ones(4)).sum().backward()


                    if __name__ == "__main__":
                        main()
                """,
                "README.md": """
                    # ImageNet training

                    ```bash
                    python main.py -a resnet50 --lr 0.1 /data/imagenet
                    ```
                """,
            },
            "no launch script, and the command the README documents does not pass --seed",
        ),
    )
    valid = (
        Example.script("""
            import argparse

            import torch

            parser = argparse.ArgumentParser()
            parser.add_argument("--seed", default=1234, type=int)


            if __name__ == "__main__":
                args = parser.parse_args()
                if args.seed is not None:
                    torch.manual_seed(args.seed)
                torch.nn.Linear(4, 2)(torch.ones(4)).sum().backward()
        """, "the default is a seed"),
        Example(
            {
                "main.py": """
                    import argparse

                    import torch

                    parser = argparse.ArgumentParser()
                    parser.add_argument("--seed", default=None, type=int)


                    if __name__ == "__main__":
                        args = parser.parse_args()
                        if args.seed is not None:
                            torch.manual_seed(args.seed)
                        torch.nn.Linear(4, 2)(torch.ones(4)).sum().backward()
                """,
                "run_npu.sh": """
                    #!/bin/bash
                    python main.py --seed 1234 --epochs 1
                """,
            },
            "the launch script passes --seed",
        ),
        Example.script("""
            import torch
            from transformers import HfArgumentParser, TrainingArguments


            if __name__ == "__main__":
                (training_args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
                if training_args.seed is not None:
                    torch.manual_seed(training_args.seed)
                torch.nn.Linear(4, 2)(torch.ones(4)).sum().backward()
        """, "the default lives in a library (TrainingArguments.seed = 42): not guessed"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        by_guard: dict = {}  # guard -> (first OptionalSeed, generators it leaves unseeded)
        for optional in facts.optional_seeds:
            first, covers = by_guard.get(optional.guard, (optional, set()))
            by_guard[optional.guard] = (first, covers | (optional.covers - facts.always_seeded))
        labels = table("seeding")["generator_labels"]
        for guard, (first, unseeded) in by_guard.items():
            default = first.default
            if not unseeded or passed_by_launch(ctx, guard, default):
                continue
            names = ", ".join(sorted(labels.get(g, g) for g in unseeded))
            documented = documented_starts(ctx)
            ctx.report(self, first.source.step.file, first.source.step.fact.node,
                       f"{runs_only_when(first.source.what, guard, default)}: a run started without it "
                       f"leaves {names} unseeded.{_how_started(ctx, documented)}",
                       fix=(f"pass {default.option} <seed> in every launch command, or give it a default"
                            if default.is_flag else f"set {default.option} in the config, or give it a default"),
                       severity=None if ctx.program.launches or documented else "info",
                       rests_on=program_premises(self))  # about the default run, which skips that line


def _how_started(ctx: ProgramContext, documented: list) -> str:
    """What the claim rests on when no launch script of the program is beside it."""
    if ctx.program.launches:
        return ""
    if documented:
        places = ", ".join(f"{display_beside(ctx.program.entry, d.path)}:{d.line}" for d in documented[:3])
        more = f" and {len(documented) - 3} more" if len(documented) > 3 else ""
        return f" The launch commands its documentation shows ({places}{more}) do not pass it."
    # With no launch in sight, how it is started is unknown: recipes elsewhere may pass the flag.
    # The claim stands, but as info.
    return (" No launch script or documented command of this program was found; "
            "if every launch passes the flag, this does not apply.")


RULES = [UnseededPythonRandom(), PythonHashSeedUnset(), UnseededNumpy(), UnseededTorch(), DeviceSeedCurrentOnly(),
         UnseededMindSpore(), SeedHelperNeverCalled(), SeedAfterModel(), SeedBehindOptionalFlag()]
