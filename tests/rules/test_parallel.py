"""Rules of the `parallel` category (ACL901-ACL903) on small programs spread over several modules,
and the facts of torch they rest on (BatchNorm statistics of a split batch, means over micro-batches)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.linter.rulebase import code
from acclint.rules import parallel


def findings(tmp_path, files: dict, code: str) -> list:
    for name, source in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    result = scan([tmp_path], parallel.RULES, Config(), jobs=1, cwd=tmp_path)
    assert result.errors == []
    return [f for f in result.findings if f.rule == code]


DDP_ENTRY = code("""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from models import build


    if __name__ == "__main__":
        dist.init_process_group("nccl")
        model = DDP(build())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(2, 3, 8, 8)).sum().backward()
        optimizer.step()
""")

MODELS = code("""
    import torch


    class Block(torch.nn.Module):
        def __init__(self, width):
            super().__init__()
            self.conv = torch.nn.Conv2d(width, width, 3)
            self.bn = torch.nn.BatchNorm2d(width)


    def build():
        layers = [Block(3), Block(3)]
        return torch.nn.Sequential(*layers, torch.nn.BatchNorm2d(3))
""")


# -- ACL901 --------------------------------------------------------------------------------------


def test_batchnorm_under_ddp_is_reported_once_at_the_wrap(tmp_path):
    found = findings(tmp_path, {"train.py": DDP_ENTRY, "models.py": MODELS}, "ACL901")
    assert [(f.path, f.line) for f in found] == [("train.py", 10)]
    assert "models.py:8" in found[0].message  # the first BatchNorm the program builds


def test_a_conversion_anywhere_in_the_program_silences_it(tmp_path):
    helper = MODELS + "\n\ndef to_sync(model):\n    return torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)\n"
    assert findings(tmp_path, {"train.py": DDP_ENTRY, "models.py": helper}, "ACL901") == []


def test_a_torchvision_network_with_batchnorm_counts_and_one_without_does_not(tmp_path):
    entry = DDP_ENTRY.replace("from models import build", "from torchvision.models import {0} as build")
    assert len(findings(tmp_path / "a", {"train.py": entry.format("resnet50")}, "ACL901")) == 1
    assert findings(tmp_path / "b", {"train.py": entry.format("vit_b_16")}, "ACL901") == []


def test_fsdp_counts_as_data_parallel_and_a_single_card_program_is_left_alone(tmp_path):
    fsdp = DDP_ENTRY.replace("from torch.nn.parallel import DistributedDataParallel as DDP",
                             "from torch.distributed.fsdp import FullyShardedDataParallel as DDP")
    assert len(findings(tmp_path / "a", {"train.py": fsdp, "models.py": MODELS}, "ACL901")) == 1
    single = DDP_ENTRY.replace("model = DDP(build())", "model = build()")
    assert findings(tmp_path / "b", {"train.py": single, "models.py": MODELS}, "ACL901") == []


def test_batchnorm_statistics_depend_on_how_the_batch_is_split():
    """Why ACL901 holds: two cards each normalising their half see other statistics than one card."""
    torch.manual_seed(0)
    batch = torch.randn(8, 3, 4, 4) * torch.arange(1, 9).view(8, 1, 1, 1)
    norm = torch.nn.BatchNorm2d(3)
    whole = norm(batch)
    halves = torch.cat([norm(batch[:4]), norm(batch[4:])])
    assert not torch.allclose(whole, halves, atol=1e-3)


# -- ACL902 --------------------------------------------------------------------------------------


LOOP = code("""
    import torch

    from losses import token_loss


    def train(model, loader, optimizer, args):
        for step, (tokens, labels) in enumerate(loader):
            loss = token_loss(model(tokens), labels)
            {division}
            loss.backward()
            optimizer.step()


    if __name__ == "__main__":
        model = torch.nn.Linear(4, 10)
        train(model, [], torch.optim.AdamW(model.parameters()), None)
