"""What `acclint capture` adds to a training run: to the captured step, to the steps after it, and
to the start of each Python process.

The models and the step are bench_runtime's (a cheap step: six 4096x4096 Linear layers, 100.7M
parameters; an expensive one: the 97.7M-parameter decoder), plus a small one (the nanoGPT-style
test model's size). Each model trains `--steps` plain steps (zero_grad, forward, backward, AdamW)
from the same seed `--repeats` times as is and as many times under the hooks `acclint capture` installs in the
command's processes (`TorchStepObserver`, writing the fingerprint to a temporary file after step
0), after one warm-up run. The runs alternate so that drift of a shared machine hits both alike,
and each step's best time over the repeats counts, in CPU time of the process (all its threads:
what the hooks cost, less sensitive to other jobs on a shared machine) and in wall time.

Reported: step 0 hooked against step 0 plain (what the capture costs: hashing and statistics of
the weights, the update snapshot, forward hooks on every module); the median of the later steps
hooked against plain (the hooks are removed after step 0, so this should be 1.00x); and the start
of `python -c "import torch"` with and without the start-up hook.

    PYTHONPATH=src python benchmarks/bench_capture_hooks.py                 # all three models
    PYTHONPATH=src python benchmarks/bench_capture_hooks.py --model small --steps 6
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from bench_runtime import build, plain_step

from acclint.runtime_checks.capture_hooks import launch
from acclint.runtime_checks.capture_hooks.settings import PATH_VARIABLE, Settings
from acclint.runtime_checks.capture_hooks.torch_observer import TorchStepObserver

SIZES = {  # bench_runtime's model and the sizes it is built with
    "small": ("gpt", dict(vocab=64, d_model=32, layers=2, heads=2, seq=16, batch=4)),
    "linear": ("linear", dict(width=4096, linear_layers=6, linear_batch=16)),
    "gpt": ("gpt", dict(vocab=16384, d_model=768, layers=12, heads=12, seq=128, batch=4)),
}


# The small model's step (about 2 ms) is shorter than a scheduler time slice: with two OpenMP
# threads on a shared 2-core machine its time is the other jobs' noise, so it runs on one thread.
SINGLE_THREADED = {"small"}


def train(size: str, steps: int, hooked: bool, folder: Path) -> list[tuple[float, float]]:
    threads = torch.get_num_threads()
    if size in SINGLE_THREADED:
        torch.set_num_threads(1)
    try:
        return _train(size, steps, hooked, folder)
    finally:
        torch.set_num_threads(threads)


def _train(size: str, steps: int, hooked: bool, folder: Path) -> list[tuple[float, float]]:
    name, options = SIZES[size]
    args = argparse.Namespace(device="cpu", **{**SIZES["small"][1], **SIZES["linear"][1], **options})
    torch.manual_seed(0)
    model, batch, loss_fn, _ = build(args, name)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    captured: list = []
    if hooked:
        def finish(fingerprint):
            fingerprint.save(folder / f"{size}.json")
            captured.append(fingerprint)

        def fail(error):
            raise error

        TorchStepObserver(finish, fail).install()
    times = []  # (CPU, wall) seconds per step
    for _ in range(steps):
        cpu, wall = time.process_time(), time.perf_counter()
        plain_step(model, optimizer, loss_fn, batch)
        times.append((time.process_time() - cpu, time.perf_counter() - wall))
    assert not hooked or captured, "the hooks recorded nothing"
    return times


def startup(hooked: bool, repeats: int) -> float:
    """Best wall time of `python -c "import torch"`, with or without the start-up hook."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as folder:
        if hooked:
            settings = Settings(output=str(Path(folder) / "x.json"), status_dir=folder)
            hook = Path(launch.__file__).with_name("site_hook.py")
            (Path(folder) / "sitecustomize.py").write_text(hook.read_text())
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [folder, env.get("PYTHONPATH")]))
            env[PATH_VARIABLE] = str(Path(launch.__file__).resolve().parents[3])
            env.update(settings.environment())
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "import torch"], env=env, check=True)
            best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=(*SIZES, "all"), default="all")
    parser.add_argument("--steps", type=int, default=3, help="training steps per run (step 0 and the ones after)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each kind; the best time of each step counts")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    figures: dict = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    with tempfile.TemporaryDirectory() as folder:
        for size in SIZES if args.model == "all" else [args.model]:
            train(size, 2, False, Path(folder))  # warm-up: first-time costs of torch, not of acclint
            runs: dict[bool, list] = {False: [], True: []}
            for _ in range(args.repeats):
                for hooked_run in (False, True):
                    runs[hooked_run].append(train(size, args.steps, hooked_run, Path(folder)))
            f: dict = {"fingerprint_bytes": (Path(folder) / f"{size}.json").stat().st_size}
            for clock, index in (("cpu", 0), ("wall", 1)):
                # each step's best time over the repeats
                plain, hooked = ([min(run[i][index] for run in runs[h]) for i in range(args.steps)] for h in (False, True))
                f[f"step0_plain_{clock}_s"], f[f"step0_hooked_{clock}_s"] = plain[0], hooked[0]
                f[f"step0_added_{clock}_s"] = hooked[0] - plain[0]
                f[f"later_plain_{clock}_s"] = statistics.median(plain[1:])
                f[f"later_hooked_{clock}_s"] = statistics.median(hooked[1:])
                f[f"later_ratio_{clock}"] = f[f"later_hooked_{clock}_s"] / f[f"later_plain_{clock}_s"]
            figures[size] = f
            for clock in ("cpu", "wall"):
                print(f"{size} ({clock}): step 0 {f[f'step0_plain_{clock}_s']:.3f} s plain, "
                      f"{f[f'step0_hooked_{clock}_s']:.3f} s captured (+{f[f'step0_added_{clock}_s']:.3f} s); later "
                      f"steps {f[f'later_plain_{clock}_s']:.3f} s plain, {f[f'later_hooked_{clock}_s']:.3f} s after "
                      f"the capture ({f[f'later_ratio_{clock}']:.2f}x)", flush=True)
            print(f"{size}: fingerprint {f['fingerprint_bytes'] / 1024:.0f} KiB", flush=True)
    figures["startup_plain_s"], figures["startup_hooked_s"] = startup(False, 3), startup(True, 3)
    print(f"python -c 'import torch': {figures['startup_plain_s']:.3f} s plain, "
          f"{figures['startup_hooked_s']:.3f} s with the start-up hook")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
