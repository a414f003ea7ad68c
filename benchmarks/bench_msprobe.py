"""Cost of reading and comparing two msprobe dumps of about 100 MB each (`acclint compare A B`).

The dumps are generated here in msprobe 26.x's statistics format at level mix, shaped like the real
fixtures (tests/runtime/fixtures/msprobe): per layer a Linear module with its weights, the
`Functional.linear` and activation calls inside it, the backward of each, `parameters_grad`, and the
optimizer's `Tensor.add_` calls. The right dump changes one activation half-way through the network,
so the verdict must walk the whole forward pass, and every later node is a consequence.

Measured in a fresh process: CPU and wall time of compare_dumps() (read both dump.json files,
match, walk, verdict text) and the process's peak RSS (ru_maxrss) above its RSS before reading.
Targets (issue 31): under 10 s and under 1 GB. The time judged is the CPU time: on a shared machine
(the load average is printed) the wall time also counts the other processes' turns.

    PYTHONPATH=src python benchmarks/bench_msprobe.py              # 100 MB per dump
    PYTHONPATH=src python benchmarks/bench_msprobe.py --mb 5       # smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

TIME_LIMIT_S = 10.0
MEMORY_LIMIT_MB = 1024


def _tensor(rng: random.Random, shape: list[int], grad: bool = True) -> dict:
    scale = rng.uniform(0.5, 2.0)
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": shape, "Max": scale * 3.1,
            "Min": -scale * 2.9, "Mean": scale * 0.01, "Norm": scale * 40.0, "requires_grad": grad}


def _layer_entries(rng: random.Random, index: int, act: str, width: int, batch: int) -> list[tuple[str, dict]]:
    x, w, b = [batch, width], [width, width], [width]
    params = {"weight": _tensor(rng, w), "bias": _tensor(rng, b)}
    return [
        (f"Functional.linear.{index}.forward", {"input_args": [_tensor(rng, x), params["weight"], params["bias"]],
                                                "input_kwargs": {}, "output": [_tensor(rng, x)]}),
        (f"Module.layers.{index}.fc.Linear.forward.0", {"input_args": [_tensor(rng, x)], "input_kwargs": {},
                                                        "output": [_tensor(rng, x)], "parameters": params}),
        (f"Functional.{act}.{index}.forward", {"input_args": [_tensor(rng, x)], "input_kwargs": {"inplace": {
            "type": "bool", "value": False}}, "output": [_tensor(rng, x)]}),
    ]


def write_dump(path: Path, megabytes: float, changed_layer: int | None, seed: int = 0) -> int:
    """A level-mix statistics dump.json of about `megabytes`; returns the layer count."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    width, batch = 1024, 8
    sample = json.dumps(dict(_layer_entries(random.Random(0), 0, "relu", width, batch)))
    layers = max(4, int(megabytes * 1e6 / (len(sample) * 2.05)))
    with path.open("w", encoding="utf-8") as out:
        out.write('{"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null, "data": {')
        first = True

        def put(name: str, entry: dict) -> None:
            nonlocal first
            out.write(("" if first else ", ") + json.dumps(name) + ": " + json.dumps(entry))
            first = False

        for index in range(layers):
            act = "gelu" if index == changed_layer else "relu"
            state = rng.getstate()
            for name, entry in _layer_entries(rng, index, act, width, batch):
                if index == changed_layer and name.startswith("Module."):
                    entry["output"][0]["Norm"] *= 1.5  # the changed activation's output differs
                put(name, entry)
            rng.setstate(state)
            rng.random()
        for index in reversed(range(layers)):
            put(f"Functional.linear.{index}.backward", {"input": [_tensor(rng, [batch, width], False)],
                                                        "output": [_tensor(rng, [batch, width], False)]})
            put(f"Module.layers.{index}.fc.Linear.parameters_grad.0", {
                "weight": [_tensor(rng, [width, width], False)], "bias": [_tensor(rng, [width], False)]})
        for index in range(2 * layers):
            put(f"Tensor.add_.{index}.forward", {"input_args": [_tensor(rng, [width, width]),
                                                                _tensor(rng, [width, width], False)],
                                                 "input_kwargs": {"alpha": {"type": "float", "value": -0.1}},
                                                 "output": [_tensor(rng, [width, width])]})
        out.write("}}")
    return layers


MEASURE = r"""
import json, resource, sys, time
from acclint.runtime_checks.dumps.compare_dumps import compare_dumps
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start, cpu = time.perf_counter(), time.process_time()
result = compare_dumps(sys.argv[1], sys.argv[2])
text = result.verdict()
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "peak_mb": peak / 1024,
                  "above_start_mb": (peak - before) / 1024,
                  "ok": result.ok, "first_cause": result.causes[0].name if result.causes else None}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0, help="size of each dump.json in MB")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        left, right = Path(scratch) / "gpu", Path(scratch) / "npu"
        layers = write_dump(left / "step0" / "rank0" / "dump.json", args.mb, None)
        write_dump(right / "step0" / "rank0" / "dump.json", args.mb, layers // 2)
        sizes = [round((side / "step0" / "rank0" / "dump.json").stat().st_size / 1e6, 1) for side in (left, right)]
        done = subprocess.run([sys.executable, "-c", MEASURE, str(left), str(right)], capture_output=True, text=True,
                              check=True)
        figures = json.loads(done.stdout)
    print(f"dump.json sizes: {sizes[0]} MB and {sizes[1]} MB ({layers} layers, level mix, statistics)")
    print(f"compare: {figures['seconds']:.2f} s wall ({figures['cpu_seconds']:.2f} s CPU), "
          f"peak RSS {figures['peak_mb']:.0f} MB "
          f"({figures['above_start_mb']:.0f} MB above the interpreter's start); first cause: {figures['first_cause']}")
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    print(f"load average {load} on {os.cpu_count()} CPUs")
    within = figures["cpu_seconds"] < TIME_LIMIT_S and figures["peak_mb"] < MEMORY_LIMIT_MB
    print(f"targets (< {TIME_LIMIT_S:g} s CPU, < {MEMORY_LIMIT_MB} MB): {'met' if within else 'MISSED'}")
    sys.exit(0 if within else 1)


if __name__ == "__main__":
    main()
