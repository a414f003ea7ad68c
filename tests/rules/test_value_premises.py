"""The `value` and `material` premises MindSpore rules prove by following values (parameter groups,
labels and reductions, keep probabilities) and by reading what the installed library already does:
each finding states the premise with its evidence, and a default that certainly never applies is
not reported."""

from __future__ import annotations

import json
import textwrap

import pytest

from click.testing import CliRunner

from acclint.cli import main

TRAIN_STEP = """
step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
step.set_train()
for _ in range(2):
    step(ops.ones((8, 4)), ops.ones((8, 2)))
"""


def with_step(body: str) -> str:
    """A MindSpore program whose `net`, `loss_fn` and `opt` a TrainOneStepCell trains."""
    return textwrap.dedent(body) + TRAIN_STEP


@pytest.fixture
def here(tmp_path, monkeypatch):
    """The project folder, made the working directory so that findings name files as `train.py`."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def scan(tmp_path, files: dict, *codes: str) -> dict:
    """(rule, line) -> finding of a default run (no --preview) over `files`."""
    for path, source in files.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(source).lstrip("\n"))
    result = CliRunner().invoke(main, ["scan", ".", "--format", "json", "--no-cache", "--exit-zero",
                                       "--select", ",".join(codes)])
    assert result.exit_code == 0, result.output
    return {(f["rule"], f["line"]): f for f in json.loads(result.output)["findings"]}


def premise(finding: dict, name: str) -> dict:
    return next(p for p in finding["premises"] if p["premise"] == name)


def test_sgd_default_lr_states_which_groups_it_trains(here):
    found = scan(here, {"train.py": with_step("""
        from mindspore import nn, ops

        net = nn.Dense(4, 2)
        loss_fn = nn.MSELoss()
        groups = [{"params": net.trainable_params(), "lr": 0.01}, {"params": []}]
        opt = nn.SGD(groups)
        plain = nn.SGD(net.trainable_params())
        built = nn.SGD(build_groups(net))
    """)}, "ACL709")
    grouped, ungrouped, unresolved = found[("ACL709", 6)], found[("ACL709", 7)], found[("ACL709", 8)]
    assert premise(grouped, "value") == {
        "premise": "value", "proven": True,
        "evidence": "group 2 of `groups` (train.py:5) carries no `lr`: the default applies"}
    assert grouped["severity"] == "warning" and grouped["proven"]
    assert premise(ungrouped, "value")["evidence"].startswith("the parameters (`net.trainable_params()`) are not grouped")
    assert not premise(unresolved, "value")["proven"]
    assert "`build_groups(...)` at train.py:8 is not resolved" in premise(unresolved, "value")["evidence"]
    assert unresolved["severity"] == "info" and "Not proven: value:" in unresolved["message"]


def test_every_group_with_its_own_lr_and_weight_decay_is_not_reported(here):
    found = scan(here, {"train.py": with_step("""
        from mindspore import nn, ops

        net = nn.Dense(4, 2)
        loss_fn = nn.MSELoss()
        groups = [{"params": net.trainable_params(), "lr": 0.01, "weight_decay": 0.01},
                  {"order_params": net.trainable_params()}]
        opt = nn.SGD(groups)
        adam = nn.AdamWeightDecay(groups, learning_rate=0.01, eps=1e-8)
    """)}, "ACL708", "ACL709")
    assert found == {}


ONE_HOT_DATASET = """
    import mindspore.dataset as ds
    import mindspore.dataset.transforms as transforms
    import numpy as np


    def create_dataset(num_classes):
        data = ds.NumpySlicesDataset({"x": np.ones((8, 4), np.float32), "y": np.zeros(8, np.int32)}, shuffle=False)
        data = data.map(operations=transforms.OneHot(num_classes), input_columns="y")
        return data.batch(4)
"""


def softmax_ce_program(loss: str) -> str:
    return f"""
        from mindspore import nn

        from dataset import create_dataset

        net = nn.Dense(4, 3)
        loss_fn = {loss}
        opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
        step.set_train()
        for x, y in create_dataset(3):
            step(x, y)
    """


def test_labels_one_hot_encoded_by_the_dataset_disprove_the_sparse_default(here):
    found = scan(here, {"dataset.py": ONE_HOT_DATASET,
                        "train.py": softmax_ce_program('nn.SoftmaxCrossEntropyWithLogits(reduction="mean")')}, "ACL707")
    finding = found[("ACL707", 6)]
    assert premise(finding, "value") == {
        "premise": "value", "proven": False,
        "evidence": "labels one-hot encoded by `transforms.OneHot` at dataset.py:8: sparse=False is what they need"}
    assert finding["severity"] == "info" and not finding["proven"]


def test_an_unreduced_loss_stays_a_warning_with_one_hot_labels(here):
    found = scan(here, {"dataset.py": ONE_HOT_DATASET,
                        "train.py": softmax_ce_program("nn.SoftmaxCrossEntropyWithLogits()")}, "ACL707")
    finding = found[("ACL707", 6)]
    assert "no `sparse`, `reduction`" in finding["message"]
    assert premise(finding, "value") == {
        "premise": "value", "proven": True,
        "evidence": "its loss Cell does not reduce the loss (in the program started by train.py)"}
    assert finding["severity"] == "warning"


HEAD = """
    from mindspore import nn, ops


    class Head(nn.Cell):
        def __init__(self, dropout_rate):
            super().__init__()
            self.dense = nn.Dense(4, 2)
            self.drop = nn.Dropout(dropout_rate)

        def construct(self, x):
            return self.drop(self.dense(x))


    net = Head({passed})
    loss_fn = nn.MSELoss()
    opt = nn.SGD(net.trainable_params(), learning_rate=0.01)
