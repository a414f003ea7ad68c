"""Results that depend on the number of cards or on the parallel layout (category `parallel`).

A GPU run on 8 cards and an NPU run on 16 (or with another tensor-parallel size) are one experiment
only when the maths does not see how the batch and the model are split. These rules find code whose
result changes with that split: batch statistics of the local batch, means over micro-batches of
varying token counts, and softmax over padding that grows with the tensor-parallel size.
"""

from __future__ import annotations

import re
import weakref
from functools import lru_cache
from typing import Optional

from acclint.knowledge import table
from acclint.linter.context import ProgramContext
from acclint.findings import Premise
from acclint.linter.facts import Call, FileFacts
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import ProgramRule
from acclint.rules.program_facts import ProgramFacts
from acclint.rules.reach import mentions_any, program_calls, reached_scopes


def _table() -> dict:
    return table("parallel")


def _last(dotted: Optional[str]) -> str:
    return (dotted or "").rsplit(".", 1)[-1]


def _where(file: FileFacts, call) -> str:
    return f"{file.path}:{file.spans[call.node].line}"


# -- BatchNorm under data parallelism -----------------------------------------------------------


@lru_cache(maxsize=1)
def _bn_builders() -> re.Pattern:
    return re.compile(_table()["batch_norm"]["model_builders"])


def _builds_batch_norm(call: Call) -> bool:
    bn = _table()["batch_norm"]
    return bool(call.names & frozenset(bn["layers"])) or any(_bn_builders().fullmatch(n) for n in call.names)


def _named_or_method(call: Call, names: list, methods: list) -> bool:
    """The call is one of `names` (qualified) or a method call named one of `methods`."""
    return bool(call.names & frozenset(names)) or call.method in methods


def _syncs_batch_norm(call: Call) -> bool:
    bn = _table()["batch_norm"]
    return _named_or_method(call, bn["sync"], bn["sync_methods"])


