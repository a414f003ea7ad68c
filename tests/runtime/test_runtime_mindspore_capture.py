"""capture() on MindSpore: names, state, inference mode, optimizer normalisation, rollback, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from acclint.runtime import FingerprintError, NonFiniteLossError, capture, compare, transfer_weights


def all_values(setup):
    tensors = list(setup.model.parameters_and_names()) + list(setup.optimizer.parameters_and_names())
    return {f"{i}:{name}": p.asnumpy().copy() for i, (name, p) in enumerate(tensors)}


def test_records_torch_names_native_names_and_state(make_ms):
    setup = make_ms()
    fp = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)
    assert fp.framework == "mindspore" and fp.device == "cpu"
    by_name = {p.name: p for p in fp.params}
    assert by_name["ln.weight"].native_name == "ln.gamma" and by_name["ln.bias"].native_name == "ln.beta"
    assert by_name["bn.weight"].native_name == "bn.gamma" and by_name["bn.weight"].module == "BatchNorm1d"
    assert {(s.name, s.native_name) for s in fp.state} == {
        ("bn.running_mean", "bn.moving_mean"), ("bn.running_var", "bn.moving_variance"),
    }
    assert all(p.trainable for p in fp.params) and not any(s.trainable for s in fp.state)
    assert fp.env["versions"]["mindspore"]
    assert fp.env["effective"]["deterministic"] is False and fp.env["settings"]["context.deterministic"] == "OFF"


def test_cells_start_in_inference_mode(make_ms):
    setup = make_ms(train=False)
    assert capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch).training is False
    setup.model.set_train()
    assert capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch).training is True


def test_optimizer_normalisation(make_ms, ms):
    adam = make_ms(lr=0.01, weight_decay=0.0)
    record = capture(adam.model, adam.optimizer, adam.loss_fn, adam.batch).optimizer
    assert record.type == "adam" and len(record.groups) == 1
    hparams = record.groups[0].hparams
    assert hparams["lr"] == pytest.approx(0.01, rel=1e-7) and hparams["lr"] != 0.01  # stored as float32
    assert hparams["adam-eps"] == pytest.approx(1e-8) and hparams["adam-beta2"] == pytest.approx(0.999)

    awd = make_ms(optimizer="adamweightdecay")
    record = capture(awd.model, awd.optimizer, awd.loss_fn, awd.batch).optimizer
    assert record.type == "adamw-no-bias-correction"
    assert record.groups[0].hparams["adam-eps"] == pytest.approx(1e-6)

    momentum = make_ms(optimizer="momentum", lr=0.1)
    record = capture(momentum.model, momentum.optimizer, momentum.loss_fn, momentum.batch).optimizer
    assert record.type == "sgd" and record.groups[0].hparams["momentum"] == pytest.approx(0.9)

    setup = make_ms()
    experimental = ms.experimental.optim.AdamW(setup.model.trainable_params(), lr=1e-3)
    record = capture(setup.model, experimental, setup.loss_fn, setup.batch).optimizer
    assert record.type == "adamw" and record.groups[0].hparams["weight-decay"] == pytest.approx(0.01)


def test_parameter_groups_from_per_parameter_settings(make_ms):
    setup = make_ms(groups=True, weight_decay=0.05)
    record = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch).optimizer
    decay, no_decay = record.groups
    assert decay.params == ["fc1.weight", "fc2.weight", "head.weight"]
    assert decay.hparams["weight-decay"] == pytest.approx(0.05) and no_decay.hparams["weight-decay"] == 0.0
    assert "ln.weight" in no_decay.params  # common names, not gamma


def test_rollback_restores_weights_moving_stats_and_optimizer_state(make_ms):
    setup = make_ms()
    before = all_values(setup)
    fp = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)
    after = all_values(setup)
    assert before.keys() == after.keys()
    for key in before:
        np.testing.assert_array_equal(after[key], before[key], err_msg=key)
    assert fp.step.step_kept is False
    assert fp.step.loss_after_step < fp.step.loss
    # A second capture sees exactly the same starting point.
    again = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)
    assert again.step.loss == fp.step.loss and again.step.grad_norms == fp.step.grad_norms


def test_keep_step_keeps_one_update(make_ms, ms):
    setup = make_ms(optimizer="momentum", lr=0.1)
    reference = make_ms(optimizer="momentum", lr=0.1)
    transfer_weights(setup.model, reference.model)
    # Reference: one plain MindSpore training step, as in MindSpore's own tutorials.
    grad_fn = ms.value_and_grad(
        lambda: reference.loss_fn(reference.model, reference.batch), None, reference.optimizer.parameters
    )
    _, grads = grad_fn()
    reference.optimizer(grads)

    fp = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch, keep_step=True)
    assert fp.step.step_kept is True
    # Weights moved once and moving statistics updated once (the evaluation forward leaves no trace).
    for (name, kept), (_, expected) in zip(setup.model.parameters_and_names(), reference.model.parameters_and_names()):
        np.testing.assert_allclose(kept.asnumpy(), expected.asnumpy(), rtol=1e-6, atol=1e-8, err_msg=name)
    assert int(setup.optimizer.global_step.asnumpy()[0]) == 1


def test_non_scalar_loss(make_ms, ms):
    setup = make_ms()
    with pytest.raises(FingerprintError, match=r"scalar loss, got a tensor of shape \[32, 4\]"):
        capture(setup.model, setup.optimizer, lambda m, b: ms.ops.square(m(b[0]) - b[1]), setup.batch)


def test_nan_loss(make_ms):
    setup = make_ms()
    before = all_values(setup)
    with pytest.raises(NonFiniteLossError, match="step-0 loss is NaN"):
        capture(setup.model, setup.optimizer, lambda m, b: setup.loss_fn(m, b) * float("nan"), setup.batch)
    for key, value in all_values(setup).items():
        np.testing.assert_array_equal(value, before[key], err_msg=key)


def test_torch_optimizer_with_a_mindspore_model(make_ms, torch):
    setup = make_ms()
    torch_optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(FingerprintError, match="needs a mindspore optimizer"):
        capture(setup.model, torch_optimizer, setup.loss_fn, setup.batch)


def test_optimizer_of_another_cell(make_ms):
    setup = make_ms()
    other = make_ms()
    with pytest.raises(FingerprintError, match="not in the model"):
        capture(setup.model, other.optimizer, setup.loss_fn, setup.batch)


def test_identical_mindspore_setups_compare_clean(make_ms):
    setup = make_ms()
    first = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)
    second = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)
    result = compare(first, second)
    assert result.ok and set(result.skipped) == {"steps"}, result.verdict()


def test_weights_are_written_in_place_so_the_optimizer_keeps_working(make_ms, build_torch_net):
    # Parameter.set_data would swap the storage under an optimizer that has already run, and its
    # later steps would silently update the old storage: rollback and transfer must write in place.
    setup = make_ms()
    capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)
    transfer_weights(build_torch_net(), setup.model)
    fingerprint = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)
    assert min(fingerprint.step.update_norms.values()) > 1e-4
    assert fingerprint.step.loss_after_step < fingerprint.step.loss
