"""acclint never breaks the run it watches: each integration, with recording forced to fail, warns
once and the training runs to its end with no hook of acclint's left behind."""

from __future__ import annotations

import warnings

import pytest
from test_runtime_integrations import hf_train, lightning_train, ms_train

from acclint.integrations.parity import RecordingWarning

UNWRITABLE = "/proc/acclint-none/fingerprint.json"


def no_hooks_left(torch) -> bool:
    import torch.nn.modules.module as module_hooks
    import torch.optim.optimizer as optim

    return not (module_hooks._global_forward_hooks or module_hooks._global_forward_pre_hooks
                or optim._global_optimizer_pre_hooks or optim._global_optimizer_post_hooks)


def recording_warnings(caught: list) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, RecordingWarning)]


def failing_forward_record(monkeypatch) -> None:
    """acclint's own forward recording raises (a bug of ours, as a user would meet it)."""
    from acclint.runtime_checks.capture.forward import ForwardRecorder

    def broken(self, *args, **kwargs):
        raise RuntimeError("recording broke")

    monkeypatch.setattr(ForwardRecorder, "_record", broken)


def trained_steps(trainer) -> int:
    state = getattr(trainer, "state", None)  # transformers keeps it in trainer.state, Lightning on the trainer
    return getattr(state, "global_step", None) or trainer.global_step


@pytest.mark.parametrize("trainer", ["transformers", "lightning"])
@pytest.mark.parametrize("how", ["unwritable output", "recording raises"])
def test_torch_trainers_go_on(torch, tmp_path, monkeypatch, trainer, how):
    import importlib

    AcclintCallback = importlib.import_module(f"acclint.integrations.{trainer}").AcclintCallback
    if how == "recording raises":
        failing_forward_record(monkeypatch)
    callback = AcclintCallback(output=UNWRITABLE if how == "unwritable output" else tmp_path / "a.json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        done = (hf_train if trainer == "transformers" else lightning_train)(tmp_path, callback)
    assert trained_steps(done) == 3  # every step ran
    said = recording_warnings(caught)
    assert len(said) == 1 and "step 0 was not recorded" in said[0]
    assert ("cannot write" if how == "unwritable output" else "recording broke") in said[0]
    assert callback.fingerprint is None and no_hooks_left(torch)


@pytest.mark.parametrize("how", ["unwritable output", "capture raises"])
def test_mindspore_model_train_goes_on(ms, tmp_path, monkeypatch, how):
    import numpy as np

    from acclint.integrations.mindspore import AcclintCallback

    if how == "capture raises":
        import importlib

        capture_module = importlib.import_module("acclint.runtime_checks.capture.capture")

        def broken(*args, **kwargs):
            raise RuntimeError("capture broke")

        monkeypatch.setattr(capture_module, "capture", broken)
    callback = AcclintCallback(output=UNWRITABLE if how == "unwritable output" else tmp_path / "a.json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net = ms_train(ms, callback)
    said = recording_warnings(caught)
    assert len(said) == 1 and "step 0 was not recorded" in said[0]
    assert callback.fingerprint is None
    # the network trained: its first weight moved from what the same seed initialises
    ms.set_seed(0)
    fresh = ms.nn.Dense(8, 16)
    assert not np.allclose(net[0].weight.asnumpy(), fresh.weight.asnumpy())


def test_a_reference_that_cannot_be_read_warns_and_training_goes_on(torch, tmp_path):
    from acclint.integrations.lightning import AcclintCallback

    stranger = tmp_path / "other.json"
    stranger.write_text('{"x": 1}')
    callback = AcclintCallback(output=tmp_path / "a.json", reference=stranger, on_mismatch="warn")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = lightning_train(tmp_path, callback)
    assert trainer.global_step == 3 and (tmp_path / "a.json").exists()
    assert any("not an acclint fingerprint" in str(w.message) for w in caught)
