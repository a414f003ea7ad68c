"""`acclint diff`: the random generators each side draws from, where, and which it seeds, as rows
of category `seed`. Fixtures: tests/setups/fixtures/random."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from setup_helpers import FIXTURES, by_key, line_of

from acclint.setups import diff_paths
from acclint.setups.model import read_model
from acclint.setups.model.randomness import inventory

SEEDED, UNSEEDED = FIXTURES / "random" / "seeded_loader.py", FIXTURES / "random" / "unseeded_loader.py"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(dedent(text), encoding="utf-8")
    return path


def test_a_generator_seeded_on_one_side_only_is_a_seed_row_with_both_draws():
    row = by_key(diff_paths(str(SEEDED), str(UNSEEDED)))["random-numpy"]
    assert row.category == "seed"
    assert (row.left.value, row.right.value) == ("draws, seeded", "draws, not seeded")
    assert row.left.where.line == line_of(SEEDED, "np.random.randint")
    assert row.right.where.line == line_of(UNSEEDED, "np.random.randint")
    assert "Crops.__getitem__" in row.message  # where it draws: in the dataset
    assert f"np.random.seed at {SEEDED}:{line_of(SEEDED, 'np.random.seed')}" in row.message
    assert "Seed it on the right" in row.message


def test_the_inventory_names_each_generator_and_its_seeding():
    found = inventory(read_model(str(SEEDED)))
    assert set(found.draws) == {"numpy"}
    assert {"numpy", "python-random", "torch-cpu"} <= set(found.seeds)
    assert found.seeds["numpy"].callee == "np.random.seed"
    assert set(inventory(read_model(str(UNSEEDED))).seeds) >= {"python-random", "torch-cpu"}
    assert "numpy" not in inventory(read_model(str(UNSEEDED))).seeds


def test_both_seeded_or_both_not_is_no_row():
    assert "random-numpy" in diff_paths(str(SEEDED), str(SEEDED)).same
    assert "random-numpy" in diff_paths(str(UNSEEDED), str(UNSEEDED)).same


def test_a_seed_helper_covers_what_its_table_says(tmp_path: Path):
    """transformers.set_seed seeds numpy (seeding.toml): a side that draws and calls it is seeded."""
    helper = write(tmp_path, "helper.py", UNSEEDED.read_text(encoding="utf-8").replace(
        "    random.seed(0)\n", "    random.seed(0)\n    set_seed(0)\n").replace(
        "import random\n", "import random\n\nfrom transformers import set_seed\n"))
    assert "random-numpy" in diff_paths(str(SEEDED), str(helper)).same


def test_numpy_draws_on_one_side_and_torch_draws_on_the_other(tmp_path: Path):
    torch_side = write(tmp_path, "torch_side.py", """\
        import torch


        class Crops:
            def __getitem__(self, index):
                offset = int(torch.randint(0, 8, (1,)))
                return offset


        torch.manual_seed(0)
    """)
    found = by_key(diff_paths(str(SEEDED), str(torch_side)))
    row = found["random-numpy"]
    assert row.right.value == "no draws" and row.right.where is None
    assert "random-torch" not in found  # torch's generator: one side drawing is not a row (framework-specific)


def test_tensor_methods_and_init_functions_draw_from_torch(tmp_path: Path):
    left = write(tmp_path, "left.py", """\
        import torch
        from torch import nn


        def init(module):
            module.weight.data.normal_(mean=0.0, std=0.02)
            nn.init.zeros_(module.bias)


        torch.manual_seed(1234)
    """)
    right = write(tmp_path, "right.py", """\
        from torch import nn


        def init(module):
            nn.init.trunc_normal_(module.weight, std=0.02)
    """)
    row = by_key(diff_paths(str(left), str(right)))["random-torch"]
    assert row.left.where.line == line_of(left, ".normal_(")
    assert row.right.where.line == line_of(right, "trunc_normal_")
    assert (row.left.value, row.right.value) == ("draws, seeded", "draws, not seeded")
    zeros_only = write(tmp_path, "zeros.py", "from torch import nn\n\n\ndef init(m):\n    nn.init.zeros_(m.bias)\n")
    assert "torch" not in inventory(read_model(str(zeros_only))).draws


def test_mindspore_set_seed_seeds_its_random_operators(tmp_path: Path):
    seeded = write(tmp_path, "seeded.py", """\
        import mindspore as ms
        from mindspore import ops

        ms.set_seed(1)
        noise = ops.standard_normal((2, 3))
    """)
    unseeded = write(tmp_path, "unseeded.py", "from mindspore import ops\n\nnoise = ops.standard_normal((2, 3))\n")
    row = by_key(diff_paths(str(seeded), str(unseeded)))["random-mindspore"]
    assert row.right.where.line == line_of(unseeded, "standard_normal")
