"""linter.roles: which code is test code, so that no rule reports inside it."""

from __future__ import annotations

import json
import textwrap

import pytest

from acclint.linter.analyze import analyze_file
from acclint.linter import roles


def facts_of(tmp_path, source, name="module.py"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return analyze_file(str(path), name, []).facts


def test_unittest_classes_and_their_subclasses_in_the_file(tmp_path):
    facts = facts_of(tmp_path, """
        import unittest


        class Base(unittest.TestCase):
            pass


        class Derived(Base):
            def setUp(self):
                pass


        class Model:
            def forward(self):
                pass
    """)
    assert roles.test_scopes(facts) == {"Base", "Derived"}


def test_helper_test_case_classes_by_their_name(tmp_path):
    facts = facts_of(tmp_path, """
        from absl.testing import absltest
        from mylib.testing import DistributedTestCase


        class A(absltest.TestCase):
            pass


        class B(DistributedTestCase):
            pass
    """)
    assert roles.test_scopes(facts) == {"A", "B"}


def test_pytest_functions_only_in_files_pytest_collects(tmp_path):
    source = """
        def test_loss():
            pass


        class TestTrainer:
            def test_step(self):
                pass


        def train():
            pass
    """
    assert roles.test_scopes(facts_of(tmp_path, source, "test_train.py")) == {"test_loss", "TestTrainer"}
    # A training script may define a function called test_* (an evaluation pass): not pytest's.
    assert roles.test_scopes(facts_of(tmp_path, source, "train.py")) == set()


def test_fixtures_are_test_code_anywhere(tmp_path):
    facts = facts_of(tmp_path, """
        import pytest


        @pytest.fixture
        def model():
            pass
    """, "helpers.py")
    assert roles.test_scopes(facts) == {"model"}


def test_nodes_cover_nested_functions_and_nothing_outside(tmp_path):
    facts = facts_of(tmp_path, """
        import unittest
        import torch


        class T(unittest.TestCase):
            def setUp(self):
                files = sorted(["b", "a"])  # a plain local assignment and a listing inside test code
                def inner():
                    torch.use_deterministic_algorithms(False)
                inner()


        torch.use_deterministic_algorithms(False)
    """)
    nodes = roles.test_nodes(facts)
    inside = [c.node for c in facts.calls if c.scope.startswith("T.")]
    outside = [c.node for c in facts.calls if c.scope == "<module>"]
    assert inside and set(inside) <= nodes
    assert outside and not set(outside) & nodes


@pytest.mark.parametrize("path, role", [
    ("tests/test_training/test_loss.py", "test"),
    ("tests/st/shell_scripts/pretrain.sh", "test"),
    ("src/pkg/testing/_internal/common.py", "test"),
    ("pkg/test_utils.py", "test"),
    ("conftest.py", "test"),
    ("test/train_full_8p.sh", None),  # Ascend ModelZoo's launch scripts live in test/
    ("train.py", None),
    ("contest/train.py", None),
])
def test_path_roles(path, role):
    assert roles.path_role(path) == role


def test_setup_py_is_packaging(tmp_path):
    facts = facts_of(tmp_path, """
        import glob
        from setuptools import setup

        setup(name="pkg", package_data={"pkg": glob.glob("pkg/*.json")})
    """, "setup.py")
    assert roles.file_role(facts) == "packaging"
    assert roles.file_role(facts_of(tmp_path, "import torch\n", "train.py")) is None


NPU_TRAIN = """\
import torch


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.distributed.init_process_group(backend="hccl")
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2)).sum().backward()
    opt.step()
"""
NPU_LAUNCH = "#!/bin/bash\ntorchrun --nproc_per_node 8 {script}\n"


def _scan(root):
    from click.testing import CliRunner

    from acclint.cli import main

    result = CliRunner().invoke(main, ["scan", str(root), "--format", "json", "--no-cache", "--select", "ACL205"])
    return {(f["path"].replace("\\", "/").split(str(root.name) + "/")[-1], f["rule"])
            for f in json.loads(result.output)["findings"]}


def test_test_folders_are_not_reported_but_modelzoo_launch_folders_are(tmp_path):
    for folder in ("tests/st", "test"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "train.py").write_text(NPU_TRAIN)
        (tmp_path / folder / "run_8p.sh").write_text(NPU_LAUNCH.format(script="train.py"))
    assert _scan(tmp_path) == {("test/run_8p.sh", "ACL205")}


DEMO = """
    import torch
    import torch.multiprocessing as mp


    def worker(rank):
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(2)).sum().backward()
        optimizer.step()


    if __name__ == "__main__":
        mp.spawn(worker, nprocs=2)
"""


def test_a_demo_inside_a_frameworks_own_source_is_not_a_training_program(tmp_path):
    """A tensor framework's (or torch-compat layer's) bundled examples and benchmarks exercise the
    framework; the same script in a user's project is a training program."""
    from acclint.cli import main
    from click.testing import CliRunner

    for package in ("src/mindtorch", "src/mindtorch/distributed"):
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    framework_demo = tmp_path / "src/mindtorch/distributed/examples/demo.py"
    user_demo = tmp_path / "examples/demo.py"
    for path in (framework_demo, user_demo):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(DEMO))
    assert roles.enclosing_package(str(framework_demo.parent)) == "mindtorch"
    assert roles.enclosing_package(str(user_demo.parent)) is None
    result = CliRunner().invoke(main, ["scan", str(tmp_path), "--no-cache", "--format", "json", "--select", "ACL201"])
    paths = {f["path"] for f in json.loads(result.output)["findings"]}
    assert any(p.endswith("examples/demo.py") and "mindtorch" not in p for p in paths), paths
    assert not any("mindtorch" in p for p in paths), paths


