"""Data loading: the random draws DataLoader workers make, and the order a DistributedSampler gives.

A dataset's `__getitem__`, its transforms and the collate function run in worker processes, not in
the flow of the main program: the flow never enters them, so the program's seeding facts say nothing
about them. This module finds them from the DataLoader that runs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from acclint.knowledge import table
from acclint.linter.context import ProgramContext
from acclint.linter.facts import Call, ClassDef, FileFacts, FunctionDef
from acclint.linter.project import Step
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import ProgramRule
from acclint.rules.loader_passes import evaluation_pass
from acclint.rules.memo import per_program
from acclint.rules.program_facts import ProgramFacts, global_draw
from acclint.rules.reach import class_of_call, first_call, mentions_any, method_of, reached_scopes


def _table() -> dict:
    return table("data_loading")


def _draws(call: Call) -> bool:
    return any(global_draw(name) for name in call.names)


def _loaders(ctx: ProgramContext) -> Iterator[Step]:
    names = frozenset(table("usage")["dataloaders"])
    return (step for step in ctx.program.calls() if step.fact.names & names)


def runs_workers(call: Call) -> bool:
    """num_workers > 0, or a value acclint cannot read; not the default 0."""
    loader = _table()["loader"]
    workers = call.arg("num_workers", loader["num_workers"])
    if workers is None:
        return False
    count = workers.value.literal
    return not isinstance(count, int) or count > 0


def worker_init_fn(call: Call):
    """The DataLoader's `worker_init_fn` argument (keyword or position), or None."""
    return call.arg("worker_init_fn", _table()["loader"]["worker_init_fn"])


class _WorkerCode:
    """The local functions a DataLoader's workers run: the sample methods of its dataset (or of
    every dataset the program builds, when the loader's dataset cannot be traced to its class),
    its collate function, and the transforms handed to a dataset."""

    def __init__(self, ctx: ProgramContext):
        self.ctx = ctx
        self.project = ctx.project
        self.datasets = _table()["datasets"]
        self.bases = frozenset(self.datasets["bases"])
        self._transform_roots: Optional[list] = None  # the program's transforms, found once for all loaders

    def roots(self, loader: Step) -> list:
        """(label, file, FunctionDef) of what the loader's workers call first."""
        out = []
        for cls_file, cls in self._datasets(loader):
            for method in self.datasets["sample_methods"]:
                found = method_of(self.project, cls_file, cls, method)
                if found is not None:
                    out.append((f"{cls.qualname}.{method}", *found))
        collate = loader.fact.arg("collate_fn", _table()["loader"]["collate_fn"])
        if collate is not None and collate.value.base:
            target = self.project.local_target(loader.file, collate.value.base, loader.fact.scope, {})
            if target is not None and isinstance(target[1], FunctionDef):
                out.append((f"collate_fn {target[1].qualname}", *target))
            elif target is not None:
                found = method_of(self.project, target[0], target[1], "__call__")
                if found is not None:
                    out.append((f"collate_fn {target[1].qualname}", *found))
        if self._transform_roots is None:
            self._transform_roots = self._transforms()
        out.extend(self._transform_roots)
        return out

    def _datasets(self, loader: Step) -> list:
        traced = self._traced_dataset(loader)
        if traced is not None:
            return [traced]
        return [built for built in self._built() if self.project.class_names(*built) & self.bases]

    def _traced_dataset(self, loader: Step) -> Optional[tuple]:
        """The local class of the loader's dataset: built in the argument, or assigned to the name passed."""
        arg = loader.fact.arg("dataset", _table()["loader"]["dataset"])
        if arg is None or not arg.value.base:
            return None
        value, file = arg.value, loader.file
        if value.base_call and not value.chain:
            target = self.project.local_target(file, value.base, loader.fact.scope, {})
            return target if target is not None and isinstance(target[1], ClassDef) else None
        if value.dotted and "." not in value.dotted:
            built = [c for c in file.calls if c.scope == loader.fact.scope and c.assigned_to == value.dotted
                     and c.order < loader.fact.order]
            if built:
                return class_of_call(self.project, file, built[-1])
        return None

    def _built(self) -> Iterator[tuple]:
        """(file, ClassDef) of each local class the flow constructs, once."""
        seen = set()
        for step in self.ctx.program.calls():
            built = class_of_call(self.project, step.file, step.fact)
            if built is not None and (built[0].abspath, built[1].qualname) not in seen:
                seen.add((built[0].abspath, built[1].qualname))
                yield built

    def _transforms(self) -> list:
        """`__call__` of local classes built in the flow and handed to a dataset or a composing call."""
        out = []
        keywords = frozenset(self.datasets["transform_keywords"])
        composers = frozenset(self.datasets["composers"])
        for step in self.ctx.program.calls():
            built = class_of_call(self.project, step.file, step.fact)
            if built is None or self.project.class_names(*built) & self.bases:
                continue
            call = method_of(self.project, built[0], built[1], self.datasets["transform_method"])
            if call is None:
                continue
            sinks = [s[4:] for s in step.fact.sinks if s.startswith("arg:")]
            composed = any(s.rsplit(".", 1)[-1] in composers for s in sinks)
            handed = step.fact.assigned_to is not None and any(
                arg.keyword in keywords and arg.value.dotted == step.fact.assigned_to
                for other in step.file.calls if other.scope == step.fact.scope for arg in other.args)
            if composed or handed or any(self._is_dataset(step, s) for s in sinks):
                out.append((f"transform {built[1].qualname}", *call))
        return out

    def _is_dataset(self, step: Step, callee: str) -> bool:
        target = self.project.local_target(step.file, callee, step.fact.scope, {})
        return target is not None and isinstance(target[1], ClassDef) and bool(
            self.project.class_names(*target) & self.bases)


