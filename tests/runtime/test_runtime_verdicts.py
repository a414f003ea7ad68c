"""Verdicts to trust, on real captures: each test is a wrong verdict acclint gave before (issue 20)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from acclint.runtime import FingerprintError, Probe, capture, compare, transfer_weights
from acclint.runtime_checks.model.fingerprint import from_dict


def run(setup):
    return capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch)


def older_format(fingerprint, version):
    """The fingerprint as an older acclint wrote it: sha256 digests (other than every mix64 one),
    and from format 1 no batch, module settings or forward records."""
    data = fingerprint.to_dict()
    data["version"] = version
    del data["hash_algorithm"]
    records = data["params"] + data["state"] + (data["batch"] or [])
    records += [value for call in data["forward"] or [] for value in call["values"]]
    for record in records:
        record["sha256"] = hashlib.sha256(record["sha256"].encode()).hexdigest()
    if version == 1:
        for stage in ("batch", "modules", "forward"):
            del data[stage]
    return from_dict(data)


def stage_line(text, title):
    return next(line for line in text.splitlines() if f" {title} ." in line)


def hint(text):
    return text.partition("Hint: ")[2].splitlines()[0]


# ---------------------------------------------------------------------------- older formats
def test_a_format_2_reference_names_weights_that_differ_by_their_statistics(make_torch, torch):
    reference = older_format(run(make_torch()), 2)
    changed = make_torch()
    with torch.no_grad():
        changed.model.fc1.weight.mul_(1.5)
    result = compare(reference, run(changed))
    # Before: initial weights skipped, and "fix 'forward' first" because weights, settings and data "match".
    assert [(m.kind, m.name) for m in result.causes] == [("init-weights", "fc1.weight")], result.verdict()
    assert "starts from different values (by its statistics)" in result.causes[0].message
    text = result.verdict()
    assert "fix 'initial weights' first" in text
    assert "match" not in hint(text)


def test_a_hint_claims_only_the_stages_compared_in_full(make_torch):
    def scaled_fc2(setup):
        setup.model.fc2.register_forward_hook(lambda module, inputs, output: output * 1.01)
        return run(setup)

    baseline = run(make_torch())
    same_format = compare(baseline, scaled_fc2(make_torch()))
    assert same_format.cause_kinds() == {"activation"}
    assert hint(same_format.verdict()).startswith(
        "initial weights, module settings and data match, but a module's output differs")

    result = compare(older_format(baseline, 2), scaled_fc2(make_torch()))
    assert result.cause_kinds() == {"activation"}, result.verdict()
    text = result.verdict()
    assert "initial weights" not in hint(text) and "data" not in hint(text)
    assert hint(text).startswith("module settings match, but")
    assert "Note: data, initial weights were not fully compared (values not compared: hashed with sha256" in text


def test_a_format_1_reference_says_which_stages_it_lacks(make_torch):
    result = compare(older_format(run(make_torch()), 1), run(make_torch()))
    assert set(result.skipped) == {"data", "settings", "forward", "steps"}  # steps: one step captured
    for stage in ("data", "settings", "forward"):
        assert "format 1, which has no" in result.skipped[stage], result.skipped[stage]
    assert "Verdict: PARITY" in result.verdict() and "not compared: data, module settings, forward" in result.verdict()


# ---------------------------------------------------------------------------- the seed
def test_a_seed_difference_is_named_first_and_the_rest_follows_from_it(make_torch):
    result = compare(run(make_torch(seed=0)), run(make_torch(seed=1)))
    (cause,) = result.causes
    assert (cause.kind, cause.name, cause.left, cause.right) == ("env", "seed", 0, 1)
    following = {m.stage: m.consequence_of for m in result.mismatches if not m.is_cause and m.kind != "activation"}
    assert following["weights"] == "env" and following["loss"] == "env", result.verdict()
    text = result.verdict()
    assert "fix 'environment' (seed) first" in text
    assert text.index("Hint: the runs are seeded differently") > text.index("Verdict: MISMATCH, 1 difference")


def test_a_seed_difference_explains_a_batch_drawn_from_the_seeded_stream(make_torch, torch):
    def seeded_run(seed):
        setup = make_torch(seed=seed)
        setup.batch = (torch.randn(32, 8), torch.randn(32, 4))  # as nanoGPT draws its batches: after the seed
        return run(setup)

    result = compare(seeded_run(0), seeded_run(1))
    # Before: "fix 'data' first", and the seed last of all in the environment stage.
    assert [m.name for m in result.causes] == ["seed"], result.verdict()
    assert {m.consequence_of for m in result.mismatches if m.stage == "data"} == {"env"}
    assert "fix 'environment' (seed) first" in result.verdict()


# ---------------------------------------------------------------------------- different models
def test_different_models_are_said_to_be_different(make_torch, torch):
    torch.manual_seed(0)
    other = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    setup = make_torch()
    right = capture(other, torch.optim.Adam(other.parameters(), lr=1e-3), setup.loss_fn, setup.batch)
    result = compare(run(setup), right)
    assert [(m.kind, m.name) for m in result.causes] == [("param-missing", "<model>")], result.verdict()
    text = result.verdict()
    assert "these are different models (Net and Sequential)" in text
    assert "fix 'names and shapes' (different models) first" in text
    assert "Hint: the two fingerprints are of different networks" in text
    # No stage says "ok" about nothing: those without a parameter or module in common say so.
    for title in ("frozen parameters", "initial weights", "module settings", "gradients"):
        assert "not compared: no " in stage_line(text, title), stage_line(text, title)
    assert "0 tensors identical" not in text and "none frozen" not in text


def test_an_extra_layer_is_still_the_same_model(make_torch):
    result = compare(run(make_torch()), run(make_torch(extra_layer=True)))
    assert "different models" not in result.verdict()


# ---------------------------------------------------------------------------- the batch
def test_a_reordered_batch_is_said_to_hold_the_same_samples(make_torch):
    setup = make_torch()
    order = np.random.default_rng(0).permutation(len(setup.batch[0]))
    shuffled = make_torch()
    shuffled.batch = tuple(tensor[order] for tensor in shuffled.batch)
    result = compare(run(setup), run(shuffled))
    batch = [m for m in result.causes if m.kind == "batch"]
    assert {m.name for m in batch} == {"0", "1"}, result.verdict()
    assert all("holds the same 32 samples in another order" in m.message for m in batch)


def test_other_samples_are_not_called_a_reordering(make_torch):
    other = make_torch()
    other.batch = (other.batch[0] + 1.0, other.batch[1])
    (mismatch,) = [m for m in compare(run(make_torch()), run(other)).causes if m.kind == "batch"]
    assert "another order" not in mismatch.message and "in 32 of 32 samples" in mismatch.message


# ---------------------------------------------------------------------------- dropout
def test_dropout_on_both_sides_gets_the_random_masks_note(make_torch, torch):
    left = run(make_torch(dropout=0.1))
    right_setup = make_torch(dropout=0.1)
    torch.rand(1)  # the same seed, the stream moved on: other dropout masks
    result = compare(left, run(right_setup))
    assert result.cause_kinds() & {"activation", "loss"}, result.verdict()
    assert "Note: dropout is active on both sides (drop p=0.1 on the left, drop p=0.1 on the right)" in result.verdict()
    without = compare(run(make_torch()), run(make_torch(lr=2e-3)))
    assert "dropout" not in "".join(without.notes)


# ---------------------------------------------------------------------------- MindSpore notes
def test_torch_vs_torch_messages_carry_no_mindspore_notes(make_torch):
    left = make_torch(dropout=0.1)
    right = make_torch(dropout=0.2)
    right.model.ln.eps = 1e-6
    right.model.bn.momentum = 0.2
    result = compare(run(left), run(right))
    assert {m.name for m in result.causes} >= {"ln.eps", "bn.momentum", "drop.p"}, result.verdict()
    assert "mindspore" not in result.verdict().lower() and "keep_prob" not in result.verdict()


def test_torch_vs_mindspore_keeps_its_mindspore_notes(make_torch, make_ms, ms, build_ms_net):
    torch_side = make_torch()
    net = build_ms_net()
    net.ln = ms.nn.LayerNorm((16,))  # MindSpore's default epsilon 1e-7
    ms_side = make_ms(model=net)
    transfer_weights(torch_side.model, ms_side.model)
    (eps,) = [m for m in compare(run(torch_side), run(ms_side)).causes if m.name == "ln.eps"]
    assert "MindSpore nn.LayerNorm defaults to epsilon=1e-7" in eps.message


# ---------------------------------------------------------------------------- clipping in a Probe
def clipped_probe(setup, torch, max_norm):
    probe = Probe(setup.model, setup.optimizer, clip_grad_norm=max_norm)
    setup.optimizer.zero_grad()
    loss = setup.loss_fn(setup.model, setup.batch)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(setup.model.parameters(), max_norm)
    setup.optimizer.step()
    probe.record(0, loss, batch=setup.batch)
    return probe.fingerprint()


def test_a_clipping_change_is_reported_as_such_not_as_the_backward(make_torch, torch):
    left = clipped_probe(make_torch(optimizer="sgd"), torch, 0.5)
    right = clipped_probe(make_torch(optimizer="sgd"), torch, 0.05)
    assert left.optimizer.extra == {"clip-grad": 0.5}
    result = compare(left, right)
    assert [(m.kind, m.name, m.left, m.right) for m in result.causes] == [
        ("optimizer-hparam", "clip-grad", 0.5, 0.05)
    ], result.verdict()
    grads = [m for m in result.mismatches if m.stage == "grads"]
    assert grads and {m.consequence_of for m in grads} == {"optimizer-hparam"}
    assert "backward pass differs" not in result.verdict()
    assert compare(left, clipped_probe(make_torch(optimizer="sgd"), torch, 0.5)).ok


def test_clip_grad_norm_must_be_a_positive_number(make_torch):
    setup = make_torch()
    with pytest.raises(FingerprintError, match="positive number"):
        Probe(setup.model, setup.optimizer, clip_grad_norm=0)
    with pytest.raises(FingerprintError, match="pass the optimizer too"):
        Probe(setup.model, clip_grad_norm=1.0)
