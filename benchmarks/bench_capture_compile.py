"""What `acclint capture` adds to a `torch.compile`d training run: the captured step against the
plain compiled step, measured in the same run.

The model is bench_runtime's (the "small" decoder of bench_capture_hooks by default, or the six
Linear layers), wrapped in `torch.compile` (inductor unless --backend says otherwise). Each
variant runs in a fresh Python process so that neither finds the other's compiled code in
Dynamo's cache: `plain` trains `--steps` steps, `hooked` the same under the hooks `acclint
capture` installs (`TorchStepObserver`, which writes the fingerprint after step 0 and removes
every hook). The processes alternate over `--repeats` rounds and each step's best time counts.

Reported: step 0 captured against step 0 plain (both include Dynamo's tracing and inductor's
compilation, which is what a first compiled step costs), as a ratio (target <= 1.5x), and the
later steps (acclint's hooks are gone: a ratio near 1.00x, or the cost of one recompilation).

    PYTHONPATH=src python benchmarks/bench_capture_compile.py
    PYTHONPATH=src python benchmarks/bench_capture_compile.py --model linear --device cuda
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

RATIO_LIMIT = 1.5
SIZES = {  # bench_runtime's models and the sizes they are built with
    "small": ("gpt", dict(vocab=64, d_model=32, layers=2, heads=2, seq=16, batch=4)),
    "gpt": ("gpt", dict(vocab=4096, d_model=256, layers=4, heads=4, seq=128, batch=8)),
    "linear": ("linear", dict(width=1024, linear_layers=6, linear_batch=16)),
}


def one_run(size: str, steps: int, hooked: bool, backend: str, device: str) -> list[tuple[float, float]]:
    """(CPU, wall) seconds of each step, in this process."""
    import torch

    from bench_runtime import build, plain_step, synchronize
    from acclint.runtime_checks.capture_hooks.torch_observer import TorchStepObserver

    name, options = SIZES[size]
    defaults = {**SIZES["small"][1], **SIZES["linear"][1]}
    args = argparse.Namespace(device=device, **{**defaults, **options})
    torch.manual_seed(0)
    model, batch, loss_fn, _ = build(args, name)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    compiled = torch.compile(model, backend=backend)
    captured: list = []
    if hooked:
        folder = Path(tempfile.mkdtemp())

        def fail(error: BaseException) -> None:
            raise error

        TorchStepObserver(lambda fp: captured.append(fp.save(folder / "fp.json")), fail).install()
    times = []
    for _ in range(steps):
        cpu, wall = time.process_time(), time.perf_counter()
        plain_step(compiled, optimizer, loss_fn, batch)
        synchronize()
        times.append((time.process_time() - cpu, time.perf_counter() - wall))
    assert not hooked or captured, "the hooks recorded nothing"
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=SIZES, default="small")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--one", choices=("plain", "hooked"), help=argparse.SUPPRESS)  # a child process
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args.model, args.steps, args.one == "hooked", args.backend, args.device)))
        return
    runs: dict[str, list] = {"plain": [], "hooked": []}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).parent),
                                                                   os.environ.get("PYTHONPATH")])))
    for _ in range(args.repeats):
        for kind in ("plain", "hooked"):
            with tempfile.TemporaryDirectory() as cache:  # inductor's on-disk cache would favour the second
                done = subprocess.run(
                    [sys.executable, __file__, "--one", kind, "--model", args.model, "--steps", str(args.steps),
                     "--backend", args.backend, "--device", args.device],
                    env={**env, "TORCHINDUCTOR_CACHE_DIR": cache}, capture_output=True, text=True, check=True)
            runs[kind].append(json.loads(done.stdout.strip().splitlines()[-1]))
    figures: dict = {"model": args.model, "backend": args.backend, "device": args.device}
    for clock, index in (("cpu", 0), ("wall", 1)):
        plain, hooked = ([min(run[i][index] for run in runs[kind]) for i in range(args.steps)]
                         for kind in ("plain", "hooked"))
        figures[clock] = {"step0_plain_s": plain[0], "step0_captured_s": hooked[0], "step0_ratio": hooked[0] / plain[0],
                          "later_plain_s": statistics.median(plain[1:]), "later_hooked_s": statistics.median(hooked[1:])}
        f = figures[clock]
        print(f"{args.model}, torch.compile({args.backend}) on {args.device} ({clock}): step 0 {f['step0_plain_s']:.2f} s "
              f"plain, {f['step0_captured_s']:.2f} s captured ({f['step0_ratio']:.2f}x, target <= {RATIO_LIMIT}x); "
              f"later steps {f['later_plain_s'] * 1000:.1f} ms plain, {f['later_hooked_s'] * 1000:.1f} ms after the "
              "capture", flush=True)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