class RandomDrawsInWorkers(ProgramRule):
    code = "ACL110"
    name = "random-draws-in-dataloader-workers"
    category = "seed"
    severity = "warning"
    maturity = "preview"
    summary = "random / np.random draws in a dataset, transform or collate function run by DataLoader workers " \
              "with no worker_init_fn"
    frameworks = ("torch",)
    tensor_framework = "torch"
    doc = RuleDoc(
        what="Reports a `DataLoader` with worker processes (`num_workers` > 0 or not a literal) and no "
        "`worker_init_fn` whose dataset's `__getitem__`/`__iter__`, collate function or transforms draw from "
        "Python's `random` or NumPy's global generator (directly or through local helpers, in any module of "
        "the program).",
        why="That code runs in the workers, not in the main process: each worker reseeds `random`, NumPy and "
        "torch from the loader's base seed plus its worker id, so `random.seed`/`np.random.seed` in the main "
        "program never reaches these draws. Which crop, flip or mask a sample gets depends on which worker loads "
        "it, that is on `num_workers` (often set from the CPU count, which differs between a GPU and an NPU "
        "server), and on every earlier draw from the global torch generator that picks the base seed. Before "
        "torch 1.9 NumPy was not reseeded at all and every worker repeated the same draws.",
        fix="Draw from a generator derived from the sample (`rng = np.random.default_rng((seed, epoch, index))` in "
        "`__getitem__`), or pass `worker_init_fn` seeding `random`/NumPy from `torch.initial_seed()` together with "
        "a seeded `generator=`, and keep `num_workers` equal on both sides.",
        references=("docs/knowledge/seeding.md#dataloader-workers",
                    "https://github.com/pytorch/pytorch/issues/5059",
                    "https://github.com/facebookresearch/fairseq/issues/1383",
                    "https://pytorch.org/docs/stable/notes/randomness.html#dataloader"),
    )
    invalid = (
        Example({
            "train.py": """
                import numpy as np
                import torch

                from data import CropDataset


                if __name__ == "__main__":
                    torch.manual_seed(0)
                    np.random.seed(0)
                    dataset = CropDataset(64)
                    loader = torch.utils.data.DataLoader(dataset, batch_size=8, num_workers=4)  # expect: ACL110
                    model = torch.nn.Linear(16, 1)
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                    for batch in loader:
                        model(batch).sum().backward()
                        optimizer.step()
            """,
            "data.py": """
                import numpy as np
                import torch


                class CropDataset(torch.utils.data.Dataset):
                    def __init__(self, size):
                        self.size = size

                    def __len__(self):
                        return self.size

                    def __getitem__(self, index):
                        return self.crop(torch.ones(32))

                    def crop(self, signal):
                        start = np.random.randint(0, 16)
                        return signal[start:start + 16]
            """,
        }, "the draw is in a helper of a dataset defined in another module"),
        Example.script("""
            import random

            import torch


            class FlipDataset(torch.utils.data.Dataset):
                def __init__(self, random_flip):
                    self.random_flip = random_flip

                def __len__(self):
                    return 64

                def __getitem__(self, index):
                    return self.transform(torch.ones(4, 4), random_flip=self.random_flip)

                def transform(self, image, random_flip=False):
                    if random_flip and random.random() < 0.5:
                        image = image.flip(-1)
                    return image


            if __name__ == "__main__":
                torch.manual_seed(0)
                loader = torch.utils.data.DataLoader(FlipDataset(True), batch_size=8, num_workers=4)  # expect: ACL110
                model = torch.nn.Linear(4, 1)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for batch in loader:
                    model(batch).sum().backward()
                    optimizer.step()
        """, "a parameter off by default that the sample's caller passes on: the draw may run"),
        Example.script("""
            import random

            import torch


            class CropDataset(torch.utils.data.Dataset):
                def __len__(self):
                    return 64

                def __getitem__(self, index):
                    start = random.randint(0, 4)
                    return torch.ones(8)[start:start + 4]


            if __name__ == "__main__":
                torch.manual_seed(0)
                val_loader = torch.utils.data.DataLoader(CropDataset(), batch_size=8, num_workers=2, shuffle=False)
                train_loader = torch.utils.data.DataLoader(CropDataset(), batch_size=8, num_workers=2, shuffle=True)  # expect: ACL110
                model = torch.nn.Linear(4, 1)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for batch in train_loader:
                    model(batch).sum().backward()
                    optimizer.step()
        """, "one dataset class behind a validation and a training loader: reported at the training loader"),
    )
    valid = (
        Example({
            "train.py": """
                import random

                import numpy as np
                import torch

                from data import CropDataset


                def seed_worker(worker_id):
                    worker_seed = torch.initial_seed() % 2**32
                    np.random.seed(worker_seed)
                    random.seed(worker_seed)


                if __name__ == "__main__":
                    torch.manual_seed(0)
                    loader = torch.utils.data.DataLoader(CropDataset(64), batch_size=8, num_workers=4,
                                                         worker_init_fn=seed_worker,
                                                         generator=torch.Generator().manual_seed(0))
                    model = torch.nn.Linear(16, 1)
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                    for batch in loader:
                        model(batch).sum().backward()
                        optimizer.step()
            """,
            "data.py": """
                import numpy as np
                import torch


                class CropDataset(torch.utils.data.Dataset):
                    def __len__(self):
                        return 64

                    def __getitem__(self, index):
                        start = np.random.randint(0, 16)
                        return torch.ones(32)[start:start + 16]
            """,
        }, "workers seeded by a worker_init_fn"),
        Example.script("""
            import numpy as np
            import torch


            class CropDataset(torch.utils.data.Dataset):
                def __len__(self):
                    return 64

                def __getitem__(self, index):
                    start = np.random.randint(0, 16)
                    return torch.ones(32)[start:start + 16]


            if __name__ == "__main__":
                np.random.seed(0)
                loader = torch.utils.data.DataLoader(CropDataset(), batch_size=8)
                model = torch.nn.Linear(16, 1)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for batch in loader:
                    model(batch).sum().backward()
                    optimizer.step()
        """, "no workers: the draws come from the seeded main process"),
        Example.script("""
            import random

            import torch


            def flip(image, random_flip=False):
                if random_flip and random.random() < 0.5:
                    return image.flip(-1)
                return image


            class Images(torch.utils.data.Dataset):
                def __len__(self):
                    return 64

                def __getitem__(self, index):
                    return flip(torch.ones(4, 4))


            def main():
                torch.manual_seed(0)
                net = torch.nn.Linear(4, 1)
                sgd = torch.optim.SGD(net.parameters(), lr=0.1)
                for images in torch.utils.data.DataLoader(Images(), batch_size=8, num_workers=4):
                    net(images).sum().backward()
                    sgd.step()


            if __name__ == "__main__":
                main()
        """, "the draw sits behind a parameter whose default is False and the sample's caller leaves it so"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        for found in loader_draws(ctx, in_workers=True):
            # With generator= the base seed is fixed; what remains is which worker loads the sample.
            base = "" if found.loader.fact.arg("generator") is not None else \
                " and with earlier draws from the global torch generator"
            ctx.report(self, found.loader.file, found.loader.fact.node,
                       f"{found.describe()} runs in DataLoader workers with no worker_init_fn: each worker reseeds "
                       "random/NumPy from the loader's base seed and its worker id, so the main process's seeds "
                       f"never reach it and the draw a sample gets changes with num_workers{base}.",
                       fix="derive the draw from the sample (np.random.default_rng((seed, epoch, index))), or "
                       "pass worker_init_fn and a seeded generator= and keep num_workers equal on both sides")


@dataclass(frozen=True)
class LoaderDraw:
    """A global random draw in code a DataLoader runs for each sample (its dataset, transforms, collate)."""

    loader: Step
    label: str  # what the loader runs that reaches the draw ("ImageFolderDataset.__getitem__")
    file: FileFacts
    call: Call

    @property
    def generator(self) -> str:
        return next(g for g in map(global_draw, sorted(self.call.names)) if g)

    def describe(self) -> str:
        return f"{self.call.callee}() at {self.file.path}:{self.file.spans[self.call.node].line} (reached from {self.label})"


def loader_draws(ctx: ProgramContext, in_workers: bool) -> list:
    """The first global draw per DataLoader in the code it runs for each sample: of loaders with
    worker processes and no worker_init_fn (`in_workers`), or of loaders that load in the main
    process, where the main program's seeds do reach them. Computed once per program."""
    return per_program(ctx, f"loader-draws-{in_workers}", lambda c: _find_loader_draws(c, in_workers))


def _find_loader_draws(ctx: ProgramContext, in_workers: bool) -> list:
    depth = _table()["datasets"]["max_depth"]
    code = _WorkerCode(ctx)
    out, seen = [], set()
    # Training loaders first: a draw a validation loader shares with them is reported where it matters.
    for loader in sorted(_loaders(ctx), key=lambda step: _in_order(step.fact)):
        workers = runs_workers(loader.fact)
        if workers != in_workers or (workers and worker_init_fn(loader.fact) is not None):
            continue
        for label, file, function in code.roots(loader):
            found = first_call(ctx.project, file, function, _draws, depth)
            if found is not None:
                # One finding per draw: the branches of a generic loader builder all reach the same dataset.
                if (found[0].abspath, found[1].node) not in seen:
                    seen.add((found[0].abspath, found[1].node))
                    out.append(LoaderDraw(loader, label, *found))
                break
    return out


def _in_order(call: Call) -> bool:
    """A loader that reads its data in order (`shuffle=False`, no sampler): an evaluation loader, as a rule."""
    loader = _table()["loader"]
    shuffle = call.arg("shuffle", loader["shuffle"])
    sampled = any(call.arg(key, loader[key]) is not None for key in ("sampler", "batch_sampler"))
    return not sampled and (shuffle is None or shuffle.value.literal is False)


def _shuffles(call: Call) -> bool:
    shuffle = _table()["sampler"]["shuffle"]
    arg = call.arg(shuffle["keyword"], shuffle["position"])
    return arg is None or arg.value.literal is True


def _epoch_loop(ctx: ProgramContext) -> bool:
    """The program iterates over epochs itself: a `for` loop it runs names an epoch."""
    words = _table()["sampler"]["epoch_words"]
    reached = reached_scopes(ctx.program)
    for file in ctx.program.files:
        for block in file.blocks:
            if block.kind != "for" or (file.abspath, block.scope) not in reached:
                continue
            texts = [*block.targets, *(item.dotted or item.base or "" for item in block.items)]
            if any(word in text.lower() for text in texts for word in words):
                return True
    return False


class DistributedSamplerWithoutSetEpoch(ProgramRule):
    code = "ACL213"
    name = "distributed-sampler-without-set-epoch"
    category = "determinism"
    severity = "warning"
    maturity = "preview"
    summary = "DistributedSampler(shuffle=True) in an epoch loop that never calls set_epoch"
    frameworks = ("torch",)
    tensor_framework = "torch"
    doc = RuleDoc(
        what="Reports a `DistributedSampler` that shuffles (`shuffle=True`, the default) in a program that runs "
        "its own epoch loop and never calls `set_epoch` (on the sampler or on anything else). Programs whose "
        "loop belongs to a library that calls it (transformers `Trainer`, Lightning, accelerate) are left alone.",
        why="The sampler seeds its permutation with `seed + epoch`, and the epoch only changes through "
        "`set_epoch`: without it every epoch repeats the order of epoch 0. That order is cut into one share per "
        "rank, so it also depends on the number of ranks: a GPU run on 8 cards and an NPU run on 16 see "
        "other batches, and neither sees the data reshuffled.",
        fix="Call `sampler.set_epoch(epoch)` at the start of every epoch, before iterating the DataLoader.",
        references=("docs/knowledge/determinism.md#distributed-sampler-order",
                    "https://github.com/pytorch/pytorch/issues/31771",
                    "https://github.com/lucidrains/DALLE-pytorch/pull/230",
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler"),
    )
    invalid = (
        Example.script("""
            import torch
            import torch.distributed as dist
            from torch.utils.data import DataLoader, TensorDataset
            from torch.utils.data.distributed import DistributedSampler


            if __name__ == "__main__":
                dist.init_process_group("hccl")
                dataset = TensorDataset(torch.ones(64, 4))
                sampler = DistributedSampler(dataset)  # expect: ACL213
                loader = DataLoader(dataset, batch_size=8, sampler=sampler)
                model = torch.nn.Linear(4, 1)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for epoch in range(10):
                    for (batch,) in loader:
                        model(batch).sum().backward()
                        optimizer.step()
        """),
        Example.script("""
            import torch
            import torch.distributed as dist
            from torch.utils.data import DataLoader, TensorDataset
            from torch.utils.data.distributed import DistributedSampler


            def evaluate(model, dataset):
                sampler = DistributedSampler(dataset)
                loader = DataLoader(dataset, batch_size=8, sampler=sampler)
                with torch.no_grad():
                    return sum(model(batch).sum().item() for (batch,) in loader)


            def train(model, dataset, epochs):
                sampler = DistributedSampler(dataset)  # expect: ACL213
                loader = DataLoader(dataset, batch_size=8, sampler=sampler)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for epoch in range(epochs):
                    for (batch,) in loader:
                        model(batch).sum().backward()
                        optimizer.step()
                    print(evaluate(model, dataset))


            if __name__ == "__main__":
                dist.init_process_group("hccl")
                train(torch.nn.Linear(4, 1), TensorDataset(torch.ones(64, 4)), 10)
        """, "an evaluation pass reads its loader once for results: only the training sampler is reported"),
    )
    valid = (
        Example.script("""
            import torch
            import torch.distributed as dist
            from torch.utils.data import DataLoader, TensorDataset
            from torch.utils.data.distributed import DistributedSampler


            if __name__ == "__main__":
                dist.init_process_group("hccl")
                dataset = TensorDataset(torch.ones(64, 4))
                sampler = DistributedSampler(dataset)
                loader = DataLoader(dataset, batch_size=8, sampler=sampler)
                model = torch.nn.Linear(4, 1)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                for epoch in range(10):
                    sampler.set_epoch(epoch)
                    for (batch,) in loader:
                        model(batch).sum().backward()
                        optimizer.step()
        """),
        Example.script("""
            import torch
            from torch.utils.data import TensorDataset
            from torch.utils.data.distributed import DistributedSampler
            from transformers import Trainer


            if __name__ == "__main__":
                dataset = TensorDataset(torch.ones(64, 4))
                sampler = DistributedSampler(dataset)
                trainer = Trainer(model=torch.nn.Linear(4, 1), train_dataset=dataset)
                trainer.train()
        """, "the Trainer owns the epoch loop and calls set_epoch"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        sampler = _table()["sampler"]
        names = frozenset(sampler["distributed"])
        samplers = [step for step in ctx.program.calls() if step.fact.names & names and _shuffles(step.fact)]
        if not samplers:
            return
        drivers = frozenset(sampler["epoch_drivers"])
        if any(step.fact.names & drivers for step in ctx.program.calls()):
            return
        if mentions_any(ctx.program, lambda call: call.method == sampler["set_epoch"]) or not _epoch_loop(ctx):
            return
        for step in samplers:
            if evaluation_pass(ctx, step) is not None:
                continue  # read once for results: its order changes no weight
            ctx.report(self, step.file, step.fact.node,
                       "DistributedSampler shuffles with seed + epoch, and nothing calls set_epoch: every epoch "
                       "repeats one order, cut into shares by the number of ranks.",
                       fix="sampler.set_epoch(epoch) at the start of every epoch")


RULES = [RandomDrawsInWorkers(), DistributedSamplerWithoutSetEpoch()]