KERNEL_BENCHMARK = """
import torch
import triton

from layers import FusedHead


def bench(mode):
    head = FusedHead(1024, 32000)
    x = torch.randn(8, 1024, requires_grad=True)
    y = head(x)
    if mode == "backward":
        return triton.testing.do_bench(lambda: y.sum().backward(retain_graph=True))
    return triton.testing.do_bench(lambda: head(x))


if __name__ == "__main__":
    print(bench("backward"))
"""

LAYERS = """
import torch


class FusedHead(torch.nn.Module):
    def __init__(self, hidden, vocab):
        super().__init__()
        self.proj = torch.nn.Linear(hidden, vocab)

    def forward(self, x):
        return self.proj(x)
"""


@pytest.mark.parametrize("timer", [
    "triton.testing.do_bench(lambda: y.sum().backward(retain_graph=True))",
    "start.elapsed_time(end) if y.sum().backward() is None else 0",
])
def test_a_program_that_times_gradients_without_an_optimizer_is_a_benchmark_not_training(tmp_path, timer):
    """Gradients of a model with no optimizer in a program that times itself are measured, not trained;
    an optimizer step in the same program makes it training again."""
    from acclint.cli import main
    from click.testing import CliRunner

    def acl201(source):
        (tmp_path / "bench.py").write_text(textwrap.dedent(source))
        (tmp_path / "layers.py").write_text(textwrap.dedent(LAYERS))
        result = CliRunner().invoke(main, ["scan", str(tmp_path), "--no-cache", "--format", "json",
                                           "--select", "ACL201"])
        return [f["path"] for f in json.loads(result.output)["findings"]]

    benchmark = KERNEL_BENCHMARK.replace("triton.testing.do_bench(lambda: y.sum().backward(retain_graph=True))",
                                         timer)
    if "elapsed_time" in timer:
        benchmark = benchmark.replace("    y = head(x)\n", "    y = head(x)\n    start = end = torch.cuda.Event()\n")
    assert acl201(benchmark) == []
    trained = benchmark.replace('    print(bench("backward"))',
                                '    print(bench("backward"))\n    torch.optim.SGD(FusedHead(4, 4).parameters()).step()')
    assert [path.endswith("bench.py") for path in acl201(trained)] == [True]
