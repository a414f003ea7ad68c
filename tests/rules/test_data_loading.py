"""Data-loading rules: global random draws in code DataLoader workers run (ACL110), and a
DistributedSampler whose epoch never advances (ACL213); with the torch behaviour they rest on."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.linter.rulebase import code
from acclint.rules import data_loading


def findings(tmp_path, files: dict, rule_code: str, rules=data_loading.RULES) -> list:
    for name, source in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    result = scan([tmp_path], rules, Config(), jobs=1, cwd=tmp_path)
    assert result.errors == []
    return [f for f in result.findings if f.rule == rule_code]


ENTRY = code("""
    import torch

    from datasets.images import ImageFolderDataset{imports}


    if __name__ == "__main__":
        torch.manual_seed(0)
        dataset = ImageFolderDataset("data"{dataset_args})
        loader = torch.utils.data.DataLoader(dataset, batch_size=8{loader_args})
        model = torch.nn.Linear(16, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in loader:
            model(batch).sum().backward()
            optimizer.step()
""")

DATASET = code("""
    import torch

    from datasets.augment import jitter


    class ImageFolderDataset(torch.utils.data.Dataset):
        def __init__(self, root, transform=None):
            self.root = root
            self.transform = transform

        def __len__(self):
            return 64

        def __getitem__(self, index):
            sample = jitter(torch.ones(16))
            return self.transform(sample) if self.transform else sample
""")

AUGMENT = code("""
    import random

    import numpy as np
    import torch


    def jitter(sample):
        return sample * {draw}
""")


def _program(draw="random.uniform(0.9, 1.1)", loader_args=", num_workers=4", imports="", dataset_args="",
             extra=None) -> dict:
    files = {
        "train.py": ENTRY.format(imports=imports, dataset_args=dataset_args, loader_args=loader_args),
        "datasets/__init__.py": "",
        "datasets/images.py": DATASET,
        "datasets/augment.py": AUGMENT.format(draw=draw),
    }
    files.update(extra or {})
    return files


# -- ACL110 --------------------------------------------------------------------------------------


def test_a_draw_in_a_helper_of_a_dataset_in_another_package_is_reported_at_the_loader(tmp_path):
    found = findings(tmp_path, _program(), "ACL110")
    assert [(f.path, f.line) for f in found] == [("train.py", 9)]
    assert "datasets/augment.py:8" in found[0].message and "ImageFolderDataset.__getitem__" in found[0].message


@pytest.mark.parametrize("draw", ["np.random.rand()", "random.random()"])
def test_numpy_and_python_draws_count(tmp_path, draw):
    assert len(findings(tmp_path, _program(draw=draw), "ACL110")) == 1


@pytest.mark.parametrize("draw", ["torch.rand(1)", "np.random.default_rng(0).random()", "1.0"])
def test_torch_draws_and_local_generators_are_left_alone(tmp_path, draw):
    assert findings(tmp_path, _program(draw=draw), "ACL110") == []


@pytest.mark.parametrize("loader_args,reported", [
    ("", False),  # num_workers defaults to 0: the main process draws
    (", num_workers=0", False),
    (", num_workers=args.workers", True),  # unknown: may be > 0
    (", num_workers=4, worker_init_fn=seed_worker", False),
])
def test_worker_count_and_worker_init_fn(tmp_path, loader_args, reported):
    files = _program(loader_args=loader_args)
    assert bool(findings(tmp_path, files, "ACL110")) is reported


COMPOSED = code("""
    import random


    class RandomFlip:
        def __call__(self, sample):
            return sample.flip(0) if random.random() < 0.5 else sample


    class Compose:
        def __init__(self, steps):
            self.steps = steps
""")


def test_a_transform_handed_to_the_dataset_through_a_composing_call(tmp_path):
    files = _program(draw="1.0", imports="\nfrom transforms import Compose, RandomFlip",
                     dataset_args=", transform=Compose([RandomFlip()])", extra={"transforms.py": COMPOSED})
    found = findings(tmp_path, files, "ACL110")
    assert len(found) == 1 and "transform RandomFlip" in found[0].message


def test_a_collate_function_that_draws(tmp_path):
    collate = "import random\n\n\ndef mix(batch):\n    random.shuffle(batch)\n    return batch\n"
    files = _program(draw="1.0", imports="\nfrom collate import mix", loader_args=", num_workers=2, collate_fn=mix",
                     extra={"collate.py": collate})
    found = findings(tmp_path, files, "ACL110")
    assert len(found) == 1 and "collate_fn mix" in found[0].message


def test_the_loader_is_judged_by_the_dataset_it_loads(tmp_path):
    """A loader traced to a dataset without draws is left alone, although another dataset draws."""
    other = code("""
        import numpy as np
        import torch


        class Plain(torch.utils.data.Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, index):
                return torch.ones(16)
    """)
    files = _program(draw="np.random.rand()", extra={"plain.py": other})
    files["train.py"] = files["train.py"].replace("from datasets.images import ImageFolderDataset",
                                                  "from datasets.images import ImageFolderDataset\nfrom plain import Plain")
    files["train.py"] = files["train.py"].replace("DataLoader(dataset,", "DataLoader(Plain(),")
    assert findings(tmp_path, files, "ACL110") == []


class _Draws(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        return np.random.randint(0, 1_000_000)


def _draws(workers: int) -> list:
    torch.manual_seed(0)
    np.random.seed(0)
    return [int(x) for batch in DataLoader(_Draws(), batch_size=2, num_workers=workers) for x in batch]


def test_worker_draws_depend_on_the_worker_count_not_on_the_main_seed():
    """Why ACL110 holds: NumPy in workers is reseeded per worker, so the same seeds give other draws
    with another num_workers."""
    assert _draws(1) != _draws(2)


# -- ACL213 --------------------------------------------------------------------------------------


SAMPLED = code("""
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler

    from trainer import Trainer


    if __name__ == "__main__":
        dist.init_process_group("hccl")
        dataset = TensorDataset(torch.ones(64, 4))
        sampler = DistributedSampler(dataset{shuffle})
        loader = DataLoader(dataset, batch_size=8, sampler=sampler)
        trainer = Trainer(torch.nn.Linear(4, 1))
        trainer.fit(loader, sampler, 10)
""")

TRAINER = code("""
    import torch


    class Trainer:
        def __init__(self, model):
            self.model = model
            self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def fit(self, loader, sampler, epochs):
            for epoch in range(epochs):
                {set_epoch}
                for (batch,) in loader:
                    self.model(batch).sum().backward()
                    self.optimizer.step()
""")


@pytest.mark.parametrize("shuffle,set_epoch,reported", [
    ("", "pass", True),
    (", shuffle=True", "pass", True),
    (", shuffle=False", "pass", False),
    ("", "sampler.set_epoch(epoch)", False),  # called in the trainer's module
    ("", "loader.sampler.set_epoch(epoch)", False),
])
def test_set_epoch_anywhere_in_the_program(tmp_path, shuffle, set_epoch, reported):
    found = findings(tmp_path, {"train.py": SAMPLED.format(shuffle=shuffle),
                                "trainer.py": TRAINER.format(set_epoch=set_epoch)}, "ACL213")
    assert [(f.path, f.line) for f in found] == ([("train.py", 12)] if reported else [])


def test_a_program_without_an_epoch_loop_is_left_alone(tmp_path):
    one_pass = TRAINER.format(set_epoch="pass").replace("for epoch in range(epochs):", "if epochs:")
    assert findings(tmp_path, {"train.py": SAMPLED.format(shuffle=""), "trainer.py": one_pass}, "ACL213") == []


def test_a_library_that_drives_the_epochs_is_left_alone(tmp_path):
    entry = SAMPLED.format(shuffle="") + "    from accelerate import Accelerator\n    Accelerator()\n"
    assert findings(tmp_path, {"train.py": entry, "trainer.py": TRAINER.format(set_epoch="pass")}, "ACL213") == []


def _order(sampler: DistributedSampler, epoch=None) -> list:
    if epoch is not None:
        sampler.set_epoch(epoch)
    return list(sampler)


def test_without_set_epoch_every_epoch_repeats_one_order_that_depends_on_the_ranks():
    """Why ACL213 holds, on torch itself."""
    data = list(range(32))
    two = DistributedSampler(data, num_replicas=2, rank=0, shuffle=True)
    assert _order(two) == _order(two)  # epoch 0, then "epoch 1" without set_epoch
    assert _order(two, 0) != _order(two, 1)
    four = DistributedSampler(data, num_replicas=4, rank=0, shuffle=True)
    assert _order(four, 0) != _order(two, 0)[:8]


def test_positional_loader_arguments_follow_the_dataloader_signature(tmp_path):
    """Position 8 is drop_last and 10 worker_init_fn: a positional drop_last is no worker_init_fn (ACL208 too)."""
    from acclint.rules.determinism import DataLoaderWorkersUnseeded

    files = _program(draw="np.random.rand()", loader_args=", False, None, None, 4, None, False, True")
    files["train.py"] = files["train.py"].replace("batch_size=8", "8").replace(
        "torch.manual_seed(0)", "torch.manual_seed(0)\n    import random\n    random.seed(0)\n    random.random()")
    assert len(findings(tmp_path / "a", files, "ACL110")) == 1
    assert len(findings(tmp_path / "b", files, "ACL208", [DataLoaderWorkersUnseeded()])) == 1
    positional_init = files["train.py"].replace("False, True)", "False, True, 0, seed_worker)")
    assert findings(tmp_path / "c", {**files, "train.py": positional_init}, "ACL110") == []


# -- the seed rules see draws of a dataset loaded in the main process ------------------------------


@pytest.mark.parametrize("draw,rule_code", [("random.uniform(0.9, 1.1)", "ACL101"), ("np.random.rand()", "ACL103")])
def test_an_unseeded_generator_drawn_in_a_dataset_loaded_in_the_main_process_is_a_warning(tmp_path, draw, rule_code):
    from acclint.rules import seed

    found = findings(tmp_path / "main", _program(draw=draw, loader_args=""), rule_code, seed.RULES)
    assert [f.severity for f in found] == ["warning"]
    assert "ImageFolderDataset.__getitem__" in found[0].message
    # In workers the main seed is beside the point (they reseed): ACL110's case, and ACL101/103 stay info.
    found = findings(tmp_path / "workers", _program(draw=draw), rule_code, seed.RULES)
    assert [f.severity for f in found] == ["info"]


def test_a_replacement_drawn_only_when_a_sample_fails_to_load_is_left_alone(tmp_path):
    """A draw in an `except` body (retry with another index) runs only on unreadable data."""
    retry = DATASET.replace("        sample = jitter(torch.ones(16))", """        try:
            sample = torch.load(self.root)
        except OSError:
            return self[random.randrange(64)]""").replace("import torch\n", "import random\n\nimport torch\n", 1)
    assert "except OSError" in retry
    files = _program(draw="1.0", extra={"datasets/images.py": retry})
    assert findings(tmp_path, files, "ACL110") == []
    files = _program(draw="1.0", extra={"datasets/images.py": retry.replace("except OSError:", "finally:")})
    assert len(findings(tmp_path / "finally", files, "ACL110")) == 1


def test_one_finding_per_draw_and_a_seeded_generator_is_named(tmp_path):
    """Two loaders of one builder reaching the same draw give one finding; with generator= the message
    no longer blames earlier global draws, only the worker split."""
    files = _program(loader_args=", num_workers=4, generator=torch.Generator().manual_seed(0)")
    files["train.py"] = files["train.py"].replace(
        "        model = torch.nn.Linear",
        "        again = torch.utils.data.DataLoader(dataset, batch_size=4, num_workers=2)\n        model = torch.nn.Linear")
    found = findings(tmp_path, files, "ACL110")
    assert [(f.path, f.line) for f in found] == [("train.py", 9)]
    assert "num_workers." in found[0].message and "global torch generator" not in found[0].message
