"""The one-line callbacks, each with its real trainer: transformers.Trainer (a tiny GPT-2 built from a
config), lightning.Trainer, and MindSpore's Model.train. Nothing is downloaded."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import require

from acclint.runtime import compare, load


# ---------------------------------------------------------------------------- transformers
def hf_train(tmp_path: Path, callback, beta2: float = 0.999, steps: int = 3, learning_rate: float = 1e-3,
             warmup_steps: int = 0, batch_size: int = 4, accumulation: int = 2) -> Any:
    transformers = require("transformers")
    torch = require("torch")

    class Tokens(torch.utils.data.Dataset):
        def __init__(self) -> None:
            self.ids = torch.from_numpy(np.random.default_rng(0).integers(0, 64, size=(32, 16)))

        def __len__(self) -> int:
            return len(self.ids)

        def __getitem__(self, index: int) -> dict:
            return {"input_ids": self.ids[index], "labels": self.ids[index]}

    transformers.set_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=16, resid_pdrop=0.0, embd_pdrop=0.0,
        attn_pdrop=0.0, bos_token_id=0, eos_token_id=0))
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "hf"), max_steps=steps, per_device_train_batch_size=batch_size, gradient_accumulation_steps=accumulation,
        learning_rate=learning_rate, warmup_steps=warmup_steps, adam_beta2=beta2, max_grad_norm=1.0, report_to=[], save_strategy="no",
        logging_strategy="no", use_cpu=True, seed=0, dataloader_num_workers=0, disable_tqdm=True)
    trainer = transformers.Trainer(model=model, args=args, train_dataset=Tokens(), callbacks=[callback])
    trainer.train()
    return trainer


@pytest.fixture(scope="module")
def hf_reference(tmp_path_factory) -> Path:
    from acclint.integrations.transformers import AcclintCallback

    folder = tmp_path_factory.mktemp("hf")
    callback = AcclintCallback(output=folder / "a.json")
    hf_train(folder, callback)
    return folder / "a.json"


def test_transformers_trainer_step_0(hf_reference):
    fingerprint = load(hf_reference)
    assert fingerprint.model == "GPT2LMHeadModel"
    assert fingerprint.optimizer.type == "adamw" and fingerprint.optimizer.extra["clip-grad"] == 1.0
    # what reached the model in each of the two accumulated micro-batches (the Trainer adds num_items_in_batch)
    assert {v.path for v in fingerprint.batch} >= {"0.input_ids", "0.labels", "1.input_ids", "1.labels"}
    assert fingerprint.step.grad_norm > 0 and fingerprint.forward


def test_transformers_two_runs_at_parity(hf_reference, tmp_path):
    from acclint.integrations.transformers import AcclintCallback

    callback = AcclintCallback(output=tmp_path / "b.json", reference=hf_reference, on_mismatch="raise")
    hf_train(tmp_path, callback)
    result = callback.step_zero.outcome.result
    assert result.ok
    # the Trainer's two groups (decay / no decay), equal here (weight_decay 0.0): shown as two
    assert len(load(hf_reference).optimizer.groups) == 2
    optimizer = next(o for o in result.stages if o.stage == "optimizer")
    assert optimizer.summary == "adamw, 2 group(s) (1 with distinct settings)"


@pytest.mark.parametrize("on_mismatch", ["raise", "exit", "warn"])
def test_transformers_mismatch_modes(hf_reference, tmp_path, on_mismatch, capsys):
    from acclint.integrations.transformers import AcclintCallback

    callback = AcclintCallback(output=tmp_path / "c.json", reference=hf_reference, on_mismatch=on_mismatch)
    if on_mismatch == "raise":
        with pytest.raises(AssertionError, match=r"\[optimizer-hparam\] adam-beta2"):
            hf_train(tmp_path, callback, beta2=0.99)
    elif on_mismatch == "exit":
        with pytest.raises(SystemExit) as stopped:
            hf_train(tmp_path, callback, beta2=0.99)
        assert stopped.value.code == 1
        assert "[optimizer-hparam] adam-beta2" in capsys.readouterr().out  # as `acclint compare` prints it
    else:
        with pytest.warns(UserWarning, match="adam-beta2"):
            hf_train(tmp_path, callback, beta2=0.99)  # and training ran to its end
    first = compare(load(tmp_path / "c.json"), load(hf_reference)).causes[0]
    assert (first.kind, first.name) == ("optimizer-hparam", "adam-beta2")


def test_a_reference_that_does_not_exist_is_said_at_once(tmp_path):
    from acclint.integrations.transformers import AcclintCallback

    with pytest.raises(FileNotFoundError, match="does not exist"):
        AcclintCallback(reference=tmp_path / "missing.json")
    with pytest.raises(ValueError, match="on_mismatch must be one of"):
        AcclintCallback(on_mismatch="ignore")


# ---------------------------------------------------------------------------- lightning
def lightning_train(tmp_path: Path, callback, lr: float = 0.01) -> Any:
    lightning = require("lightning")
    torch = require("torch")

    class Regression(lightning.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))

        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=lr)

    lightning.seed_everything(0, verbose=False)
    data = np.random.default_rng(0).standard_normal((64, 9)).astype(np.float32)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(data[:, :8]), torch.from_numpy(data[:, 8:]))
    trainer = lightning.Trainer(max_steps=3, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                                enable_progress_bar=False, enable_model_summary=False, default_root_dir=str(tmp_path),
                                callbacks=[callback], accumulate_grad_batches=2, gradient_clip_val=0.5)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*does not have many workers.*")
        trainer.fit(Regression(), torch.utils.data.DataLoader(dataset, batch_size=8))
    return trainer


def test_lightning_step_0_parity_and_a_changed_lr(torch, tmp_path):
    from acclint.integrations.lightning import AcclintCallback

    lightning_train(tmp_path, AcclintCallback(output=tmp_path / "a.json"))
    fingerprint = load(tmp_path / "a.json")
    # the network training_step calls, as `acclint capture` records it without the callback
    assert fingerprint.model == "Sequential" and fingerprint.step.loss > 0
    assert [v.shape for v in fingerprint.batch] == [[8, 8], [8, 8]]  # its inputs in two accumulated batches
    assert fingerprint.optimizer.extra["clip-grad"] == 0.5
    same = AcclintCallback(output=tmp_path / "b.json", reference=tmp_path / "a.json", on_mismatch="raise")
    lightning_train(tmp_path, same)
    assert same.step_zero.outcome.result.ok
    other = AcclintCallback(output=tmp_path / "c.json", reference=tmp_path / "a.json", on_mismatch="warn")
    with pytest.warns(UserWarning, match=r"\[optimizer-hparam\] lr"):
        lightning_train(tmp_path, other, lr=0.02)
    assert other.step_zero.outcome.result.causes[0].name == "lr"


# ---------------------------------------------------------------------------- MindSpore
def ms_train(ms, callback, lr: float = 0.01) -> Any:
    nn = ms.nn
    ms.set_seed(0)
    net = nn.SequentialCell([nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 1)])
    data = np.random.default_rng(0).standard_normal((32, 9)).astype(np.float32)
    dataset = ms.dataset.NumpySlicesDataset((data[:, :8], data[:, 8:]), column_names=["x", "y"], shuffle=False)
    model = ms.train.Model(net, loss_fn=nn.MSELoss(), optimizer=nn.Adam(net.trainable_params(), learning_rate=lr))
    model.train(1, dataset.batch(8), callbacks=[callback], dataset_sink_mode=False)
    return net


def test_mindspore_model_train_step_0(ms, tmp_path):
    from acclint.integrations.mindspore import AcclintCallback

    first = AcclintCallback(output=tmp_path / "a.json")
    ms_train(ms, first)
    fingerprint = load(tmp_path / "a.json")
    assert fingerprint.framework == "mindspore" and fingerprint.step.loss > 0
    assert [v.shape for v in fingerprint.batch] == [[8, 8], [8, 1]]
    same = AcclintCallback(output=tmp_path / "b.json", reference=tmp_path / "a.json", on_mismatch="raise")
    ms_train(ms, same)
    assert same.outcome.result.ok
    other = AcclintCallback(output=tmp_path / "c.json", reference=tmp_path / "a.json", on_mismatch="raise")
    with pytest.raises(AssertionError, match=r"\[optimizer-hparam\]"):
        ms_train(ms, other, lr=0.02)
