"""A Lightning training script for `acclint capture` (zero edits) and the Lightning callback.

    python lightning_train.py LR [callback OUTPUT]
"""

import sys
import warnings

import lightning
import numpy as np
import torch


class Regression(lightning.LightningModule):
    def __init__(self, lr: float) -> None:
        super().__init__()
        self.lr = lr
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr)


def main() -> None:
    callbacks = []
    if len(sys.argv) > 3 and sys.argv[2] == "callback":
        from acclint.integrations.lightning import AcclintCallback

        callbacks.append(AcclintCallback(output=sys.argv[3]))
    lightning.seed_everything(0, verbose=False)
    data = np.random.default_rng(0).standard_normal((64, 9)).astype(np.float32)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(data[:, :8]), torch.from_numpy(data[:, 8:]))
    trainer = lightning.Trainer(max_steps=3, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                                enable_progress_bar=False, enable_model_summary=False, callbacks=callbacks)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*does not have many workers.*")
        trainer.fit(Regression(float(sys.argv[1])), torch.utils.data.DataLoader(dataset, batch_size=8))
    print("trained to the end", flush=True)


if __name__ == "__main__":
    main()