class BatchNormWithoutSync(ProgramRule):
    code = "ACL901"
    name = "batchnorm-without-sync"
    category = "parallel"
    severity = "warning"
    maturity = "preview"
    summary = "BatchNorm in a DDP/FSDP program that never converts it to SyncBatchNorm"
    frameworks = ("torch",)
    tensor_framework = "torch"
    doc = RuleDoc(
        what="Reports, once per program, a model with `BatchNorm1d/2d/3d` layers (or a torchvision builder whose "
        "network holds them) wrapped in `DistributedDataParallel` or FSDP, when nothing in the program converts "
        "them (`nn.SyncBatchNorm.convert_sync_batchnorm`, `nn.SyncBatchNorm`).",
        why="Plain BatchNorm normalises each card's activations with the mean and variance of that card's share "
        "of the batch, and tracks running statistics from it. The share is the global batch divided by the number "
        "of cards: the GPU run on 8 cards and the NPU run on 16 normalise with statistics of 32 and 16 samples, "
        "so activations, gradients and the saved running statistics differ from step 0. SyncBatchNorm all-reduces "
        "the statistics over the process group, so every layout sees those of the global batch.",
        fix="`model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)` before wrapping it in DDP (or keep the "
        "per-card batch equal on both sides).",
        references=("docs/knowledge/parallel.md#batchnorm-under-data-parallelism",
                    "https://github.com/MCG-NJU/TDN/issues/22",
                    "https://github.com/ultralytics/yolov5/pull/401",
                    "https://pytorch.org/docs/stable/generated/torch.nn.SyncBatchNorm.html"),
    )
    invalid = (
        Example({
            "train.py": """
                import torch
                import torch.distributed as dist
                from torch.nn.parallel import DistributedDataParallel

                from net import Classifier


                if __name__ == "__main__":
                    dist.init_process_group("hccl")
                    model = DistributedDataParallel(Classifier())  # expect: ACL901
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                    model(torch.ones(4, 3, 8, 8)).sum().backward()
                    optimizer.step()
            """,
            "net.py": """
                import torch


                class Classifier(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.conv = torch.nn.Conv2d(3, 8, 3)
                        self.bn = torch.nn.BatchNorm2d(8)

                    def forward(self, x):
                        return self.bn(self.conv(x))
            """,
        }, "the BatchNorm is built in another module of the program"),
    )
    valid = (
        Example.script("""
            import torch
            import torch.distributed as dist
            from torch.nn.parallel import DistributedDataParallel


            if __name__ == "__main__":
                dist.init_process_group("hccl")
                net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8))
                net = torch.nn.SyncBatchNorm.convert_sync_batchnorm(net)
                model = DistributedDataParallel(net)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.ones(4, 3, 8, 8)).sum().backward()
                optimizer.step()
        """),
        Example.script("""
            import torch


            if __name__ == "__main__":
                model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8))
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.ones(4, 3, 8, 8)).sum().backward()
                optimizer.step()
        """, "one card: the batch statistics are those of the whole batch"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        wrappers = frozenset(_table()["data_parallel"]["wrappers"])
        wrap = next((step for step in ctx.program.calls() if step.fact.names & wrappers), None)
        if wrap is None:
            return
        norm = next((step for step in ctx.program.calls() if _builds_batch_norm(step.fact)), None)
        if norm is None or mentions_any(ctx.program, _syncs_batch_norm):
            return
        ctx.report(self, wrap.file, wrap.fact.node,
                   f"{norm.fact.callee}() at {_where(norm.file, norm.fact)} normalises with the statistics of each "
                   "card's share of the batch, and nothing in the program converts it to SyncBatchNorm: runs on "
                   "another number of cards (8 GPUs, 16 NPUs) see other batch statistics from step 0.",
                   fix="model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model) before wrapping it")


# -- mean losses averaged over accumulation steps ----------------------------------------------


def _token_mean_loss(call: Call) -> bool:
    """A cross entropy that ignores padded targets and averages over the targets it keeps."""
    ce = _table()["cross_entropy"]
    if not call.names & frozenset(ce["calls"]) or call.arg(ce["ignore_keyword"]) is None:
        return False
    reduction = call.arg(ce["reduction"]["keyword"])
    return reduction is None or reduction.value.literal in ce["reduction"]["mean"]


def _accumulation_division(division) -> bool:
    acc = _table()["accumulation"]
    if _last(division.right.dotted) not in acc["steps"]:
        return False
    left = (division.left.dotted or division.left.base or "").lower()
    return any(word in left for word in acc["loss_words"])


class MeanLossOverAccumulation(ProgramRule):
    code = "ACL902"
    name = "mean-loss-over-accumulation"
    category = "parallel"
    severity = "warning"
    maturity = "preview"
    summary = "A per-micro-batch mean loss with ignored (padded) targets divided by the accumulation steps"
    frameworks = ("torch",)
    tensor_framework = "torch"
    doc = RuleDoc(
        what="Reports `loss / gradient_accumulation_steps` (or a similar name) in a program whose cross entropy "
        "ignores padded targets (`ignore_index=`) and averages over the targets of each micro-batch "
        "(`reduction=\"mean\"`, the default).",
        why="Each micro-batch's mean is taken over its own number of real tokens. Dividing by the number of "
        "micro-batches then weights a token of a short micro-batch more than one of a long micro-batch: the loss "
        "and the gradient are not those of the whole batch, and they change with how the global batch is split. "
        "A GPU run with 8 cards x 4 accumulation steps and an NPU run with 16 cards x 2 steps see the same "
        "samples and still compute other gradients.",
        fix="Sum the token losses (`reduction=\"sum\"`) and divide by the number of non-ignored targets of the "
        "whole accumulation window (all-reduced over the data-parallel ranks), or keep micro-batch size, "
        "accumulation steps and card count equal on both sides.",
        references=("docs/knowledge/parallel.md#loss-normalisation-under-gradient-accumulation",
                    "https://github.com/huggingface/transformers/issues/24725",
                    "https://github.com/meta-pytorch/torchtune/pull/1875"),
    )
    invalid = (
        Example({
            "train.py": """
                import torch
                import torch.nn.functional as F

                from config import args


                def train(model, loader, optimizer):
                    for step, (tokens, labels) in enumerate(loader):
                        logits = model(tokens)
                        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
                        loss = loss / args.gradient_accumulation_steps  # expect: ACL902
                        loss.backward()
                        if (step + 1) % args.gradient_accumulation_steps == 0:
                            optimizer.step()
                            optimizer.zero_grad()


                if __name__ == "__main__":
                    model = torch.nn.Linear(4, 10)
                    train(model, [], torch.optim.AdamW(model.parameters()))
            """,
            "config.py": """
                class args:
                    gradient_accumulation_steps = 4
            """,
        }),
    )
    valid = (
        Example.script("""
            import torch
            import torch.nn.functional as F


            def train(model, loader, optimizer, accumulation_steps):
                for step, (tokens, labels) in enumerate(loader):
                    logits = model(tokens)
                    loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")
                    loss = loss / loader.tokens_per_update
                    loss.backward()
                    if (step + 1) % accumulation_steps == 0:
                        optimizer.step()
                        optimizer.zero_grad()


            if __name__ == "__main__":
                model = torch.nn.Linear(4, 10)
                train(model, [], torch.optim.AdamW(model.parameters()), 4)
        """, "summed token losses divided by the tokens of the whole update"),
        Example({
            "train.py": """
                import torch
                import torch.nn.functional as F

                import megatron_utils


                def train(model, loader, optimizer, accumulation_steps):
                    for step, (images, labels) in enumerate(loader):
                        loss = F.cross_entropy(model(images), labels)
                        loss = loss / accumulation_steps
                        loss.backward()
                        if (step + 1) % accumulation_steps == 0:
                            optimizer.step()


                if __name__ == "__main__":
                    model = torch.nn.Linear(4, 10)
                    train(model, [], torch.optim.AdamW(model.parameters()), 4)
                    megatron_utils.sentence_order_loss(torch.ones(2, 2), torch.ones(2).long())
            """,
            "megatron_utils.py": """
                import torch.nn.functional as F


                def sentence_order_loss(logits, labels):
                    return F.cross_entropy(logits, labels, ignore_index=-1)
            """,
        }, "one label per sample, none ignored: every micro-batch mean has the same weight (an ignore_index cross "
           "entropy elsewhere in the program is not the loss this line divides)"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        reached = reached_scopes(ctx.program)
        divisions = [(file, division) for file in ctx.program.files for division in file.divisions
                     if (file.abspath, division.scope) in reached and _accumulation_division(division)]
        if not divisions:
            return  # divisions are few: look for the loss (every call of the program) only when one matches
        # The divided loss is the token-mean loss only where the division's module computes it, or the
        # function dividing calls the one that does (`loss = token_loss(...)`). A cross entropy elsewhere in
        # the program (a library's branch for another model) says nothing about the loss this line divides.
        by_file, by_scope = {}, {}
        for file, call in program_calls(ctx.program):
            if _token_mean_loss(call):
                by_file.setdefault(file.abspath, (file, call))
                by_scope.setdefault((file.abspath, call.scope), (file, call))
        for file, division in divisions:
            loss = by_file.get(file.abspath) or _loss_called_from(ctx, file, division.scope, by_scope)
            if loss is None:
                continue
            ctx.report(self, file, division.node,
                       f"the mean loss of each micro-batch ({loss[1].callee} with ignore_index at "
                       f"{_where(*loss)}) is divided by {division.right.dotted}: micro-batches with fewer "
                       "real tokens weigh more, so the loss and gradients change with how the batch is split "
                       "into micro-batches and cards.",
                       fix='sum the token losses (reduction="sum") and divide by the non-ignored targets of '
                       "the whole accumulation window, all-reduced over ranks")


def _loss_called_from(ctx: ProgramContext, file: FileFacts, scope: str, by_scope: dict):
    """The token-mean loss computed by a function that `scope` calls, if any."""
    for call in file.calls_in(scope):
        target = ctx.project.local_target(file, call.callee, scope, {})
        if target is not None and (target[0].abspath, target[1].qualname) in by_scope:
            return by_scope[(target[0].abspath, target[1].qualname)]
    return None


# -- cross entropy over a padded vocabulary ----------------------------------------------------


_PADS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # FileFacts -> whether it pads


def _pads_vocabulary(file: FileFacts) -> bool:
    """Whether the file names a padded vocabulary; read once per file, whatever number of programs reach it."""
    known = _PADS.get(file)
    if known is None:
        known = _PADS[file] = _names_padding(file)
    return known


def _names_padding(file: FileFacts) -> bool:
    names = frozenset(_table()["padded_vocab"]["names"])
    if any(a.name in names for a in file.name_assignments) or any(_last(a.target) in names for a in file.assignments):
        return True
    for call in file.calls:
        if call.method in names or any(arg.keyword in names or _last(arg.value.dotted) in names for arg in call.args):
            return True
    return False


def _vocabulary_loss(call: Call) -> bool:
    ce = _table()["cross_entropy"]
    return _named_or_method(call, ce["calls"], ce["vocab_parallel_methods"])


class PaddedVocabularyCrossEntropy(ProgramRule):
    code = "ACL903"
    name = "padded-vocab-cross-entropy"
    category = "parallel"
    severity = "info"
    maturity = "preview"
    summary = "Cross entropy over logits of a padded vocabulary that are neither sliced nor masked to the real size"
    frameworks = ("torch",)
    tensor_framework = "torch"
    doc = RuleDoc(
        what="Reports a cross entropy in a program that pads its vocabulary (`padded_vocab_size`, "
        "`make_vocab_size_divisible_by`) when the file computing it never slices logits back to the real "
        "vocabulary (`logits[..., :vocab_size]`).",
        why="Megatron-style models pad the vocabulary to a multiple of `make_vocab_size_divisible_by` times the "
        "tensor-parallel size, so the output layer has extra rows. Their logits enter the softmax's denominator "
        "unless they are cut or masked: the loss then depends on how many padded rows there are, that is on the "
        "tensor-parallel size. A GPU run with TP=8 and an NPU run with TP=4 pad to different sizes and compute "
        "other losses from the same weights.",
        fix="Slice the logits to the real vocabulary (`logits[..., :vocab_size]`) or mask the padded columns to "
        "-inf before the loss; or pad both runs to the same size (`--make-vocab-size-divisible-by` chosen so "
        "that the padded size is equal for both tensor-parallel sizes).",
        references=("docs/knowledge/parallel.md#padded-vocabulary-under-tensor-parallelism",
                    "https://github.com/NVIDIA/Megatron-LM/issues/1754"),
    )
    invalid = (
        Example({
            "train.py": """
                import torch
                import torch.nn.functional as F

                from vocab import padded_size


                if __name__ == "__main__":
                    padded_vocab_size = padded_size(50257, 128, 8)
                    head = torch.nn.Linear(16, padded_vocab_size)
                    logits = head(torch.ones(4, 16))
                    loss = F.cross_entropy(logits, torch.zeros(4, dtype=torch.long))  # expect: ACL903
                    loss.backward()
                    torch.optim.SGD(head.parameters(), lr=0.1).step()
            """,
            "vocab.py": """
                def padded_size(vocab_size, divisible_by, tensor_parallel):
                    multiple = divisible_by * tensor_parallel
                    return (vocab_size + multiple - 1) // multiple * multiple
            """,
        }),
    )
    valid = (
        Example.script("""
            import torch
            import torch.nn.functional as F


            if __name__ == "__main__":
                vocab_size = 50257
                padded_vocab_size = 51200
                head = torch.nn.Linear(16, padded_vocab_size)
                logits = head(torch.ones(4, 16))[..., :vocab_size]
                loss = F.cross_entropy(logits, torch.zeros(4, dtype=torch.long))
                loss.backward()
                torch.optim.SGD(head.parameters(), lr=0.1).step()
        """, "logits cut back to the real vocabulary"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        if not any(_pads_vocabulary(file) for file in ctx.program.files):
            return
        real = frozenset(_table()["padded_vocab"]["real"])
        for file, call in program_calls(ctx.program):
            if _vocabulary_loss(call) and not any(_last(bound) in real for bound in file.slice_bounds):
                ctx.report(self, file, call.node,
                           f"{call.callee} over logits of a padded vocabulary: the padded rows enter the softmax, "
                           "and their number grows with the tensor-parallel size, so the loss depends on the layout.",
                           fix="slice the logits to the real vocabulary (logits[..., :vocab_size]) or mask the "
                           "padded columns before the loss")


# -- clipping a sharded model by its local norm -------------------------------------------------


def _unsharded(call: Call) -> Optional[bool]:
    """Whether an FSDP call keeps whole parameters on every rank: True (NO_SHARD), False (it shards,
    FULL_SHARD by default), None (the strategy is a value acclint cannot read)."""
    strategy = _table()["sharded_clip"]["strategy"]
    arg = call.arg(strategy["keyword"])
    if arg is None:
        return False
    text = _last(arg.value.dotted or (arg.value.literal if isinstance(arg.value.literal, str) else None))
    if text in strategy["unsharded"]:
        return True
    return False if text in strategy["sharded"] else None


def _sharding_premise(step) -> Optional[Premise]:
    """What shards the gradients, as a premise; None when the wrapper certainly does not shard."""
    call, where = step.fact, _where(step.file, step.fact)
    if call.names & _DEEPSPEED:
        return Premise("value", False, f"{call.callee} at {where}: the ZeRO stage lives in the DeepSpeed config, "
                       "which is not read (stages 2 and 3 keep gradients in partitioned buffers)")
    unsharded = _unsharded(call)
    if unsharded:
        return None
    if unsharded is None:
        keyword = _table()["sharded_clip"]["strategy"]["keyword"]
        return Premise("value", False, f"{call.callee} at {where}: {keyword} is a value acclint cannot read")
    default = _table()["sharded_clip"]["strategy"]["default"]
    written = call.arg(_table()["sharded_clip"]["strategy"]["keyword"])
    how = f"{written.value.dotted or written.value.literal}" if written is not None else f"{default} by default"
    return Premise("value", True, f"{call.callee} at {where} shards parameters and gradients ({how})")


_DEEPSPEED = frozenset({"deepspeed.initialize"})

_FSDP_PROGRAM = """
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


    def main():
        dist.init_process_group("hccl")
        model = FSDP(torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Linear(256, 64)))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for step in range(10):
            loss = model(torch.randn(8, 64)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            {clip}
            optimizer.step()


    if __name__ == "__main__":
        main()
"""


class LocalClipOfShardedModel(ProgramRule):
    code = "ACL904"
    name = "local-clip-of-sharded-model"
    category = "parallel"
    severity = "warning"
    # Stable by declaration: a protocol error the code itself shows, right wherever its premises are proven;
    # the tuning corpus holds no proven finding of it to measure (benchmarks/precision/).
    maturity = "stable"
    summary = "torch.nn.utils.clip_grad_norm_ in a program whose FSDP or DeepSpeed ZeRO shards the gradients"
    frameworks = ("torch",)
    tensor_framework = "torch"
    doc = RuleDoc(
        what="Reports `torch.nn.utils.clip_grad_norm_` reached in a program that wraps its model in "
        "`FullyShardedDataParallel` (any `sharding_strategy` but `NO_SHARD`) or builds a DeepSpeed engine "
        "(`deepspeed.initialize`). The FSDP finding's premise names the strategy; the DeepSpeed finding stays "
        "unproven, since the ZeRO stage is in the DeepSpeed config. FSDP2 (`fully_shard`) is not reported: its "
        "parameters are DTensors, and `clip_grad_norm_` reduces their norm across the mesh.",
        why="`clip_grad_norm_` scales every gradient by `max_norm / ||g||`, where `||g||` is the norm of the "
        "gradients it is given. Under FSDP those are this rank's shard: each of W ranks holds about 1/W of the "
        "gradient, so its local norm is about `||g|| / sqrt(W)`. On 1 card clipping starts at `||g|| > max_norm`; "
        "on 8 cards each rank starts only at about `sqrt(8) = 2.83` times that, and each rank scales its shard by "
        "its own factor, which bends the update's direction. The result depends on the card count: an 8-NPU run "
        "and a 1-GPU (or 16-GPU) reference clip differently from the first step whose norm exceeds `max_norm`. "
        "Under DeepSpeed ZeRO the gradients live in partitioned buffers and the engine clips them itself "
        "(`gradient_clipping`, 1.0 by default in DeepSpeed 0.19.8).",
        fix="FSDP: `model.clip_grad_norm_(max_norm)` on the root FSDP module, which all-reduces the shards' norms. "
        "DeepSpeed: `\"gradient_clipping\": max_norm` in the config and no torch clip.",
        references=("docs/knowledge/parallel.md#clipping-a-sharded-model",
                    "https://github.com/pytorch/pytorch/issues/72548",
                    "https://pytorch.org/docs/stable/fsdp.html#torch.distributed.fsdp.FullyShardedDataParallel"
                    ".clip_grad_norm_",
                    "https://github.com/deepspeedai/DeepSpeed/issues/6767"),
    )
    invalid = (
        Example.script(_FSDP_PROGRAM.format(clip="torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)"
                                            "  # expect: ACL904"), "each rank clips its own shard by its own norm"),
        Example.script("""
            import deepspeed
            import torch


            def main():
                net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Linear(256, 64))
                config = {"train_micro_batch_size_per_gpu": 8, "zero_optimization": {"stage": 2},
                          "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
                engine, optimizer, _, _ = deepspeed.initialize(model=net, model_parameters=net.parameters(),
                                                               config=config)
                for step in range(10):
                    loss = engine(torch.randn(8, 64)).pow(2).mean()
                    engine.backward(loss)
                    torch.nn.utils.clip_grad_norm_(engine.parameters(), 1.0)  # expect: ACL904
                    engine.step()


            if __name__ == "__main__":
                main()
        """, "a DeepSpeed engine clips in its own optimizer (reported unproven: the ZeRO stage is config)"),
    )
    valid = (
        Example.script(_FSDP_PROGRAM.format(clip="model.clip_grad_norm_(max_norm=1.0)"),
                       "the FSDP root's own clip all-reduces the shards' norms"),
        Example.script("""
            import torch
            import torch.distributed as dist
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy


            def main():
                dist.init_process_group("hccl")
                net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Linear(256, 64))
                model = FSDP(net, sharding_strategy=ShardingStrategy.NO_SHARD)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                loss = model(torch.randn(8, 64)).pow(2).mean()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
                optimizer.step()


            if __name__ == "__main__":
                main()
        """, "NO_SHARD keeps whole gradients on every rank, as DDP does"),
        Example.script("""
            import torch
            import torch.distributed as dist
            from torch.distributed.fsdp import fully_shard


            def main():
                dist.init_process_group("hccl")
                model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Linear(256, 64))
                fully_shard(model)
                optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
                loss = model(torch.randn(8, 64)).pow(2).mean()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
                optimizer.step()


            if __name__ == "__main__":
                main()
        """, "FSDP2: DTensor parameters, whose norm clip_grad_norm_ reduces across the mesh"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        known = _table()["sharded_clip"]
        wrappers = frozenset(known["wrappers"])
        steps = list(ctx.program.calls())
        sharding = [(step, _sharding_premise(step)) for step in steps if step.fact.names & wrappers]
        sharding = [(step, premise) for step, premise in sharding if premise is not None]
        if not sharding:
            return
        wrap, premise = sharding[0]
        instead = known["wrappers"][next(iter(wrap.fact.names & wrappers))]
        clips = frozenset(known["local_clips"])
        for step in steps:
            if step.fact.names & clips:
                ctx.report(self, step.file, step.fact.node,
                           f"{step.fact.callee}() scales by the norm of the gradients this rank holds, and "
                           f"{wrap.fact.callee} at {_where(wrap.file, wrap.fact)} shards them: each of W ranks "
                           "clips its shard by a local norm of about ||g||/sqrt(W), so clipping starts later "
                           "(8 cards: at 2.83x max_norm) and differs from rank to rank and with the card count.",
                           fix=f"clip with {instead}", premises=(premise,))


# -- metrics over DistributedSampler shards ------------------------------------------------------


def _combines(call: Call) -> bool:
    known = _table()["padded_eval"]
    return _named_or_method(call, known["combines"], known["combine_methods"])


def _evaluation_sampler(file: FileFacts, sampler: Call, program_combines) -> Optional[str]:
    """Where the ranks' results over this DistributedSampler's shards are combined, or None: in the
    function building it (one that neither trains nor sets an epoch), or, for a sampler stored under an
    evaluation name (`val_sampler`), in a function of the program named for evaluation (`program_combines()`)."""
    known = _table()["padded_eval"]
    calls = file.calls_in(sampler.scope)
    trains = any(call.method in known["training_methods"] or call.method == "set_epoch" for call in calls)
    here = next((call for call in calls if _combines(call)), None)
    if here is not None and not trains:
        return f"{here.callee} at {_where(file, here)}"
    if _evaluation_name(sampler):
        found = program_combines()
        return f"{found[1].callee} at {_where(*found)}" if found is not None else None
    return None


def _evaluation_name(call: Call) -> bool:
    """The sampler is stored under a name with an evaluation word: `val_sampler`, `self.eval_sampler`."""
    stored = [call.assigned_to or ""] + [sink.split(":", 1)[1] for sink in call.sinks
                                         if sink.startswith(("name:", "attr:"))]
    return any(_names_evaluation(name) for name in stored)


def _names_evaluation(name: str) -> bool:
    known = _table()["padded_eval"]
    words = frozenset(known["evaluation_words"]) | frozenset(known["evaluation_verbs"])
    return bool(words & set(re.split(r"[_.]", name.lower())))


def _combines_in_evaluation(call: Call) -> bool:
    """A collective in a function named for evaluation (`validation_step`, `Trainer.evaluate`)."""
    return _combines(call) and _names_evaluation(call.scope)


def _drops_last(call: Call) -> bool:
    arg = call.arg("drop_last")
    return arg is not None and arg.value.literal is True


class PaddedSamplerEvaluation(ProgramRule):
    code = "ACL905"
    name = "padded-sampler-evaluation"
    category = "parallel"
    severity = "warning"
    maturity = "preview"  # until measured on the judged corpus (CONTRIBUTING.md, "Precision")
    summary = "An evaluation metric summed over DistributedSampler shards, which repeat or drop samples"
    frameworks = ("torch",)
    tensor_framework = "torch"
    doc = RuleDoc(
        what="Reports a `DistributedSampler` whose shards' results are combined (`dist.all_reduce`, `all_gather`, "
        "`reduce`, `gather`): built in a function that combines them and does not train (no `backward`, `step` or "
        "`set_epoch` there), or stored under an evaluation name (`val_sampler`, `self.eval_sampler`) in a program "
        "that combines results in a function named for evaluation (`validate`, `validation_step`). Not reported: "
        "training samplers, and programs that gather with `accelerator.gather_for_metrics`, which drops the "
        "duplicates.",
        why="`DistributedSampler` gives each of W ranks `ceil(N / W)` samples. With `drop_last=False` (the "
        "default) it pads the dataset to `W * ceil(N / W)` by repeating its first samples, up to W - 1 of them; "
        "with `drop_last=True` it drops the last `N mod W`. A top-1 or loss summed over the shards then counts "
        "other samples on 8 cards than on 1: 1,001 validation samples are evaluated as 1,008 on 8 cards (7 "
        "repeated, so top-1 can move by up to 7/1,008 = 0.7 points) and as 1,001 on 1 card. A GPU reference on "
        "one card count and an NPU run on another disagree on the metric although the model is the same.",
        fix="Give each sample to exactly one rank (`Subset(dataset, range(rank, len(dataset), world_size))`, "
        "or a sampler without padding) and divide the summed metric by the summed count; or gather predictions "
        "and cut them to `len(dataset)`; with accelerate, `accelerator.gather_for_metrics`.",
        references=("docs/knowledge/parallel.md#evaluation-with-a-distributedsampler",
                    "https://github.com/pytorch/pytorch/issues/25162",
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler"),
    )
    invalid = (
        Example.script("""
            import torch
            import torch.distributed as dist
            from torch.utils.data import DataLoader, TensorDataset
            from torch.utils.data.distributed import DistributedSampler


            def evaluate(model, dataset):
                sampler = DistributedSampler(dataset, shuffle=False)  # expect: ACL905
                correct = torch.zeros(2)
                for x, y in DataLoader(dataset, batch_size=50, sampler=sampler):
                    correct += torch.tensor([(model(x).argmax(1) == y).sum().item(), len(y)])
                dist.all_reduce(correct)
                return (correct[0] / correct[1]).item()


            def main():
                dist.init_process_group("hccl")
                model = torch.nn.Linear(8, 3)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
                print(evaluate(model, TensorDataset(torch.randn(1001, 8), torch.randint(0, 3, (1001,)))))


            if __name__ == "__main__":
                main()
        """, "top-1 summed over padded shards"),
        Example({
            "train.py": """
                import torch
                import torch.distributed as dist
                from torch.utils.data import DataLoader, TensorDataset
                from torch.utils.data.distributed import DistributedSampler

                from metrics import validate


                def main():
                    dist.init_process_group("hccl")
                    model = torch.nn.Linear(8, 3)
                    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                    train = TensorDataset(torch.randn(800, 8), torch.randint(0, 3, (800,)))
                    val = TensorDataset(torch.randn(1001, 8), torch.randint(0, 3, (1001,)))
                    train_sampler = DistributedSampler(train)
                    val_sampler = DistributedSampler(val, shuffle=False)  # expect: ACL905
                    for epoch in range(2):
                        train_sampler.set_epoch(epoch)
                        for x, y in DataLoader(train, batch_size=32, sampler=train_sampler):
                            torch.nn.functional.cross_entropy(model(x), y).backward()
                            optimizer.step()
                        print(validate(model, DataLoader(val, batch_size=50, sampler=val_sampler)))


                if __name__ == "__main__":
                    main()
            """,
            "metrics.py": """
                import torch
                import torch.distributed as dist


                def validate(model, loader):
                    correct = torch.zeros(2)
                    for x, y in loader:
                        correct += torch.tensor([(model(x).argmax(1) == y).sum().item(), len(y)])
                    dist.all_reduce(correct)
                    return (correct[0] / correct[1]).item()
            """,
        }, "a validation sampler built beside the training one, its results all-reduced in another module"),
    )
    valid = (
        Example.script("""
            import torch
            import torch.distributed as dist
            from torch.utils.data import DataLoader, Subset, TensorDataset
            from torch.utils.data.distributed import DistributedSampler


            def evaluate(model, dataset):
                shard = Subset(dataset, range(dist.get_rank(), len(dataset), dist.get_world_size()))
                correct = torch.zeros(2)
                for x, y in DataLoader(shard, batch_size=50):
                    correct += torch.tensor([(model(x).argmax(1) == y).sum().item(), len(y)])
                dist.all_reduce(correct)
                return (correct[0] / correct[1]).item()


            def main():
                dist.init_process_group("hccl")
                model = torch.nn.Linear(8, 3)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                train = TensorDataset(torch.randn(800, 8), torch.randint(0, 3, (800,)))
                sampler = DistributedSampler(train)
                for epoch in range(2):
                    sampler.set_epoch(epoch)
                    for x, y in DataLoader(train, batch_size=32, sampler=sampler):
                        torch.nn.functional.cross_entropy(model(x), y).backward()
                        optimizer.step()
                        dist.all_reduce(torch.zeros(1))
                print(evaluate(model, TensorDataset(torch.randn(1001, 8), torch.randint(0, 3, (1001,)))))


            if __name__ == "__main__":
                main()
        """, "every sample on exactly one rank; the training sampler is not an evaluation"),
    )

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        known = _table()["padded_eval"]
        samplers = frozenset(known["samplers"])
        found = [(file, call) for file, call in program_calls(ctx.program) if call.names & samplers]
        if not found or mentions_any(ctx.program, lambda call: call.method in known["dedupe_methods"]):
            return
        reached = reached_scopes(ctx.program)

        @lru_cache(maxsize=1)
        def program_combines():
            return next(((f, c) for f, c in program_calls(ctx.program) if _combines_in_evaluation(c)), None)

        for file, call in found:
            if (file.abspath, call.scope) not in reached:
                continue
            combined = _evaluation_sampler(file, call, program_combines)
            if combined is None:
                continue
            if _drops_last(call):
                effect = "drops the last N mod W samples (up to W - 1; 1,001 samples: 1,000 on 8 cards)"
            else:
                effect = ("pads the dataset to a multiple of the card count W by repeating up to W - 1 samples "
                          "(1,001 samples: 1,008 on 8 cards)")
            ctx.report(self, file, call.node,
                       f"{call.callee} {effect}, and {combined} combines the ranks' results: the metric counts "
                       "other samples on 8 cards than on 1, so runs on different card counts report "
                       "different numbers for the same model.",
                       fix="give each sample to exactly one rank (Subset(dataset, range(rank, len(dataset), "
                       "world_size))) and divide by the summed count, or cut gathered predictions to "
                       "len(dataset)")


RULES = [BatchNormWithoutSync(), MeanLossOverAccumulation(), PaddedVocabularyCrossEntropy(), LocalClipOfShardedModel(),
         PaddedSamplerEvaluation()]
