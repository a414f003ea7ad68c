"""Cross-framework names: the built-in table and the user mapping file (no framework needed)."""

from __future__ import annotations

import pytest

from acclint.runtime import FingerprintError, load_mapping
from acclint.runtime_checks.model.names import builtin_common_name

BATCHNORM_MRO = ["BatchNorm2d", "_BatchNorm", "Cell"]


@pytest.mark.parametrize(
    ("native", "classes", "common"),
    [
        ("bn.gamma", BATCHNORM_MRO, "bn.weight"),
        ("bn.beta", BATCHNORM_MRO, "bn.bias"),
        ("bn.moving_mean", BATCHNORM_MRO, "bn.running_mean"),
        ("bn.moving_variance", BATCHNORM_MRO, "bn.running_var"),
        ("blocks.0.norm.gamma", ["LayerNorm", "Cell"], "blocks.0.norm.weight"),
        ("embed.embedding_table", ["Embedding", "Cell"], "embed.weight"),
        ("fc.weight", ["Dense", "Cell"], "fc.weight"),
        # A user's own parameter called gamma (layer scale) is not a norm weight: left alone.
        ("block.gamma", ["LayerScale", "Cell"], "block.gamma"),
    ],
)
def test_builtin_mindspore_names(native, classes, common):
    assert builtin_common_name("mindspore", native, classes) == common


def test_torch_names_are_the_common_spelling():
    assert builtin_common_name("torch", "bn.weight", ["BatchNorm1d", "_BatchNorm"]) == "bn.weight"


def test_mapping_file_sections(tmp_path):
    path = tmp_path / "mapping.yaml"
    path.write_text(
        "names:\n  head.kernel: head.weight\n"
        "prefixes:\n  network.backbone.: backbone.\n  network.: ''\n"
        "cells:\n  RMSNormMS:\n    scale: weight\n"
        "ignore:\n  - '*.position_ids'\n"
    )
    mapping = load_mapping(str(path))
    assert mapping.common_name("head.kernel", "Dense", "head.kernel") == "head.weight"
    assert mapping.common_name("network.backbone.fc.weight", "Dense", "network.backbone.fc.weight") == "backbone.fc.weight"
    assert mapping.common_name("network.fc.weight", "Dense", "network.fc.weight") == "fc.weight"  # longest prefix first
    assert mapping.common_name("norm.scale", "RMSNormMS", "norm.scale") == "norm.weight"
    assert mapping.common_name("norm.scale", "OtherNorm", "norm.scale") == "norm.scale"
    assert mapping.ignored("embed.position_ids") and not mapping.ignored("embed.weight")


def test_flat_mapping_file_is_read_as_names(tmp_path):
    path = tmp_path / "flat.yaml"
    path.write_text("a.w: a.weight\n")
    assert load_mapping(path).names == {"a.w": "a.weight"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("- a\n- b\n", "expected a YAML mapping"),
        ("names: [a, b]\n", "'names' must be a mapping"),
        ("names:\n  a: 1\n", "must be two strings"),
        ("cells:\n  X: y\n", "'cells' must map a class name"),
        ("names: {}\nrenames: {}\n", "unknown section"),
        ("names: {a: b\n", "not valid YAML"),
    ],
)
def test_bad_mapping_files(tmp_path, content, message):
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(FingerprintError, match=message):
        load_mapping(path)


def test_missing_mapping_file(tmp_path):
    with pytest.raises(FingerprintError, match="no such file"):
        load_mapping(tmp_path / "nope.yaml")
