"""The rollback snapshot: host memory or a memory-mapped file, never the model's device, and exact.

On a CPU-only machine the "device" is host memory too, so these tests check the structure that
keeps the device free (every copy lives in the snapshot's own host buffer or file, none shares
storage with the model) and the exactness of restore; benchmarks/ measures the memory itself.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from acclint.runtime import FingerprintError, Probe, capture
from acclint.runtime_checks.adapters.frameworks import adapter_for


def buffer_range(store):
    start = store.buffer.__array_interface__["data"][0]
    return start, start + store.buffer.nbytes


def assert_in_store(tensor, store):
    """The host copy is a CPU tensor inside the snapshot's own buffer."""
    start, end = buffer_range(store)
    assert tensor.device.type == "cpu"
    assert start <= tensor.data_ptr() and tensor.data_ptr() + tensor.numel() * tensor.element_size() <= end


def warm(setup, steps=2):
    """A model mid-training: optimizer state and gradients present."""
    setup.train(steps)
    setup.loss_fn(setup.model, setup.batch).backward()  # gradients of the next step, not applied


@pytest.mark.parametrize("offload", ["host", "disk"])
def test_snapshot_copies_live_in_its_own_host_buffer(make_torch, torch, offload, tmp_path):
    setup = make_torch(optimizer="adamw")
    warm(setup)
    adapter = adapter_for(setup.model, setup.optimizer)
    snapshot = adapter.snapshot(adapter.all_tensors(), True, offload, str(tmp_path))
    model_storage = {t.untyped_storage().data_ptr() for t in adapter.all_tensors()}
    for tensor in adapter.all_tensors():
        assert_in_store(snapshot.copies[id(tensor)], snapshot.store)
        assert torch.equal(snapshot.copies[id(tensor)], tensor)
    for parameter in setup.model.parameters():
        assert_in_store(snapshot.grads[id(parameter)], snapshot.store)
    for values in snapshot.optimizer_state.values():
        for saved in values.values():
            if hasattr(saved, "host"):
                assert_in_store(saved.host, snapshot.store)
    copies = [c.untyped_storage().data_ptr() for c in snapshot.copies.values()]
    assert not model_storage & set(copies)
    if offload == "disk":
        assert isinstance(snapshot.store.buffer, np.memmap)
        assert snapshot.store.path.parent == tmp_path and snapshot.store.path.exists()
    adapter.restore(snapshot)
    assert list(tmp_path.iterdir()) == []  # the file goes with the snapshot


@pytest.mark.parametrize("offload", ["host", "disk"])
def test_capture_mid_training_restores_everything_bitwise(make_torch, torch, offload, tmp_path):
    """Weights, running statistics, gradients, AdamW state and the RNG are as before, to the bit:
    training afterwards is the training without capture."""
    plain, observed = make_torch(optimizer="adamw", dropout=0.3), make_torch(optimizer="adamw", dropout=0.3)
    torch.manual_seed(11)
    warm(plain)
    torch.manual_seed(11)
    warm(observed)
    state = copy.deepcopy(observed.model.state_dict())
    grads = [p.grad.clone() for p in observed.model.parameters()]
    optimizer_state = copy.deepcopy(observed.optimizer.state_dict())
    rng = torch.get_rng_state()
    fp = capture(observed.model, observed.optimizer, observed.loss_fn, observed.batch,
                 offload=offload, offload_dir=str(tmp_path))
    assert fp.step.update_norms and all(norm > 0 for norm in fp.step.update_norms.values())
    for key, value in observed.model.state_dict().items():
        assert torch.equal(value, state[key]), key
    for parameter, grad in zip(observed.model.parameters(), grads):
        assert torch.equal(parameter.grad, grad)
    restored = observed.optimizer.state_dict()
    for key, values in optimizer_state["state"].items():
        for name, value in values.items():
            assert torch.equal(restored["state"][key][name], value), (key, name)
    assert torch.equal(torch.get_rng_state(), rng)
    assert list(tmp_path.iterdir()) == []
    torch.manual_seed(12)
    expected = plain.train(3)
    torch.manual_seed(12)
    assert observed.train(3) == expected


