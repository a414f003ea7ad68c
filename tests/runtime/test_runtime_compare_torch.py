"""torch vs torch: identical setups are clean; each single injected difference is the only cause reported,
and everything measured after it that differs says that it follows from it."""

from __future__ import annotations

import pytest

from acclint.runtime import KINDS, assert_parity, capture, compare


def fingerprint(make_torch, **options):
    setup = make_torch(**options)
    return capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)


def test_identical_setups_compare_clean(make_torch):
    result = compare(fingerprint(make_torch), fingerprint(make_torch))
    assert result.ok, result.verdict()
    assert result.mismatches == []
    assert set(result.skipped) == {"steps"}  # one step captured: later steps not compared
    assert "Verdict: PARITY" in result.verdict()


@pytest.mark.parametrize(
    ("right_options", "expected_kinds", "expected_names"),
    [
        ({"freeze": ("fc1.weight",)}, {"frozen"}, {"fc1.weight"}),
        ({"extra_layer": True}, {"param-count", "param-missing"}, {"all", "extra.weight", "extra.bias"}),
        ({"width": 24}, {"param-count", "param-shape"}, None),
        ({"betas": (0.9, 0.95)}, {"optimizer-hparam"}, {"adam-beta2"}),
        ({"groups": True, "weight_decay": 0.01}, {"optimizer-group"}, {"groups"}),
        ({"optimizer": "sgd"}, {"optimizer-type"}, {"type"}),
        ({"seed": 1}, {"env"}, {"seed"}),
        ({"lr": 2e-3}, {"optimizer-hparam"}, {"lr"}),
        ({"train": False}, {"train-mode"}, {"training"}),
    ],
    ids=["frozen", "extra-layer", "width", "betas", "groups", "optimizer-type", "seed", "lr", "eval-mode"],
)
def test_single_difference_reported_alone(make_torch, right_options, expected_kinds, expected_names):
    left_options = {"weight_decay": 0.01} if "groups" in right_options else {}
    result = compare(fingerprint(make_torch, **left_options), fingerprint(make_torch, **right_options))
    assert not result.ok
    assert result.cause_kinds() == expected_kinds, result.verdict()
    if expected_names is not None:
        assert {m.name for m in result.causes} == expected_names, result.verdict()
    assert all(m.kind in KINDS for m in result.mismatches)
    # Whatever else differs follows from one of the causes, and says which.
    # (later module outputs follow from the first diverging one: "activation").
    assert {m.consequence_of for m in result.mismatches if not m.is_cause} <= expected_kinds | {"activation"}, (
        result.verdict()
    )


def test_hparam_values_and_json_contract(make_torch):
    result = compare(fingerprint(make_torch, betas=(0.9, 0.95)), fingerprint(make_torch))
    (mismatch,) = result.mismatches
    assert mismatch.to_dict() == {
        "kind": "optimizer-hparam",
        "name": "adam-beta2",
        "left": 0.95,
        "right": 0.999,
        "message": mismatch.message,
    }
    assert "0.95" in mismatch.message and "0.999" in mismatch.message
    assert result.to_dict()["version"] == 1 and result.to_dict()["ok"] is False


def test_seed_difference_is_the_root_and_names_every_weight(make_torch):
    result = compare(fingerprint(make_torch, seed=0), fingerprint(make_torch, seed=1))
    init = {m.name for m in result.mismatches if m.kind == "init-weights"}
    assert {"fc1.weight", "fc2.weight", "head.weight"} <= init
    seed = [m for m in result.mismatches if m.kind == "env"]
    assert [(m.name, m.left, m.right, m.is_cause) for m in seed] == [("seed", 0, 1, True)]
    # The seed draws the initial weights: they, and everything measured after them, follow from it.
    assert [m.name for m in result.causes] == ["seed"], result.verdict()
    assert {m.consequence_of for m in result.mismatches if m.kind == "init-weights"} == {"env"}
    assert set(result.skipped) == {"steps"}  # one step captured: later steps not compared
    later = [m for m in result.mismatches if m.stage in {"forward", "loss", "grads", "update"}]
    assert {m.kind for m in later} >= {"activation", "loss", "grad-norm"}, result.verdict()
    assert all(m.consequence_of == "env" for m in later if m.kind != "activation")
    activations = [m.consequence_of for m in later if m.kind == "activation"]
    assert activations[0] == "env" and set(activations[1:]) <= {"activation"}
    text = result.verdict()
    assert "fix 'environment' (seed) first" in text and "Hint: the runs are seeded differently" in text
    assert "initial weights ..... differs: " in text and "(follows from environment)" in text


