"""linter.frameworks: the tensor framework a file is written against, and which rules judge it."""

from __future__ import annotations

import textwrap

import pytest

from acclint.linter.analyze import analyze_file
from acclint.linter.frameworks import applies, file_frameworks


def frameworks_of(tmp_path, source):
    path = tmp_path / "module.py"
    path.write_text(textwrap.dedent(source))
    return file_frameworks(analyze_file(str(path), "module.py", []).facts)


@pytest.mark.parametrize("source, expected", [
    ("import torch\n", {"torch"}),
    ("import torch_npu\nfrom torch import nn\n", {"torch"}),
    ("from mindspore import nn, ops\n", {"mindspore"}),
    ("import mindspore as ms\nimport torch\n", {"mindspore", "torch"}),  # a conversion script
    ("import numpy as np\n", set()),  # numpy arrays have no device semantics to judge
    ("def helper(x):\n    return x.view(-1)\n", set()),
])
def test_frameworks_come_from_imports(tmp_path, source, expected):
    assert frameworks_of(tmp_path, source) == expected


class _TorchRule:
    tensor_framework = "torch"


class _AnyRule:
    tensor_framework = None


def test_a_torch_rule_skips_only_files_written_against_another_framework_alone():
    assert applies(_TorchRule(), frozenset({"torch"}))
    assert applies(_TorchRule(), frozenset({"torch", "mindspore"}))
    assert applies(_TorchRule(), frozenset())  # a helper that imports nothing: judged as before
    assert not applies(_TorchRule(), frozenset({"mindspore"}))
    assert applies(_AnyRule(), frozenset({"mindspore"}))