"""


@pytest.mark.parametrize("passed, name, proven, evidence", [
    ("dropout_rate=0.1", "value", True, "`dropout_rate=0.1` passed at train.py:14: keep_prob=0.1"),
    ("dropout_rate=0.1", "material", True, "keeps 10% of activations where p=0.1 would keep 90%"),
    ("1 - 0.1", "value", False, "`1 - ...` at train.py:14: converted to a keep probability by the code"),
    ("0.5", "material", False, "keep_prob=0.5 keeps what p=0.5 drops: the same dropout either way"),
])
def test_keep_prob_a_caller_passes_states_value_and_material(here, passed, name, proven, evidence):
    finding = scan(here, {"train.py": with_step(HEAD.format(passed=passed))}, "ACL704")[("ACL704", 8)]
    assert premise(finding, name) == {"premise": name, "proven": proven, "evidence": evidence}
    assert finding["severity"] == ("warning" if finding["proven"] else "info")


def test_a_literal_keep_prob_of_one_half_is_not_reported(here):
    literal = HEAD.format(passed="0.1").replace("nn.Dropout(dropout_rate)", "nn.Dropout(0.5)")
    assert scan(here, {"train.py": with_step(literal)}, "ACL704") == {}


PINNED = """
    import mindspore as ms
    from mindspore import nn, ops

    if __name__ == "__main__":
        {pin}
        net = nn.Dense(4, 2)
        loss_fn = nn.MSELoss()
        opt = nn.SGD(net.trainable_params(), learning_rate=0.01)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
        step.set_train()
        step(ops.ones((8, 4)), ops.ones((8, 2)))
"""


@pytest.mark.parametrize("pin, reported", [
    ('ms.set_context(device_target="CPU")', False),
    ('ms.set_device("GPU")', False),
    ('dev = "GPU"; ms.set_context(device_target=dev)', False),
    ('ms.set_context(device_target="Ascend")', True),
    ("ms.set_context(device_target=device)", True),  # not a literal: the run may be on Ascend
])
def test_mindspore_determinism_is_asked_only_of_programs_that_may_run_on_ascend(here, pin, reported):
    found = scan(here, {"train.py": PINNED.format(pin=pin)}, "ACL206")
    assert bool(found) is reported


NO_SET_TRAIN = """
    import mindspore as ms
    from mindspore import nn

    net = nn.SequentialCell({layers})
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    for data, label in [(ms.ops.ones((4, 8)), ms.ops.ones((4, 8)))]:
        step(data, label)
"""


def test_set_train_missing_matters_where_a_layer_depends_on_the_mode(here):
    found = scan(here, {"train.py": NO_SET_TRAIN.format(layers="nn.Dense(8, 8), nn.Dropout(p=0.1)")}, "ACL710")
    finding = found[("ACL710", 6)]
    assert premise(finding, "material") == {
        "premise": "material", "proven": True,
        "evidence": "`nn.Dropout` at train.py:4 computes differently in inference mode"}
    assert finding["severity"] == "warning"


def test_set_train_missing_without_dropout_or_batchnorm_is_advice(here):
    finding = scan(here, {"train.py": NO_SET_TRAIN.format(layers="nn.Dense(8, 8), nn.ReLU()")}, "ACL710")[("ACL710", 6)]
    assert not premise(finding, "material")["proven"]
    assert premise(finding, "material")["evidence"].startswith("no Dropout or BatchNorm is built in the program's files")
    assert finding["severity"] == "info"


EMBEDDING_MODEL = """
    from mindspore import nn


    class Classifier(nn.Cell):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(100, 8)
            self.head = nn.Dense(8, 2)

        def construct(self, ids):
            return self.head(self.emb(ids).mean(1))
"""

EMBEDDING_TRAIN = """
    import argparse

    import mindspore as ms
    from mindspore import nn, ops

    from model import Classifier

    parser = argparse.ArgumentParser()
    parser.add_argument("--pretrained", default="")
    args = parser.parse_args()
    net = Classifier()
    {load}
    opt = nn.Adam(net.trainable_params(), learning_rate=1e-3)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    step.set_train()
    step(ops.ones((4, 6), ms.int32), ops.ones((4, 2)))
