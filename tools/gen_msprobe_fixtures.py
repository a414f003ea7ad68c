"""Regenerate tests/runtime/fixtures/msprobe/: real msprobe dumps of tiny training runs.

Each case trains a two-layer MLP (PyTorch CPU or MindSpore CPU) for two steps under msprobe's
PrecisionDebugger and keeps only the small JSON files msprobe writes for step 0 (dump.json and
construct.json; never stack.json, whose call stacks name this machine's paths).

    python -m venv --system-site-packages /work/venv-msprobe
    /work/venv-msprobe/bin/pip install mindstudio-probe "numpy<2"      # numpy<2 for MindSpore
    /work/venv-msprobe/bin/python tools/gen_msprobe_fixtures.py

Both frameworks start from the same weights and batch (drawn here with numpy), so a MindSpore case
and a PyTorch case differ only where the case says. MindSpore on CPU: msprobe 26.x computes norms
with `mint.norm`, which has no CPU kernel in MindSpore 2.10, and then writes `"data": {}`; hiding
`mint.norm` before msprobe is imported makes it fall back to `ops.norm` (docs/msprobe.md).

Two layouts cannot come from msprobe 26.x itself and are derived here from a real dump, as the
msprobe 8.x documentation describes them: the 8.x `step0/rank/` folder (26.x writes `proc<PID>/`
outside torch.distributed and `rank<N>/` under it), and a truncated dump.json (a killed run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "runtime" / "fixtures" / "msprobe"
KEPT = ("dump.json", "construct.json")

# case -> how it is trained (framework, msprobe level, activation, lr, summary mode, ranks).
BASE = {"framework": "torch", "level": "mix", "act": "relu", "lr": 0.1, "summary": "statistics", "ranks": 1}
CASES = {
    "torch_L0": {"level": "L0"},
    "torch_L1": {"level": "L1"},
    "torch_mix": {},
    "torch_mix_rerun": {},
    "torch_mix_gelu": {"act": "gelu"},
    "torch_mix_lr": {"lr": 0.2},
    "torch_mix_md5": {"summary": "md5"},
    "torch_mix_md5_rerun": {"summary": "md5"},
    "torch_L0_gelu": {"level": "L0", "act": "gelu"},
    "torch_L1_gelu": {"level": "L1", "act": "gelu"},
    "ms_L0": {"framework": "mindspore", "level": "L0"},
    "ms_L0_gelu": {"framework": "mindspore", "level": "L0", "act": "gelu"},
    "torch_dist_mix": {"ranks": 2},
    "torch_dist_mix_lr": {"ranks": 2, "lr": 0.2},
}


def weights_and_batch(seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    return {
        "fc1.weight": (rng.standard_normal((16, 8)) * 0.3).astype("float32"),
        "fc1.bias": (rng.standard_normal(16) * 0.1).astype("float32"),
        "fc2.weight": (rng.standard_normal((4, 16)) * 0.3).astype("float32"),
        "fc2.bias": (rng.standard_normal(4) * 0.1).astype("float32"),
        "x": rng.standard_normal((4, 8)).astype("float32"),
        "y": rng.standard_normal((4, 4)).astype("float32"),
    }


def msprobe_config(dump_path: str, case: dict) -> dict:
    return {"task": "statistics", "dump_path": dump_path, "rank": [], "step": [0], "level": case["level"],
            "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": case["summary"]}}


def train_torch(case: dict, config_path: str, rank: int = 0) -> None:
    import torch
    from msprobe.pytorch import PrecisionDebugger

    data = weights_and_batch()

    class MLP(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = torch.nn.Linear(8, 16)
            self.act = torch.nn.GELU() if case["act"] == "gelu" else torch.nn.ReLU()
            self.fc2 = torch.nn.Linear(16, 4)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    model = MLP()
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.copy_(torch.from_numpy(data[name]))
    optimizer = torch.optim.SGD(model.parameters(), lr=case["lr"])
    shard = slice(rank * 2, rank * 2 + 2) if case["ranks"] > 1 else slice(None)
    x, y = torch.from_numpy(data["x"][shard]), torch.from_numpy(data["y"][shard])
    debugger = PrecisionDebugger(config_path=config_path)
    for _ in range(2):
        debugger.start(model)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        debugger.stop()
        debugger.step()


def train_torch_rank(rank: int, case: dict, config_path: str, port: str) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=case["ranks"])
    try:
        train_torch(case, config_path, rank)
    finally:
        dist.destroy_process_group()


def train_mindspore(case: dict, config_path: str) -> None:
    import mindspore as ms
    from mindspore import mint, nn

    del mint.norm  # no CPU kernel in MindSpore 2.10: msprobe falls back to ops.norm (see the module doc)
    from msprobe.mindspore import PrecisionDebugger

    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_device("CPU")
    data = weights_and_batch()

    class MLP(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Dense(8, 16)
            self.act = nn.GELU() if case["act"] == "gelu" else nn.ReLU()  # nn.GELU(): tanh form by default
            self.fc2 = nn.Dense(16, 4)

        def construct(self, x):
            return self.fc2(self.act(self.fc1(x)))

    model = MLP()
    for param in model.trainable_params():
        param.set_data(ms.Tensor(data[param.name]))
    optimizer = nn.SGD(model.trainable_params(), learning_rate=case["lr"])
    x, y = ms.Tensor(data["x"]), ms.Tensor(data["y"])
    grad_fn = ms.value_and_grad(lambda a, b: nn.MSELoss()(model(a), b), None, optimizer.parameters)
    debugger = PrecisionDebugger(config_path=config_path)
    for _ in range(2):
        debugger.start(model)
        _loss, grads = grad_fn(x, y)
        optimizer(grads)
        debugger.stop()
        debugger.step()


def run_case(name: str, case: dict, dump_path: str) -> None:
    """One case in this process (called in a fresh interpreter: msprobe keeps global state)."""
    config_path = os.path.join(dump_path, "config.json")
    os.makedirs(dump_path, exist_ok=True)
    with open(config_path, "w", encoding="utf-8") as handle:
        json.dump(msprobe_config(os.path.join(dump_path, "dump"), case), handle)
    if case["framework"] == "mindspore":
        train_mindspore(case, config_path)
    elif case["ranks"] > 1:
        import torch.multiprocessing as mp

        mp.spawn(train_torch_rank, args=(case, config_path, str(29500 + os.getpid() % 1000)), nprocs=case["ranks"])
    else:
        train_torch(case, config_path)


def keep(dump: Path, target: Path) -> None:
    """Copy the small JSON files of step 0 into `target` (the case's dump_path)."""
    shutil.rmtree(target, ignore_errors=True)
    for file in sorted((dump / "step0").glob("*/*.json")):
        if file.name in KEPT:
            destination = target / "step0" / file.parent.name / file.name
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_text(file.read_text(encoding="utf-8"), encoding="utf-8")
    if not any(target.rglob("dump.json")):
        raise SystemExit(f"msprobe wrote no dump.json under {dump}")


def derived_layouts() -> None:
    """The 8.x `rank/` layout and a truncated dump.json, from the real torch_L0 dump."""
    source = next((FIXTURES / "torch_L0" / "step0").glob("*/dump.json"))
    legacy = FIXTURES / "legacy_8x_rank" / "step0" / "rank" / "dump.json"
    truncated = FIXTURES / "truncated" / "step0" / "proc1" / "dump.json"
    for target in (legacy, truncated):
        shutil.rmtree(target.parents[2], ignore_errors=True)
        target.parent.mkdir(parents=True)
    text = source.read_text(encoding="utf-8")
    legacy.write_text(text, encoding="utf-8")
    truncated.write_text(text[: len(text) * 3 // 5], encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="cases to regenerate (default: all)")
    parser.add_argument("--run", help=argparse.SUPPRESS)  # internal: run one case in this process
    parser.add_argument("--dump-path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        run_case(args.run, {**BASE, **CASES[args.run]}, args.dump_path)
        return
    for name in args.cases or CASES:
        with tempfile.TemporaryDirectory() as scratch:
            subprocess.run([sys.executable, __file__, "--run", name, "--dump-path", scratch], check=True,
                           stdout=subprocess.DEVNULL)
            keep(Path(scratch) / "dump", FIXTURES / name)
        print("wrote", FIXTURES / name)
    derived_layouts()


if __name__ == "__main__":
    main()
