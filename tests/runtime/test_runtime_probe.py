"""The manual probe: the user's own loop records step 0 and step 1."""

from __future__ import annotations

import pytest

from acclint.runtime import FingerprintError, NonFiniteLossError, Probe, capture, compare, transfer_weights


def torch_train_step(setup):
    """A user's loop body: zero, forward, backward, step (grads stay in .grad until the next step)."""
    setup.optimizer.zero_grad()
    loss = setup.loss_fn(setup.model, setup.batch)
    loss.backward()
    setup.optimizer.step()
    return loss


def ms_train_step(ms, setup):
    grad_fn = ms.value_and_grad(lambda: setup.loss_fn(setup.model, setup.batch), None, setup.optimizer.parameters)
    loss, grads = grad_fn()
    setup.optimizer(grads)
    return loss, grads


def torch_probe(setup):
    probe = Probe(setup.model, setup.optimizer)
    probe.record(0, torch_train_step(setup), batch=setup.batch)
    probe.record(1, torch_train_step(setup))
    return probe.fingerprint()


def test_torch_probe_records_what_capture_records(make_torch):
    probed = torch_probe(make_torch())
    captured_setup = make_torch()
    captured = capture(captured_setup.model, captured_setup.optimizer, captured_setup.loss_fn, captured_setup.batch)
    assert probed.source == "probe" and probed.step.after_step_batch == "next" and probed.step.step_kept is None
    assert probed.step.loss == captured.step.loss
    assert probed.step.grad_norms == pytest.approx(captured.step.grad_norms, rel=1e-6, abs=1e-9)
    assert probed.step.update_norms == pytest.approx(captured.step.update_norms, rel=1e-6, abs=1e-9)
    result = compare(probed, captured)
    assert result.ok, result.verdict()
    assert "different batches" in result.verdict()  # the step-1 loss is not the same quantity


def test_two_probes_compare_their_step1_losses(make_torch):
    assert compare(torch_probe(make_torch()), torch_probe(make_torch())).ok
    left = torch_probe(make_torch())
    right = torch_probe(make_torch(lr=1e-2))
    result = compare(left, right)
    assert result.cause_kinds() == {"optimizer-hparam"}, result.verdict()
    assert {m.consequence_of for m in result.mismatches if not m.is_cause} == {"optimizer-hparam"}


def test_mindspore_probe_with_the_grads_the_user_has(make_torch, make_ms, ms):
    torch_setup = make_torch()
    ms_setup = make_ms()
    transfer_weights(torch_setup.model, ms_setup.model)
    probe = Probe(ms_setup.model, ms_setup.optimizer)
    loss, grads = ms_train_step(ms, ms_setup)
    probe.record(0, loss, grads=grads, batch=ms_setup.batch)
    loss, _ = ms_train_step(ms, ms_setup)
    probe.record(1, loss)
    result = compare(torch_probe(torch_setup), probe.fingerprint())
    assert result.ok, result.verdict()
    # Everything is compared but the activations, which only capture records.
    assert set(result.skipped) == {"forward", "steps"}
    assert probe.fingerprint().batch is not None and "2 tensor(s), equal by value" in result.verdict()


def test_mindspore_probe_without_grads_skips_the_gradient_stage(make_ms, ms):
    setup = make_ms()
    probe = Probe(setup.model, setup.optimizer)
    loss, _ = ms_train_step(ms, setup)
    probe.record(0, loss)
    fingerprint = probe.fingerprint()
    assert fingerprint.step.grad_norms == {} and fingerprint.step.grad_norm is None
    result = compare(fingerprint, fingerprint)
    assert result.ok and "no gradients recorded" in result.skipped["grads"]


def test_grads_as_a_dict_by_native_name(make_ms, ms):
    setup = make_ms()
    probe = Probe(setup.model, setup.optimizer)
    loss, grads = ms_train_step(ms, setup)
    names = [p.name for p in setup.optimizer.parameters]
    probe.record(0, loss, grads=dict(zip(names, grads)))
    assert set(probe.fingerprint().step.grad_norms) == {
        "fc1.weight", "fc1.bias", "ln.weight", "ln.bias", "fc2.weight", "fc2.bias", "bn.weight", "bn.bias",
        "head.weight", "head.bias",
    }


def test_probe_misuse(make_torch):
    setup = make_torch()
    probe = Probe(setup.model, setup.optimizer)
    with pytest.raises(FingerprintError, match="nothing recorded"):
        probe.fingerprint()
    with pytest.raises(FingerprintError, match="record step 0 before step 1"):
        probe.record(1, 0.5)
    with pytest.raises(FingerprintError, match="steps 0 and 1"):
        probe.record(2, 0.5)
    with pytest.raises(FingerprintError, match="gradients for"):
        probe.record(0, 0.5, grads=[None])
    with pytest.raises(FingerprintError, match="scalar loss"):
        probe.record(0, setup.batch[0])


def test_probe_nan_loss(make_torch):
    setup = make_torch()
    probe = Probe(setup.model, setup.optimizer)
    with pytest.raises(NonFiniteLossError, match="step-0 loss is NaN") as raised:
        probe.record(0, float("nan"))
    assert raised.value.fingerprint is not None


def test_probe_batch_finds_a_changed_sample(make_torch, torch):
    left, right = make_torch(), make_torch()
    right.batch[0][5, 2] += 1.0  # one value of sample 5
    result = compare(torch_probe(left), torch_probe(right))
    assert [(m.kind, m.name) for m in result.causes] == [("batch", "0")], result.verdict()
    assert "in 1 of 32 samples (index 5)" in result.causes[0].message