def test_update_norms_are_the_real_ones_and_the_same_either_way(make_torch, torch, tmp_path):
    setup = make_torch(optimizer="adamw", lr=0.05)
    warm(setup, steps=1)
    reference = copy.deepcopy(setup)
    before = {n: p.detach().clone() for n, p in reference.model.named_parameters()}
    reference.optimizer.zero_grad()
    reference.loss_fn(reference.model, reference.batch).backward()
    reference.optimizer.step()
    expected = {n: (p.detach() - before[n]).norm().item() for n, p in reference.model.named_parameters()}
    for options in ({}, {"offload": "disk", "offload_dir": str(tmp_path)}, {"keep_step": True}):
        fresh = copy.deepcopy(setup)
        fp = capture(fresh.model, fresh.optimizer, fresh.loss_fn, fresh.batch, **options)
        for name, norm in expected.items():
            assert fp.step.update_norms[name] == pytest.approx(norm, rel=1e-5), (options, name)


def test_keep_step_with_disk_offload_keeps_the_update_and_no_file(make_torch, torch, tmp_path):
    kept, plain = make_torch(), make_torch()
    capture(kept.model, kept.optimizer, kept.loss_fn, kept.batch, keep_step=True, offload="disk",
            offload_dir=str(tmp_path))
    plain.train(1)
    for (name, a), b in zip(kept.model.state_dict().items(), plain.model.state_dict().values()):
        assert torch.equal(a, b), name
    assert list(tmp_path.iterdir()) == []


def test_probe_tracks_updates_in_a_memory_mapped_file(make_torch, torch, tmp_path):
    setup = make_torch(optimizer="adamw", lr=0.05)
    before = {n: p.detach().clone() for n, p in setup.model.named_parameters()}
    probe = Probe(setup.model, setup.optimizer, offload="disk", offload_dir=str(tmp_path))
    assert len(list(tmp_path.iterdir())) == 1  # the copy of the trainable weights, until record(0)
    loss = setup.train(1)[0]
    probe.record(0, loss)
    assert list(tmp_path.iterdir()) == []
    norms = probe.fingerprint().step.update_norms
    for name, parameter in setup.model.named_parameters():
        assert norms[name] == pytest.approx((parameter.detach() - before[name]).norm().item(), rel=1e-5)


def test_bad_offload_options(make_torch, tmp_path):
    setup = make_torch()
    with pytest.raises(FingerprintError, match="offload must be one of 'host', 'disk', got 'gpu'"):
        capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch, offload="gpu")
    with pytest.raises(FingerprintError, match="cannot create the offload file in"):
        capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch, offload="disk",
                offload_dir=str(tmp_path / "missing"))
    with pytest.raises(FingerprintError, match="offload must be one of"):
        Probe(setup.model, setup.optimizer, offload="nvme")


# ---------------------------------------------------------------------------- MindSpore
def ms_values(setup):
    values = {f"model.{n}": p.asnumpy().copy() for n, p in setup.model.parameters_and_names()}
    values.update({f"optimizer.{n}": p.asnumpy().copy() for n, p in setup.optimizer.parameters_and_names()})
    return values


@pytest.mark.parametrize("offload", ["host", "disk"])
def test_mindspore_snapshot_is_host_memory_and_restores_bitwise(make_ms, ms, offload, tmp_path):
    setup = make_ms(optimizer="adamweightdecay", lr=0.01)
    capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch, keep_step=True)  # optimizer state moves
    adapter = adapter_for(setup.model, setup.optimizer)
    before = ms_values(setup)
    snapshot = adapter.snapshot(adapter.all_tensors(), True, offload, str(tmp_path))
    start, end = buffer_range(snapshot.store)
    for saved in snapshot.copies.values():
        assert isinstance(saved, np.ndarray) and start <= saved.__array_interface__["data"][0] < end
    fp = capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch, keep_step=True)  # moves them again
    assert fp.step.update_norms
    adapter.restore(snapshot)
    after = ms_values(setup)
    for key, value in before.items():
        np.testing.assert_array_equal(after[key], value, err_msg=key)
    assert list(tmp_path.iterdir()) == []


def test_mindspore_capture_with_disk_offload_rolls_back(make_ms, tmp_path):
    setup = make_ms()
    before = ms_values(setup)
    capture(setup.model, setup.optimizer, setup.loss_fn, setup.batch, offload="disk", offload_dir=str(tmp_path))
    after = ms_values(setup)
    for key, value in before.items():
        np.testing.assert_array_equal(after[key], value, err_msg=key)
    assert list(tmp_path.iterdir()) == []
