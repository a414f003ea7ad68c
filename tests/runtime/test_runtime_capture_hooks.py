"""TorchStepObserver in-process: step 0 from torch's global hooks equals what Probe records by hand."""

from __future__ import annotations

import pytest

from acclint.runtime import Probe, compare
from acclint.runtime_checks.capture_hooks.torch_observer import TorchStepObserver


def observe(loop, **options) -> dict:
    """Run `loop` under the observer; {"fingerprint": ...} or {"error": ...}."""
    got: dict = {}
    observer = TorchStepObserver(lambda fp: got.setdefault("fingerprint", fp),
                                 lambda error: got.setdefault("error", error), **options).install()
    try:
        loop()
    finally:
        observer.uninstall()
    return got


def plain_loop(torch, setup, steps=3, scaler=None, clip=None, closure=False):
    model, optimizer, (inputs, targets) = setup.model, setup.optimizer, setup.batch

    def loop():
        for _ in range(steps):
            def step_loss():
                optimizer.zero_grad()
                loss = torch.nn.functional.mse_loss(model(inputs), targets)
                (scaler.scale(loss) if scaler else loss).backward()
                if scaler:
                    scaler.unscale_(optimizer)
                if clip:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
                return loss

            if closure:
                optimizer.step(step_loss)
            elif scaler:
                step_loss()
                scaler.step(optimizer)
                scaler.update()
            else:
                step_loss()
                optimizer.step()

    return loop


def test_the_hooks_record_what_probe_records_by_hand(torch, make_torch):
    hooked = observe(plain_loop(torch, make_torch()))["fingerprint"]
    manual = make_torch()
    probe = Probe(manual.model, manual.optimizer)
    inputs, targets = manual.batch
    manual.optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(manual.model(inputs), targets)
    loss.backward()
    manual.optimizer.step()
    probe.record(0, loss, batch=inputs)  # the hooks see the input reaching the model
    result = compare(hooked, probe.fingerprint())
    assert result.ok, result.verdict()
    assert hooked.step.loss == pytest.approx(loss.item(), rel=1e-6)
    assert hooked.forward and hooked.batch[0].shape == list(inputs.shape)


def test_a_grad_scaler_is_taken_off_loss_and_gradients(torch, make_torch):
    plain = observe(plain_loop(torch, make_torch()))["fingerprint"]
    scaled = observe(plain_loop(torch, make_torch(), scaler=torch.amp.GradScaler("cpu", init_scale=1024.0)))
    result = compare(scaled["fingerprint"], plain)
    assert result.ok, result.verdict()


def test_clipping_is_recorded_and_the_norms_are_those_before_clipping(torch, make_torch):
    """As trainers log it: the norm clip_grad_norm_ returns, before it scales the gradients."""
    clipped = observe(plain_loop(torch, make_torch(), clip=1e-3))["fingerprint"]
    unclipped = observe(plain_loop(torch, make_torch()))["fingerprint"]
    assert clipped.optimizer.extra["clip-grad"] == 1e-3
    assert clipped.step.grad_norm == pytest.approx(unclipped.step.grad_norm, rel=1e-6)
    assert clipped.step.grad_norm > 1e-2  # not the clipped 1e-3
    result = compare(clipped, unclipped)
    assert [m.name for m in result.causes] == ["clip-grad"]
    assert not next(o for o in result.stages if o.stage == "grads").mismatches


def test_an_optimizer_given_a_closure(torch, make_torch):
    with_closure = observe(plain_loop(torch, make_torch(), closure=True))["fingerprint"]
    result = compare(with_closure, observe(plain_loop(torch, make_torch()))["fingerprint"])
    assert result.ok, result.verdict()


def test_steps_2_records_the_next_loss(torch, make_torch):
    setup = make_torch()
    fingerprint = observe(plain_loop(torch, setup, steps=2), steps=2)["fingerprint"]
    again = make_torch()
    losses = again.train(2)
    assert fingerprint.step.loss == pytest.approx(losses[0], rel=1e-6)
    assert fingerprint.step.loss_after_step == pytest.approx(losses[1], rel=1e-6)


def test_every_hook_is_gone_after_step_0(torch, make_torch):
    import torch.nn.modules.module as module_hooks
    import torch.optim.optimizer as optimizer_hooks

    before = (dict(module_hooks._global_forward_pre_hooks), dict(module_hooks._global_forward_hooks),
              dict(optimizer_hooks._global_optimizer_pre_hooks), dict(optimizer_hooks._global_optimizer_post_hooks))
    backward, scale, clip = torch.autograd.backward, torch.amp.GradScaler.scale, torch.nn.utils.clip_grad_norm_
    seen = []
    setup = make_torch()

    def loop():
        plain_loop(torch, setup, steps=1)()
        seen.append(len(module_hooks._global_forward_pre_hooks))  # removed right after the step, in the loop
        plain_loop(torch, setup, steps=1)()

    assert "fingerprint" in observe(loop)
    assert seen == [len(before[0])]
    after = (dict(module_hooks._global_forward_pre_hooks), dict(module_hooks._global_forward_hooks),
             dict(optimizer_hooks._global_optimizer_pre_hooks), dict(optimizer_hooks._global_optimizer_post_hooks))
    assert after == before
    assert (torch.autograd.backward, torch.amp.GradScaler.scale, torch.nn.utils.clip_grad_norm_) == (backward, scale, clip)


def test_a_failure_is_reported_and_training_goes_on(torch):
    loose = torch.nn.Parameter(torch.ones(3))  # in no module
    optimizer = torch.optim.SGD([loose], lr=0.1)
    losses = []

    def loop():
        for _ in range(2):
            optimizer.zero_grad()
            loss = (loose ** 2).sum()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())

    got = observe(loop)
    assert "before any module holding its parameters ran forward" in str(got["error"])
    assert losses == [3.0, pytest.approx(1.92)]  # both steps ran, the second on the updated tensor


def test_the_model_named_by_a_callback_is_used(torch, make_torch):
    setup = make_torch()
    teacher = torch.nn.Linear(8, 4)
    inputs, targets = setup.batch

    def loop():
        setup.optimizer.zero_grad()
        hint = teacher(inputs)  # a module the optimizer does not train, called first
        loss = torch.nn.functional.mse_loss(setup.model(inputs) + 0 * hint, targets)
        loss.backward()
        setup.optimizer.step()

    fingerprint = observe(loop, model=setup.model)["fingerprint"]
    assert fingerprint.model == "Net"
    assert {r.name for r in fingerprint.forward} >= {"", "fc1", "head"}