""")

LOSSES = code("""
    import torch.nn.functional as F


    def token_loss(logits, labels):
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100{reduction})
""")


@pytest.mark.parametrize("division,reduction,reported", [
    ("loss = loss / args.gradient_accumulation_steps", "", True),
    ("loss /= args.grad_accum_steps", "", True),
    ("loss = loss / args.gradient_accumulation_steps", ', reduction="mean"', True),
    ("loss = loss / args.gradient_accumulation_steps", ', reduction="sum"', False),  # summed, not a mean
    ("loss = loss / args.world_size", "", False),  # not an accumulation count
    ("scale = step / args.gradient_accumulation_steps", "", False),  # not a loss
])
def test_accumulated_mean_loss_with_the_loss_in_another_module(tmp_path, division, reduction, reported):
    found = findings(tmp_path, {"train.py": LOOP.format(division=division),
                                "losses.py": LOSSES.format(reduction=reduction)}, "ACL902")
    assert [(f.path, f.line) for f in found] == ([("train.py", 9)] if reported else [])
    if reported:
        assert "losses.py:5" in found[0].message


def test_a_cross_entropy_without_ignored_targets_is_left_alone(tmp_path):
    losses = LOSSES.format(reduction="").replace(", ignore_index=-100", "")
    division = "loss = loss / args.gradient_accumulation_steps"
    assert findings(tmp_path, {"train.py": LOOP.format(division=division), "losses.py": losses}, "ACL902") == []


def test_the_mean_of_micro_batch_means_is_not_the_mean_over_tokens():
    """Why ACL902 holds: with padding, micro-batch means averaged over steps differ from one batch's mean."""
    torch.manual_seed(0)
    logits = torch.randn(2, 6, 5)
    labels = torch.tensor([[1, 2, 3, 4, 0, 1], [2, -100, -100, -100, -100, -100]])
    whole = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
    accumulated = sum(F.cross_entropy(logits[i], labels[i], ignore_index=-100) / 2 for i in range(2))
    assert not torch.allclose(whole, accumulated, atol=1e-3)


# -- ACL903 --------------------------------------------------------------------------------------


MEGATRON_STYLE = {name: code(source) for name, source in {
    "pretrain.py": """
        import torch

        from arguments import parse
        from model import language_model_loss


        if __name__ == "__main__":
            args = parse()
            head = torch.nn.Linear(16, args.padded_vocab_size)
            loss = language_model_loss(head(torch.ones(4, 16)), torch.zeros(4, dtype=torch.long))
            loss.backward()
            torch.optim.SGD(head.parameters(), lr=0.1).step()
    """,
    "arguments.py": """
        import argparse


        def parse():
            args = argparse.Namespace(vocab_size=50257, make_vocab_size_divisible_by=128, tensor_model_parallel_size=8)
            multiple = args.make_vocab_size_divisible_by * args.tensor_model_parallel_size
            args.padded_vocab_size = (args.vocab_size + multiple - 1) // multiple * multiple
            return args
    """,
    "model.py": """
        from megatron.core import tensor_parallel


        def language_model_loss(logits, labels):
            return tensor_parallel.vocab_parallel_cross_entropy(logits, labels)
    """,
}.items()}


def test_a_vocabulary_parallel_loss_over_padded_logits_is_reported_where_it_is_computed(tmp_path):
    found = findings(tmp_path, MEGATRON_STYLE, "ACL903")
    assert [(f.path, f.line, f.severity) for f in found] == [("model.py", 5, "info")]


def test_logits_cut_to_the_real_vocabulary_or_no_padding_is_left_alone(tmp_path):
    sliced = dict(MEGATRON_STYLE)
    sliced["model.py"] = MEGATRON_STYLE["model.py"].replace(
        "vocab_parallel_cross_entropy(logits, labels)", "vocab_parallel_cross_entropy(logits[..., :vocab_size], labels)"
    ).replace("(logits, labels):", "(logits, labels, vocab_size=50257):")
    assert findings(tmp_path / "a", sliced, "ACL903") == []
    unpadded = dict(MEGATRON_STYLE)
    unpadded["arguments.py"] = "import argparse\n\n\ndef parse():\n    return argparse.Namespace(padded=1)\n"
    unpadded["pretrain.py"] = MEGATRON_STYLE["pretrain.py"].replace("args.padded_vocab_size", "50257")
    assert findings(tmp_path / "b", unpadded, "ACL903") == []


# -- ACL904: clipping a sharded model by its local norm ------------------------------------------

FSDP_CLIP = code("""
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


    def train(model, optimizer):
        for step in range(4):
            loss = model(torch.randn(8, 64)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()


    if __name__ == "__main__":
        dist.init_process_group("hccl")
        model = FSDP(torch.nn.Linear(64, 64){strategy})
        train(model, torch.optim.AdamW(model.parameters(), lr=1e-4))
""")


def _premise(finding, name: str):
    return next(p for p in finding.premises if p.premise == name)