"""


@pytest.mark.parametrize("load, proven, evidence", [
    ("pass", True, "nothing in the program started by train.py loads a checkpoint or re-initialises `embedding_table`"),
    ("ms.load_param_into_net(net, ms.load_checkpoint(args.pretrained))", False,
     "a checkpoint loaded by `ms.load_param_into_net` at train.py:12 replaces the initial values before training"),
])
def test_embedding_init_matters_unless_a_checkpoint_replaces_it(here, load, proven, evidence):
    found = scan(here, {"model.py": EMBEDDING_MODEL, "train.py": EMBEDDING_TRAIN.format(load=load)}, "ACL705")
    finding = found[("ACL705", 7)]
    assert premise(finding, "material") == {"premise": "material", "proven": proven, "evidence": evidence}
    assert finding["severity"] == ("warning" if proven else "info")


def test_embedding_init_replaced_only_under_a_flag_is_unproven(here):
    load = "if args.pretrained:\n        ms.load_param_into_net(net, ms.load_checkpoint(args.pretrained))"
    found = scan(here, {"model.py": EMBEDDING_MODEL, "train.py": EMBEDDING_TRAIN.format(load=load)}, "ACL705")
    evidence = premise(found[("ACL705", 7)], "material")["evidence"]
    assert evidence.startswith("a checkpoint loaded by `ms.load_param_into_net` at train.py:13 under `if args.pretrained`")


def test_embedding_of_a_model_with_an_initializer_range_is_unproven(here):
    """A BERT-like model initialises embeddings with N(0, initializer_range) in its PyTorch reference: torch's
    N(0, 1) is not the value a port must match."""
    model = EMBEDDING_MODEL.replace("def __init__(self):", "def __init__(self, initializer_range=0.02):")
    found = scan(here, {"model.py": model, "train.py": EMBEDDING_TRAIN.format(load="pass")}, "ACL705")
    finding = found[("ACL705", 7)]
    assert premise(finding, "material") == {
        "premise": "material", "proven": False,
        "evidence": "the model carries `initializer_range` (line 5): its PyTorch reference initialises embeddings "
                    "with N(0, initializer_range), not torch's N(0, 1)"}
    assert finding["severity"] == "info"


NUMPY_INIT_MODEL = """
    import numpy as np
    import mindspore as ms
    from mindspore import nn


    def kaiming_normal(shape):
        return ms.Tensor(np.random.normal(0, 0.1, size=shape).astype(np.float32))


    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.dense = nn.Dense(4, 2, weight_init=kaiming_normal((2, 4)))

        def construct(self, x):
            return self.dense(x)
"""

NUMPY_INIT_TRAIN = """
    import mindspore as ms
    from mindspore import nn, ops

    from model import Net

    if __name__ == "__main__":
        net = Net()
        {load}
        opt = nn.SGD(net.trainable_params(), learning_rate=0.01)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
        step.set_train()
        step(ops.ones((8, 4)), ops.ones((8, 2)))
"""


def test_numpy_draws_that_only_initialise_weights_a_checkpoint_replaces_are_not_material(here):
    load = 'ms.load_param_into_net(net, ms.load_checkpoint("pretrained.ckpt"))'
    found = scan(here, {"model.py": NUMPY_INIT_MODEL, "train.py": NUMPY_INIT_TRAIN.format(load=load)}, "ACL103")
    finding = found[("ACL103", 6)]
    assert premise(finding, "material") == {
        "premise": "material", "proven": False,
        "evidence": "`np.random.normal()` at model.py:7 initialises weights of `Net()` (train.py:7), and the "
                    "checkpoint loaded by `ms.load_param_into_net` at train.py:8 replaces them before training"}
    assert finding["severity"] == "info"


def test_numpy_draws_for_weights_trained_from_scratch_stay_a_warning(here):
    found = scan(here, {"model.py": NUMPY_INIT_MODEL, "train.py": NUMPY_INIT_TRAIN.format(load="pass")}, "ACL103")
    finding = found[("ACL103", 6)]
    assert "material" not in {p["premise"] for p in finding["premises"]}
    assert finding["severity"] == "warning"


def test_groups_a_local_function_returns_are_followed(here):
    found = scan(here, {"train.py": with_step("""
        from mindspore import nn, ops


        def init_group_params(net, lr):
            group_params = [{"params": net.trainable_params(), "lr": lr}, {"order_params": net.trainable_params()}]
            return group_params


        net = nn.Dense(4, 2)
        loss_fn = nn.MSELoss()
        group_params = init_group_params(net, 0.01)
        opt = nn.SGD(group_params)
        adam = nn.AdamWeightDecay(group_params, learning_rate=0.01, eps=1e-8)
    """)}, "ACL708", "ACL709")
    assert list(found) == [("ACL708", 13)]
    assert premise(found[("ACL708", 13)], "value")["evidence"] == (
        "group 1 of `group_params` (train.py:5) carries no `weight_decay`: the default applies")