def test_json_consumer_sees_the_loss_and_update_after_different_weights(make_torch, torch):
    # SGD: its update norms follow the gradients (Adam's first step has nearly the same norm for any weights).
    # Same seed, other weights (a seed difference would be the cause instead).
    left = fingerprint(make_torch, optimizer="sgd")
    setup = make_torch(optimizer="sgd")
    with torch.no_grad():
        setup.model.fc1.weight.mul_(1.5)
    right = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)
    result = compare(left, right)
    entries = result.to_dict()["mismatches"]
    loss = [e for e in entries if e["kind"] == "loss" and e["name"] == "loss"]
    assert [(e["left"], e["right"], e["consequence_of"]) for e in loss] == [
        (left.step.loss, right.step.loss, "init-weights")
    ]
    assert any(e["kind"] == "update" and e["consequence_of"] == "init-weights" for e in entries)
    assert any(e["kind"] == "loss" and e["name"] == "loss-after-step" for e in entries)
    # The verdict still names the first cause: the first entry without consequence_of.
    first_cause = next(e for e in entries if "consequence_of" not in e)
    assert first_cause["kind"] == "init-weights"
    text = result.verdict()
    assert "not compared" not in text
    loss_line = next(line for line in text.splitlines() if "step-0 loss ..." in line)
    assert f"{left.step.loss:.8g} vs {right.step.loss:.8g}" in loss_line
    assert loss_line.endswith("(follows from initial weights)")
    assert "fix 'initial weights' first" in text


def test_frozen_parameter_does_not_also_report_counts_or_groups(make_torch):
    result = compare(fingerprint(make_torch), fingerprint(make_torch, freeze=("fc1.weight", "fc1.bias")))
    assert [(m.kind, m.name, m.left, m.right) for m in result.causes] == [
        ("frozen", "fc1.weight", False, True),
        ("frozen", "fc1.bias", False, True),
    ]
    assert "see frozen" in result.verdict()


def test_extra_layer_makes_numeric_stages_consequences(make_torch):
    result = compare(fingerprint(make_torch), fingerprint(make_torch, extra_layer=True))
    count = next(m for m in result.mismatches if m.kind == "param-count")
    assert count.right - count.left == 16 * 16 + 16
    numeric = [m for m in result.mismatches if m.stage in {"weights", "forward", "loss", "grads", "update"}]
    assert numeric and all(m.consequence_of in {"param-count", "activation"} for m in numeric), result.verdict()
    assert result.cause_kinds() == {"param-count", "param-missing"}


def test_gradient_divergence_names_first_parameter_in_backward_order(make_torch):
    left = fingerprint(make_torch)
    right = fingerprint(make_torch)
    # Simulate a backward bug in the middle of the network: fc2 and everything before it differ.
    # (fc2.bias is left alone: it feeds BatchNorm, so its gradient is float noise around zero.)
    for name in ("fc2.weight", "ln.bias", "ln.weight", "fc1.weight"):
        right.step.grad_norms[name] *= 1.01
    result = compare(left, right)
    grads = [m for m in result.mismatches if m.kind == "grad-norm"]
    per_param = [m for m in grads if m.name != "global"]
    assert [m.name for m in per_param] == ["fc2.weight", "ln.bias", "ln.weight", "fc1.weight"]
    assert per_param[0].message.startswith("first diverging parameter (backward order)")
    assert all(m.is_cause for m in grads)  # the loss matched: the gradients are the cause
    assert not result.skipped.get("update")  # the update is still measured (and here the same)


def test_loss_within_float32_noise_is_parity_and_beyond_is_not(make_torch):
    left = fingerprint(make_torch)
    right = fingerprint(make_torch)
    right.step.loss = left.step.loss * (1 + 1e-7)
    assert compare(left, right).ok
    right.step.loss = left.step.loss * (1 + 1e-4)
    result = compare(left, right)
    assert result.kinds() == {"loss"}
    assert compare(left, right, rtol=1e-3).ok  # tunable


def test_update_difference_after_matching_gradients(make_torch):
    left = fingerprint(make_torch)
    right = fingerprint(make_torch)
    right.step.update_norms["head.weight"] *= 1.5
    right.step.loss_after_step += 1e-3
    result = compare(left, right)
    assert {(m.kind, m.name) for m in result.mismatches} == {("update", "head.weight"), ("loss", "loss-after-step")}
    assert "update differs" in result.verdict()


def test_assert_parity_raises_with_the_verdict(make_torch):
    assert_parity(fingerprint(make_torch), fingerprint(make_torch))
    with pytest.raises(AssertionError) as raised:
        assert_parity(fingerprint(make_torch), fingerprint(make_torch, lr=5e-3))
    text = str(raised.value)
    assert "optimizer-hparam" in text and "lr is 0.001 on the left, 0.005 on the right" in text
    assert text.index("parameter count") < text.index("optimizer") < text.index("step-0 loss")


def test_verdict_follows_the_guides_order(make_torch):
    text = compare(fingerprint(make_torch), fingerprint(make_torch)).verdict()
    order = ["data", "parameter count", "names and shapes", "frozen parameters", "optimizer", "initial weights",
             "training mode", "module settings", "forward", "step-0 loss", "gradients", "after one update",
             "environment"]
    positions = [text.index(title) for title in order]
    assert positions == sorted(positions)


def test_deterministic_flag_difference_is_env(make_torch, torch):
    left = fingerprint(make_torch)
    torch.use_deterministic_algorithms(True)
    try:
        right = fingerprint(make_torch)
    finally:
        torch.use_deterministic_algorithms(False)
    result = compare(left, right)
    assert [(m.kind, m.name, m.left, m.right) for m in result.mismatches] == [("env", "deterministic", False, True)]
