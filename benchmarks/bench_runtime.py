"""Cost of the runtime companion at about 100M parameters: time and memory against a plain step.

Two models, each measured in one run:
  * gpt (the expensive step): a 97.7M-parameter decoder, batch 4x128 tokens, AdamW;
  * linear (the cheap step): six 4096x4096 Linear layers (100.7M parameters), batch 16, AdamW,
    where the step itself costs little and everything capture adds shows.

Time: a plain training step (zero_grad, forward, backward, AdamW step) with fresh optimizer state,
which is the step capture() wraps (capture rolls back, so it always takes a first step); capture()
of that step (one extra forward, the snapshot and rollback, hashing and statistics, the batch, and
forward hooks recording every module's output and every leaf's inputs); capture(activations=False);
the fingerprint's size on disk without full tensors, and compare() of two fingerprints.

Memory (--memory): the peak above the model's resident memory during a plain step, capture()
and capture(offload="disk"); the difference is what capture costs. On CUDA it is read from the
allocator (torch.cuda.max_memory_allocated) for the device and from RSS for the host; on the CPU
the device is the host, so RSS is sampled (anonymous and file-backed pages apart: the disk
snapshot's pages belong to the page cache, which the kernel writes back and reclaims).

Targets (issue 12): capture <= 1.5x the plain step on both models; fingerprint < 5 MB; the device
overhead of capture no more than the largest tensor plus a small constant.

    PYTHONPATH=src python benchmarks/bench_runtime.py                      # both models, time
    PYTHONPATH=src python benchmarks/bench_runtime.py --model linear --memory
    PYTHONPATH=src python benchmarks/bench_runtime.py --model linear --memory --device cuda
    PYTHONPATH=src python benchmarks/bench_runtime.py --layers 2 --vocab 4096 --model gpt  # smoke run
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn.functional as F

from acclint.runtime import capture, compare

SIZE_LIMIT_BYTES = 5 * 1024 * 1024
RATIO_LIMIT = 1.5
MiB = 1024 * 1024


class TinyGPT(torch.nn.Module):
    """Decoder-style transformer: token embedding (tied head), pre-norm layers, final LayerNorm."""

    def __init__(self, vocab: int, d_model: int, layers: int, heads: int, seq: int) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d_model)
        self.position = torch.nn.Embedding(seq, d_model)
        layer = torch.nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.0, batch_first=True,
                                                 norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(d_model)
        self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        hidden = self.embed(tokens) + self.position(positions)
        hidden = self.blocks(hidden, mask=self.mask[: tokens.shape[1], : tokens.shape[1]], is_causal=True)
        return self.norm(hidden) @ self.embed.weight.T


def gpt_loss(model: torch.nn.Module, batch: torch.Tensor) -> torch.Tensor:
    logits = model(batch[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))


def linear_loss(model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    inputs, targets = batch
    return F.mse_loss(model(inputs), targets)


def build(args: argparse.Namespace, name: str) -> tuple[torch.nn.Module, Any, Callable, str]:
    """(model, batch, loss_fn, description) on args.device."""
    torch.manual_seed(0)
    device = torch.device(args.device)
    if name == "gpt":
        model = TinyGPT(args.vocab, args.d_model, args.layers, args.heads, args.seq + 1).to(device)
        batch: Any = torch.randint(0, args.vocab, (args.batch, args.seq + 1), device=device)
        return model, batch, gpt_loss, f"decoder, batch {args.batch}x{args.seq} tokens"
    width = args.width
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(args.linear_layers)]).to(device)
    batch = (torch.randn(args.linear_batch, width, device=device), torch.randn(args.linear_batch, width, device=device))
    return model, batch, linear_loss, f"{args.linear_layers} x Linear({width}, {width}), batch {args.linear_batch}"


def plain_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, loss_fn: Callable, batch: Any) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss_fn(model, batch).backward()
    optimizer.step()
    synchronize()


def synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(function, repeats: int, before=None) -> list[tuple[float, float]]:
    """(wall seconds, CPU seconds of this process over all its threads) per run.

    CPU time is what the work costs whatever else the machine is doing; wall time is what you wait.
    """
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        times.append((time.perf_counter() - wall, time.process_time() - cpu))
    return times


def measure_speed(model: torch.nn.Module, batch: Any, loss_fn: Callable, repeats: int) -> dict[str, Any]:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    plain_step(model, optimizer, loss_fn, batch)  # warm-up (allocator, kernels), not timed

    def fresh_state() -> None:  # capture always takes a first step (it rolls back); so does this
        optimizer.zero_grad(set_to_none=True)
        optimizer.state.clear()

    def captured_step(**options: Any) -> Any:
        fingerprint = capture(model, optimizer, loss_fn, batch, **options)
        synchronize()
        return fingerprint

    # Plain steps and captures alternate so that load from other processes hits both alike; the
    # limit is checked on CPU time (other processes do not inflate it), wall times are shown too.
    plain, captured, without, fingerprints = [], [], [], []
    for _ in range(repeats):
        plain += timed(lambda: plain_step(model, optimizer, loss_fn, batch), 1, fresh_state)
        fresh_state()
        captured += timed(lambda: fingerprints.append(captured_step()), 1)
        without += timed(lambda: captured_step(activations=False), 1)
    again = captured_step()  # capture rolled back: the same step again
    steady = timed(lambda: plain_step(model, optimizer, loss_fn, batch), repeats)
    fresh_state()

    with tempfile.TemporaryDirectory() as directory:
        size = fingerprints[0].save(Path(directory) / "fp.json").stat().st_size
    compare_times = timed(lambda: compare(fingerprints[-1], again), repeats)
    result = compare(fingerprints[-1], again)

    def wall(runs):
        return [w for w, _ in runs]

    def cpu(runs):
        return [c for _, c in runs]

    plain_s, capture_s = min(wall(plain)), min(wall(captured))
    return {
        "plain_step_s": round(plain_s, 3),
        "steady_step_s": round(min(wall(steady)), 3),
        "capture_s": round(capture_s, 3),
        "plain_step_cpu_s": round(min(cpu(plain)), 3),
        "capture_cpu_s": round(min(cpu(captured)), 3),
        "capture_over_plain_step_cpu": round(min(cpu(captured)) / min(cpu(plain)), 3),
        "capture_over_plain_step_wall_best": round(capture_s / plain_s, 3),
        "capture_over_plain_step_wall_median": round(statistics.median(wall(captured)) / statistics.median(wall(plain)), 3),
        "capture_without_activations_cpu_s": round(min(cpu(without)), 3),
        "capture_without_activations_over_plain_step_cpu": round(min(cpu(without)) / min(cpu(plain)), 3),
        "activation_records": len(fingerprints[0].forward or []),
        "fingerprint_bytes": size,
        "compare_s": round(statistics.median(wall(compare_times)), 4),
        "repeat_captures_compare_clean": result.ok,
    }


class HostPeak:
    """Peak resident memory of this process above its level at the start, sampled every millisecond:
    anonymous pages (heap, tensors) and file-backed pages (a memory-mapped offload file) apart."""

    FIELDS = ("RssAnon", "RssFile", "RssShmem")

    def __init__(self) -> None:
        self.base = self.read()
        self.peak = dict(self.base)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @classmethod
    def read(cls) -> dict[str, int]:
        """{"anon": private and shared anonymous bytes, "file": file-backed bytes} resident now."""
        values = {}
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                key, _, rest = line.partition(":")
                if key in cls.FIELDS:
                    values[key] = int(rest.split()[0]) * 1024
        return {"anon": values["RssAnon"] + values["RssShmem"], "file": values["RssFile"]}

    def _sample(self) -> None:
        while not self._stop.wait(0.001):
            for key, value in self.read().items():
                self.peak[key] = max(self.peak[key], value)

    def __enter__(self) -> "HostPeak":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        for key, value in self.read().items():
            self.peak[key] = max(self.peak[key], value)

    def above(self, key: str) -> int:
        return self.peak[key] - self.base[key]


def measure_memory(model: torch.nn.Module, batch: Any, loss_fn: Callable, cuda: bool) -> dict[str, Any]:
    """Peak memory above the model's resident level for a plain step and for captures; the capture
    overheads are the differences (the step's own gradients and AdamW state are in both)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    plain_step(model, optimizer, loss_fn, batch)  # warm-up: kernels, allocator pools, library buffers
    capture(model, optimizer, loss_fn, batch, offload="disk")
    largest = max(p.numel() * p.element_size() for p in model.parameters())
    parameters = sum(p.numel() * p.element_size() for p in model.parameters())

    def run(name: str, function: Callable[[], Any]) -> dict[str, int]:
        optimizer.zero_grad(set_to_none=True)
        optimizer.state.clear()
        synchronize()
        if cuda:
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        with HostPeak() as host:
            function()
            synchronize()
        peaks = {"host_anon": host.above("anon"), "host_file": host.above("file")}
        if cuda:
            peaks["device"] = torch.cuda.max_memory_allocated() - base
        return peaks

    with tempfile.TemporaryDirectory() as directory:
        runs = {
            "plain_step": run("plain", lambda: plain_step(model, optimizer, loss_fn, batch)),
            "capture_host": run("host", lambda: capture(model, optimizer, loss_fn, batch)),
            "capture_disk": run("disk", lambda: capture(model, optimizer, loss_fn, batch, offload="disk",
                                                        offload_dir=directory)),
        }
    figures: dict[str, Any] = {"parameter_bytes": parameters, "largest_tensor_bytes": largest, "peaks": runs}
    for mode in ("capture_host", "capture_disk"):
        for key in runs[mode]:
            figures[f"{mode}_overhead_{key}_bytes"] = runs[mode][key] - runs["plain_step"][key]
    return figures


def print_speed(figures: dict[str, Any], repeats: int) -> None:
    print(f"  plain training step (first step, best of {repeats}): {figures['plain_step_s']:.3f} s wall, "
          f"{figures['plain_step_cpu_s']:.3f} s CPU (steady-state step {figures['steady_step_s']:.3f} s wall)")
    print(f"  capture (best of {repeats}):                        {figures['capture_s']:.3f} s wall, "
          f"{figures['capture_cpu_s']:.3f} s CPU")
    print(f"  capture / plain step:                              {figures['capture_over_plain_step_cpu']:.2f}x CPU time "
          f"(limit {RATIO_LIMIT}x); wall {figures['capture_over_plain_step_wall_best']:.2f}x best, "
          f"{figures['capture_over_plain_step_wall_median']:.2f}x median")
    print(f"  capture without activations:                       {figures['capture_without_activations_cpu_s']:.3f} s CPU, "
          f"{figures['capture_without_activations_over_plain_step_cpu']:.2f}x the plain step")
    print(f"  fingerprint size without full tensors:             {figures['fingerprint_bytes'] / 1024:.1f} KiB (limit 5 MB), "
          f"{figures['activation_records']} activation records")
    print(f"  compare of two fingerprints:                       {figures['compare_s'] * 1000:.1f} ms; "
          f"two captures of the same step compare clean: {figures['repeat_captures_compare_clean']}")


def print_memory(figures: dict[str, Any]) -> None:
    print(f"  parameters {figures['parameter_bytes'] / MiB:.0f} MiB, largest tensor "
          f"{figures['largest_tensor_bytes'] / MiB:.0f} MiB; peak above the model, in MiB:")
    for name, peaks in figures["peaks"].items():
        shown = ", ".join(f"{key} {value / MiB:.0f}" for key, value in peaks.items())
        print(f"    {name:13s} {shown}")
    for mode in ("capture_host", "capture_disk"):
        shown = ", ".join(f"{key} {figures[f'{mode}_overhead_{key}_bytes'] / MiB:+.0f}"
                          for key in figures["peaks"][mode])
        print(f"  {mode} overhead over the plain step: {shown} MiB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("gpt", "linear", "both"), default="both")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--memory", action="store_true", help="also measure peak memory (see the docstring)")
    parser.add_argument("--speed", action=argparse.BooleanOptionalAction, default=True, help="measure time (default)")
    parser.add_argument("--vocab", type=int, default=16384)
    parser.add_argument("--d-model", type=int, default=768)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--width", type=int, default=4096, help="linear model: layer width")
    parser.add_argument("--linear-layers", type=int, default=6)
    parser.add_argument("--linear-batch", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device here")

    print(f"{torch.get_num_threads()} torch threads, torch {torch.__version__}, device {args.device}")
    results: dict[str, Any] = {}
    within = True
    for name in ("gpt", "linear") if args.model == "both" else (args.model,):
        model, batch, loss_fn, description = build(args, name)
        parameters = sum(p.numel() for p in model.parameters())
        print(f"{name}: {parameters / 1e6:.1f}M parameters, {description}")
        figures: dict[str, Any] = {"parameters": parameters}
        if args.speed:
            figures.update(measure_speed(model, batch, loss_fn, args.repeats))
            print_speed(figures, args.repeats)
            within &= (figures["capture_over_plain_step_cpu"] <= RATIO_LIMIT
                       and figures["fingerprint_bytes"] < SIZE_LIMIT_BYTES and figures["repeat_captures_compare_clean"])
        if args.memory:
            figures["memory"] = measure_memory(model, batch, loss_fn, cuda)
            print_memory(figures["memory"])
        results[name] = figures
        del model, batch
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    print("WITHIN LIMITS" if within else "OVER LIMITS")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
