"""PyTorch vs MindSpore: the same small network, weights moved by transfer_weights."""

from __future__ import annotations

import numpy as np
import pytest

from acclint.runtime import FingerprintError, capture, compare, transfer_weights


def run(setup):
    return capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)


def paired(make_torch, make_ms, *, torch_options=None, ms_options=None, ms_model=None):
    """A torch setup and a MindSpore setup starting from the torch weights."""
    torch_side = make_torch(**(torch_options or {}))
    ms_side = make_ms(**(ms_options or {}), **({"model": ms_model} if ms_model is not None else {}))
    transfer_weights(torch_side.model, ms_side.model)
    return torch_side, ms_side


@pytest.mark.parametrize(
    ("torch_options", "ms_options"),
    [
        ({"optimizer": "adam", "lr": 0.01}, {"optimizer": "adam", "lr": 0.01}),  # lr 0.01 is 0.0099999998 in float32
        ({"optimizer": "sgd", "lr": 0.05}, {"optimizer": "momentum", "lr": 0.05}),
        ({"optimizer": "adam", "groups": True, "weight_decay": 0.01}, {"optimizer": "adam", "groups": True, "weight_decay": 0.01}),
    ],
    ids=["adam", "sgd-momentum", "adam-groups"],
)
def test_same_network_with_matched_settings_compares_clean(make_torch, make_ms, torch_options, ms_options):
    torch_side, ms_side = paired(make_torch, make_ms, torch_options=torch_options, ms_options=ms_options)
    left, right = run(torch_side), run(ms_side)
    result = compare(left, right)
    assert result.ok, result.verdict()
    assert set(result.skipped) == {"steps"}  # one step captured: later steps not compared
    # The comparison really looked at the numbers: same loss to float32 noise, non-trivial gradients.
    assert right.step.loss == pytest.approx(left.step.loss, rel=1e-6)
    assert left.step.grad_norm > 0.1
    assert {p.name for p in right.params} == {p.name for p in left.params}
    assert {s.name for s in right.state} == {"bn.running_mean", "bn.running_var"}


def test_transfer_from_mindspore_to_torch(make_torch, make_ms, ms):
    # Seeded: with some random inits a few bn.bias gradient elements come near Adam's eps, where
    # MindSpore's eps placement (after bias correction) moves that update norm past update_rtol.
    ms.set_seed(0)
    ms_side = make_ms()
    torch_side = make_torch(seed=7)
    transfer_weights(ms_side.model, torch_side.model)
    result = compare(run(ms_side), run(torch_side))
    assert result.ok, result.verdict()


def test_without_transfer_the_initial_weights_differ(make_torch, make_ms):
    result = compare(run(make_torch()), run(make_ms()))
    assert result.cause_kinds() == {"init-weights"}, result.verdict()


def test_mindspore_cell_left_in_inference_mode(make_torch, make_ms):
    torch_side, ms_side = paired(make_torch, make_ms, ms_options={"train": False})
    result = compare(run(torch_side), run(ms_side))
    assert [(m.kind, m.left, m.right) for m in result.causes] == [("train-mode", True, False)], result.verdict()
    assert "set_train()" in result.causes[0].message
    # BatchNorm normalises with its running statistics in inference mode: the forward follows from it.
    assert {m.consequence_of for m in result.mismatches if not m.is_cause} <= {"train-mode", "activation"}


def test_adamweightdecay_is_not_torch_adamw(make_torch, make_ms):
    # Hyperparameters matched on purpose: only the algorithm (no bias correction) differs.
    torch_side, ms_side = paired(
        make_torch, make_ms,
        torch_options={"optimizer": "adamw", "weight_decay": 0.01},
        ms_options={"optimizer": "adamweightdecay", "weight_decay": 0.01, "eps": 1e-8},
    )
    result = compare(run(torch_side), run(ms_side))
    assert [(m.kind, m.left, m.right) for m in result.causes] == [
        ("optimizer-type", "adamw", "adamw-no-bias-correction")
    ], result.verdict()
    assert "bias correction" in result.causes[0].message
    # The forward, the loss and the gradients match; the update differs, as a consequence.
    assert {m.stage for m in result.mismatches if not m.is_cause} == {"update"}, result.verdict()


def test_adamweightdecay_defaults_also_differ_in_eps_and_weight_decay(make_torch, make_ms):
    torch_side, ms_side = paired(make_torch, make_ms, torch_options={"optimizer": "adamw", "weight_decay": 0.01},
                                 ms_options={"optimizer": "adamweightdecay"})
    result = compare(run(torch_side), run(ms_side))
    found = {(m.kind, m.name) for m in result.causes}
    assert found == {("optimizer-type", "type"), ("optimizer-hparam", "adam-eps"), ("optimizer-hparam", "weight-decay")}
    eps = next(m for m in result.causes if m.name == "adam-eps")
    assert eps.left == pytest.approx(1e-8) and eps.right == pytest.approx(1e-6, rel=1e-6)