def test_a_local_clip_under_fsdp_states_the_sharding_as_a_proven_premise(tmp_path):
    found = findings(tmp_path, {"train.py": FSDP_CLIP.format(strategy="")}, "ACL904")
    assert [f.line for f in found] == [11]
    value = _premise(found[0], "value")
    assert value.proven and "train.py:17" in value.evidence and "FULL_SHARD by default" in value.evidence
    assert found[0].proven and found[0].severity == "warning"


def test_an_unreadable_sharding_strategy_leaves_the_premise_open(tmp_path):
    found = findings(tmp_path, {"train.py": FSDP_CLIP.format(strategy=", sharding_strategy=args.strategy")},
                     "ACL904")
    value = _premise(found[0], "value")
    assert not value.proven and "sharding_strategy" in value.evidence
    assert not found[0].proven


def test_no_shard_keeps_whole_gradients_and_is_not_reported(tmp_path):
    source = FSDP_CLIP.format(strategy=", sharding_strategy=ShardingStrategy.NO_SHARD").replace(
        "import FullyShardedDataParallel as FSDP", "import FullyShardedDataParallel as FSDP, ShardingStrategy")
    assert findings(tmp_path, {"train.py": source}, "ACL904") == []


def test_clipping_each_shard_by_its_own_norm_is_not_clipping_the_whole_gradient():
    """The fact ACL904 rests on, in torch: 8 shards clipped by their local norms vs the gradient clipped once."""
    torch.manual_seed(0)
    grad = torch.randn(8 * 1024) * 0.02  # total norm about 1.8
    whole = torch.nn.Parameter(torch.zeros_like(grad))
    whole.grad = grad.clone()
    total = torch.nn.utils.clip_grad_norm_([whole], max_norm=1.0)
    shards = [torch.nn.Parameter(torch.zeros(1024)) for _ in range(8)]
    for index, shard in enumerate(shards):
        shard.grad = grad[index * 1024:(index + 1) * 1024].clone()
        local = torch.nn.utils.clip_grad_norm_([shard], max_norm=1.0)
        assert local < 1.0 < total  # each local norm is about total / sqrt(8): no shard is clipped
    clipped_locally = torch.cat([shard.grad for shard in shards])
    assert torch.allclose(clipped_locally, grad)  # the 8-card run did not clip at all
    assert torch.linalg.vector_norm(whole.grad).item() == pytest.approx(1.0, rel=1e-4)  # the 1-card run did


# -- ACL905: a metric summed over DistributedSampler shards -----------------------------------------

def test_distributed_sampler_repeats_samples_to_even_the_shards():
    """The fact ACL905 rests on: 1,001 samples on 8 ranks are 1,008 indices, 7 of them repeats."""
    from torch.utils.data.distributed import DistributedSampler

    dataset = list(range(1001))
    indices = [i for rank in range(8) for i in DistributedSampler(dataset, num_replicas=8, rank=rank, shuffle=False)]
    assert len(indices) == 1008 and len(set(indices)) == 1001
    dropped = [i for rank in range(8)
               for i in DistributedSampler(dataset, num_replicas=8, rank=rank, shuffle=False, drop_last=True)]
    assert len(dropped) == 1000


EVAL = code("""
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler


    def evaluate(model, dataset):
        sampler = DistributedSampler(dataset, shuffle=False{drop})
        correct = torch.zeros(1)
        for x, y in DataLoader(dataset, sampler=sampler):
            correct += (model(x).argmax(1) == y).sum()
        dist.all_reduce(correct)
        return correct


    if __name__ == "__main__":
        model = torch.nn.Linear(8, 3)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(2, 8)).sum().backward()
        optimizer.step()
        evaluate(model, [])
""")


@pytest.mark.parametrize("drop, says", [("", "repeating up to W - 1"), (", drop_last=True", "drops the last")])
def test_an_evaluation_sampler_is_reported_with_what_it_does_to_the_count(tmp_path, drop, says):
    found = findings(tmp_path, {"train.py": EVAL.format(drop=drop)}, "ACL905")
    assert [f.line for f in found] == [8]
    assert says in found[0].message and found[0].proven


def test_gather_for_metrics_drops_the_duplicates_and_is_left_alone(tmp_path):
    source = EVAL.format(drop="").replace("dist.all_reduce(correct)", "dist.all_reduce(correct)\n"
                                          "    correct = accelerator.gather_for_metrics(correct)")
    assert findings(tmp_path, {"train.py": source}, "ACL905") == []
