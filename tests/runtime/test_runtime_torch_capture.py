"""capture() on torch: what is recorded, that the numbers are the real ones, rollback, bad input."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

from acclint.runtime import FingerprintError, NonFiniteLossError, capture, compare, load


def manual_step(torch, setup):
    """Reference: one plain training step on deep copies, returning what capture should record."""
    model = copy.deepcopy(setup.model)
    optimizer = type(setup.optimizer)(model.parameters(), **{
        k: v for k, v in setup.optimizer.defaults.items() if k in ("lr", "betas", "eps", "weight_decay", "momentum")
    })
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    rng = torch.get_rng_state()
    loss = setup.loss_fn(model, setup.batch)
    loss.backward()
    grads = {n: p.grad.norm().item() for n, p in model.named_parameters()}
    optimizer.step()
    updates = {n: (p.detach() - before[n]).norm().item() for n, p in model.named_parameters()}
    torch.set_rng_state(rng)
    with torch.no_grad():
        after = setup.loss_fn(model, setup.batch).item()
    return loss.item(), grads, after, updates


def test_records_parameters_state_and_mode(make_torch, torch):
    setup = make_torch(freeze=("head.bias",))
    fp = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)
    assert fp.framework == "torch" and fp.source == "capture" and fp.training is True
    names = [p.name for p in fp.params]
    assert names == [n for n, _ in setup.model.named_parameters()]
    assert [s.name for s in fp.state] == ["bn.running_mean", "bn.running_var"]  # num_batches_tracked ignored
    assert not any("num_batches_tracked" in n for n in names)
    frozen = {p.name for p in fp.params if not p.trainable}
    assert frozen == {"head.bias"}
    weight = next(p for p in fp.params if p.name == "fc1.weight")
    reference = setup.model.fc1.weight.detach().numpy()
    assert weight.shape == [16, 8] and weight.dtype == "float32" and weight.numel == 128
    assert weight.stats["norm"] == pytest.approx(float(np.linalg.norm(reference)), rel=1e-6)
    assert weight.stats["max"] == pytest.approx(float(reference.max()))
    assert fp.param_count() == (sum(p.numel() for p in setup.model.parameters()),
                                sum(p.numel() for p in setup.model.parameters() if p.requires_grad))


def test_records_optimizer_groups_in_launcher_spelling(make_torch):
    setup = make_torch(groups=True, weight_decay=0.05, betas=(0.8, 0.95), lr=3e-4)
    fp = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)
    assert fp.optimizer.type == "adam" and fp.optimizer.native_type == "torch.optim.adam.Adam"
    decay, no_decay = fp.optimizer.groups
    assert decay.hparams["weight-decay"] == 0.05 and no_decay.hparams["weight-decay"] == 0.0
    assert decay.hparams["adam-beta1"] == 0.8 and decay.hparams["adam-beta2"] == 0.95
    assert decay.hparams["lr"] == 3e-4 and decay.hparams["adam-eps"] == 1e-8
    assert decay.params == ["fc1.weight", "fc2.weight", "head.weight"]
    assert "fc1.bias" in no_decay.params and "bn.weight" in no_decay.params
    assert not {"foreach", "fused", "capturable", "differentiable"} & set(decay.hparams)


def test_adamw_via_decoupled_flag_is_normalised(make_torch, torch):
    setup = make_torch()
    optimizer = torch.optim.Adam(setup.model.parameters(), lr=1e-3, weight_decay=0.01, decoupled_weight_decay=True)
    fp = capture(setup.model, optimizer, setup.loss_fn, setup.batch)
    assert fp.optimizer.type == "adamw"


def test_step_numbers_are_the_real_ones(make_torch, torch):
    setup = make_torch(optimizer="sgd", lr=0.05)
    loss, grads, after, updates = manual_step(torch, setup)
    fp = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)
    assert fp.step.loss == pytest.approx(loss, rel=1e-7)
    for name, norm in grads.items():
        assert fp.step.grad_norms[name] == pytest.approx(norm, rel=1e-5, abs=1e-9)
    assert fp.step.grad_norm == pytest.approx(math.sqrt(sum(v * v for v in grads.values())), rel=1e-6)
    assert fp.step.loss_after_step == pytest.approx(after, rel=1e-6)
    assert fp.step.loss_after_step < fp.step.loss  # one SGD step on the same batch lowers it
    for name, norm in updates.items():
        assert fp.step.update_norms[name] == pytest.approx(norm, rel=1e-5, abs=1e-9)


def test_rollback_leaves_model_optimizer_and_rng_untouched(make_torch, torch):
    setup = make_torch(dropout=0.3)
    state = copy.deepcopy(setup.model.state_dict())
    rng = torch.get_rng_state()
    capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)
    for key, value in setup.model.state_dict().items():
        assert torch.equal(value, state[key]), key  # includes running stats and num_batches_tracked
    assert len(setup.optimizer.state) == 0
    assert all(p.grad is None for p in setup.model.parameters())
    assert torch.equal(torch.get_rng_state(), rng)


def test_training_after_capture_equals_training_without_it(make_torch, torch):
    plain = make_torch(dropout=0.3)
    torch.manual_seed(5)
    expected = plain.train(3)
    observed = make_torch(dropout=0.3)
    torch.manual_seed(5)  # before capture: its dropout draws must not shift the run's
    capture(observed.model, observed.optimizer, observed.loss_fn, observed.batch)
    assert observed.train(3) == expected


def test_keep_step_leaves_the_model_after_one_update(make_torch, torch):
    kept = make_torch()
    fp = capture(kept.model, kept.optimizer, kept.loss_fn, kept.batch, keep_step=True)
    assert fp.step.step_kept is True
    # Same as one plain step: parameters moved, running stats updated once (not twice), optimizer has state.
    plain = make_torch()
    plain.optimizer.zero_grad()
    plain.loss_fn(plain.model, plain.batch).backward()
    plain.optimizer.step()
    for (name, a), b in zip(kept.model.state_dict().items(), plain.model.state_dict().values()):
        assert torch.equal(a, b), name
    assert len(kept.optimizer.state) == len(list(kept.model.parameters()))


def test_clip_grad_norm_is_recorded_and_applied(make_torch):
    plain = make_torch(optimizer="sgd", lr=0.1)
    clipped = make_torch(optimizer="sgd", lr=0.1)
    a = capture(plain.model, plain.optimizer, plain.loss_fn, plain.batch)
    b = capture(clipped.model, clipped.optimizer, clipped.loss_fn, clipped.batch, clip_grad_norm=0.1)
    assert b.optimizer.extra == {"clip-grad": 0.1}
    # SGD update = lr * clipped grad: the total update shrinks by max_norm / grad norm.
    ratio = math.sqrt(sum(v * v for v in b.step.update_norms.values())) / math.sqrt(sum(v * v for v in a.step.update_norms.values()))
    assert ratio == pytest.approx(0.1 / a.step.grad_norm, rel=1e-4)
    result = compare(a, b)
    assert [(m.kind, m.name, m.left, m.right) for m in result.causes] == [("optimizer-hparam", "clip-grad", None, 0.1)]
    # The smaller update is measured too, as its consequence.
    assert {m.consequence_of for m in result.mismatches if m.stage == "update"} == {"optimizer-hparam"}


def test_full_tensors_go_to_a_side_file(make_torch, torch, tmp_path):
    left = make_torch()
    right = make_torch()
    with_tensors = capture(left.model, left.optimizer, left.loss_fn, left.batch, keep_tensors=True)
    with torch.no_grad():
        right.model.fc1.weight[0, 0] += 0.25
    other = capture(right.model, right.optimizer, right.loss_fn, right.batch, keep_tensors=True)
    path = with_tensors.save(tmp_path / "a.json")
    other.save(tmp_path / "b.json")
    assert (tmp_path / "a.tensors.npz").exists()
    saved = json.loads(path.read_text())
    assert saved["tensors_file"] == "a.tensors.npz" and "tensors" not in saved  # arrays never go to JSON
    loaded = load(path).load_tensors()
    np.testing.assert_array_equal(loaded["fc1.weight"], left.model.fc1.weight.detach().numpy())
    result = compare(load(tmp_path / "a.json"), load(tmp_path / "b.json"))
    (mismatch,) = [m for m in result.mismatches if m.kind == "init-weights"]
    assert mismatch.name == "fc1.weight" and "max |difference| 0.25" in mismatch.message


def test_fingerprint_without_tensors_is_small_plain_json(make_torch, tmp_path):
    setup = make_torch()
    path = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch).save(tmp_path / "fp.json")
    assert not list(tmp_path.glob("*.npz"))
    data = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert data["format"] == "acclint-fingerprint" and data["version"] == 3 and data["hash_algorithm"] == "mix64"
    assert path.stat().st_size < 50_000


# ---------------------------------------------------------------------------- bad input
def test_non_scalar_loss(make_torch, torch):
    setup = make_torch()
    with pytest.raises(FingerprintError, match=r"scalar loss, got a tensor of shape \[32, 4\]"):
        capture(setup.model, setup.optimizer, lambda m, b: (m(b[0]) - b[1]) ** 2, setup.batch)


def test_loss_fn_returning_a_float(make_torch):
    setup = make_torch()
    with pytest.raises(FingerprintError, match="must return the loss tensor"):
        capture(setup.model, setup.optimizer, lambda m, b: setup.loss_fn(m, b).item(), setup.batch)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")], ids=["nan", "inf"])
def test_non_finite_step0_loss_is_reported_as_such_and_rolled_back(make_torch, torch, bad):
    setup = make_torch()
    state = copy.deepcopy(setup.model.state_dict())
    with pytest.raises(NonFiniteLossError, match="step-0 loss is (NaN|infinite)") as raised:
        capture(setup.model, setup.optimizer, lambda m, b: setup.loss_fn(m, b) * bad, setup.batch)
    assert raised.value.fingerprint is not None and raised.value.fingerprint.step is None
    for key, value in setup.model.state_dict().items():
        assert torch.equal(value, state[key])


def test_loss_that_diverges_after_the_update(make_torch, torch):
    setup = make_torch()
    calls = []

    def loss_fn(model, batch):
        calls.append(1)
        loss = setup.loss_fn(model, batch)
        return loss if len(calls) == 1 else loss * float("nan")

    with pytest.raises(NonFiniteLossError, match="loss after one optimizer step is NaN.*update itself diverged") as raised:
        capture(setup.model, setup.optimizer, loss_fn, setup.batch)
    assert raised.value.fingerprint.step.loss_after_step != raised.value.fingerprint.step.loss_after_step  # NaN kept


def test_batch_on_the_wrong_device(make_torch, torch):
    setup = make_torch()
    meta_batch = tuple(t.to("meta") for t in setup.batch)
    with pytest.raises(FingerprintError, match="the batch is on meta but the model's parameters are on cpu"):
        capture(setup.model, setup.optimizer, setup.loss_fn, meta_batch)


def test_optimizer_of_another_model_instance(make_torch):
    setup = make_torch()
    other = make_torch()
    with pytest.raises(FingerprintError, match="not in the model"):
        capture(setup.model, other.optimizer, setup.loss_fn, setup.batch)


def test_not_a_model(make_torch):
    setup = make_torch()
    with pytest.raises(FingerprintError, match="torch.nn.Module or a mindspore.nn.Cell"):
        capture(object(), setup.optimizer, setup.loss_fn, setup.batch)
    with pytest.raises(FingerprintError, match="needs the optimizer"):
        capture(setup.model, None, setup.loss_fn, setup.batch)


def test_errors_inside_loss_fn_that_are_not_ours_propagate(make_torch):
    setup = make_torch()

    def broken(model, batch):
        raise KeyError("labels")

    with pytest.raises(KeyError):
        capture(setup.model, setup.optimizer, broken, setup.batch)


def test_effective_settings_follow_the_device_type(torch):
    from acclint.runtime_checks.adapters.environment import torch_environment

    cpu = torch_environment(torch, "cpu")["effective"]
    assert cpu["reduced-precision-matmul"] is None and cpu["reduced-precision-conv"] is None
    cuda = torch_environment(torch, "cuda")["effective"]
    assert cuda["reduced-precision-matmul"] == (
        torch.backends.cuda.matmul.allow_tf32 or torch.get_float32_matmul_precision() != "highest"
    )
    assert cuda["reduced-precision-conv"] == torch.backends.cudnn.allow_tf32
    torch.set_float32_matmul_precision("high")  # TF32 allowed for float32 matmuls on CUDA
    try:
        assert torch_environment(torch, "cuda")["effective"]["reduced-precision-matmul"] is True
    finally:
        torch.set_float32_matmul_precision("highest")
    # Without torch_npu loaded the HF32 switches do not exist: nothing is claimed for an NPU.
    npu = torch_environment(torch, "npu")
    assert "npu.matmul.allow_hf32" not in npu["settings"] and npu["effective"]["reduced-precision-matmul"] is None