def test_frozen_on_the_mindspore_side_only(make_torch, make_ms):
    torch_side, ms_side = paired(make_torch, make_ms, ms_options={"freeze": ("fc1.weight",)})
    result = compare(run(torch_side), run(ms_side))
    assert [(m.kind, m.name) for m in result.causes] == [("frozen", "fc1.weight")], result.verdict()


def test_changed_width_across_frameworks(make_torch, make_ms, build_ms_net):
    torch_side, ms_side = make_torch(), make_ms(model=build_ms_net(width=24))
    result = compare(run(torch_side), run(ms_side))
    assert result.cause_kinds() == {"param-count", "param-shape"}, result.verdict()


def test_transfer_refuses_unmatched_names_and_copies_nothing(build_torch_net, build_ms_net):
    source = build_torch_net(extra_layer=True)
    destination = build_ms_net()
    before = destination.fc1.weight.asnumpy().copy()
    with pytest.raises(FingerprintError) as raised:
        transfer_weights(source, destination)
    message = str(raised.value)
    assert "extra.weight (torch) has no partner in the destination" in message
    assert "nothing was copied" in message
    np.testing.assert_array_equal(destination.fc1.weight.asnumpy(), before)


def test_transfer_refuses_shape_mismatch(build_torch_net, build_ms_net):
    with pytest.raises(FingerprintError, match=r"fc1.weight: shape \[16, 8\] in the source, \[24, 8\]"):
        transfer_weights(build_torch_net(), build_ms_net(width=24))


def test_transfer_with_a_user_mapping_file(build_torch_net, ms, tmp_path):
    nn = ms.nn

    class Renamed(nn.Cell):  # a port where the author renamed layers
        def __init__(self) -> None:
            super().__init__()
            self.proj_in = nn.Dense(8, 16)
            self.norm = nn.LayerNorm((16,), epsilon=1e-5)
            self.body = nn.Dense(16, 16)
            self.bn = nn.BatchNorm1d(16, momentum=0.9)
            self.out = nn.Dense(16, 4)

    source = build_torch_net()
    with pytest.raises(FingerprintError, match="did you mean"):
        transfer_weights(source, Renamed())
    mapping = tmp_path / "map.yaml"
    mapping.write_text("prefixes:\n  proj_in.: fc1.\n  norm.: ln.\n  body.: fc2.\n  out.: head.\n")
    destination = Renamed()
    report = transfer_weights(source, destination, mapping=str(mapping))
    assert ("ln.weight", "norm.gamma") in report.pairs and ("bn.running_var", "bn.moving_variance") in report.pairs
    np.testing.assert_array_equal(destination.out.weight.asnumpy(), source.head.weight.detach().numpy())


def test_embedding_table_maps_to_weight(torch, ms):
    source = torch.nn.Embedding(10, 4)
    destination = ms.nn.Embedding(10, 4)
    report = transfer_weights(source, destination)
    assert report.pairs == [("weight", "embedding_table")]
    np.testing.assert_array_equal(destination.embedding_table.asnumpy(), source.weight.detach().numpy())


def test_compare_with_a_mapping_for_renamed_layers(make_torch, make_ms, ms, tmp_path):
    nn = ms.nn

    class Renamed(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.CellList([nn.Dense(8, 16), nn.LayerNorm((16,), epsilon=1e-5), nn.Dense(16, 16),
                                       nn.BatchNorm1d(16, momentum=0.9), nn.Dense(16, 4)])

        def construct(self, x):
            h = ms.ops.relu(self.layers[1](self.layers[0](x)))
            h = ms.ops.relu(self.layers[3](self.layers[2](h)))
            return self.layers[4](h)

    mapping = {"prefixes": {"layers.0.": "fc1.", "layers.1.": "ln.", "layers.2.": "fc2.", "layers.3.": "bn.",
                            "layers.4.": "head."}}
    torch_side = make_torch()
    ms_side = make_ms(model=Renamed())
    transfer_weights(torch_side.model, ms_side.model, mapping=mapping)
    left, right = run(torch_side), run(ms_side)
    unmapped = compare(left, right)
    assert unmapped.cause_kinds() == {"param-missing"}, unmapped.verdict()
    assert compare(left, right, mapping=mapping).ok
