"""Cost of the runtime companion on a ~100M-parameter model on CPU.

Measures, in one run:
  * a plain training step (zero_grad, forward, backward, AdamW step) with fresh optimizer state,
    which is the step capture() wraps (capture rolls back, so it always takes a first step);
  * capture() of that step (one extra forward, the snapshot/rollback, hashing and statistics,
    the batch, and forward hooks recording every module's output and every leaf's inputs);
  * capture(activations=False), to show what the forward stage adds;
  * the fingerprint's size on disk without full tensors, and compare() of two fingerprints.

Targets (docs/runtime.md): capture <= 2x the plain step; fingerprint < 5 MB.

    PYTHONPATH=src python benchmarks/bench_runtime.py            # ~100M parameters
    PYTHONPATH=src python benchmarks/bench_runtime.py --layers 2  # quick smoke run
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from acclint.runtime import capture, compare

SIZE_LIMIT_BYTES = 5 * 1024 * 1024
RATIO_LIMIT = 2.0


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


def loss_fn(model: torch.nn.Module, batch: torch.Tensor) -> torch.Tensor:
    logits = model(batch[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))


def plain_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: torch.Tensor) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss_fn(model, batch).backward()
    optimizer.step()


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", type=int, default=16384)
    parser.add_argument("--d-model", type=int, default=768)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = TinyGPT(args.vocab, args.d_model, args.layers, args.heads, args.seq + 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    batch = torch.randint(0, args.vocab, (args.batch, args.seq + 1))
    parameters = sum(p.numel() for p in model.parameters())
    print(f"model: {parameters / 1e6:.1f}M parameters, batch {args.batch}x{args.seq} tokens, "
          f"{torch.get_num_threads()} torch threads, torch {torch.__version__}")

    plain_step(model, optimizer, batch)  # warm-up (allocator, kernels), not timed

    def fresh_state() -> None:  # capture always takes a first step (it rolls back); so does this
        optimizer.zero_grad(set_to_none=True)
        optimizer.state.clear()

    # Plain steps and captures alternate so that load from other processes hits both alike; the
    # limit is checked on CPU time (other processes do not inflate it), wall times are shown too.
    plain, captured, without, fingerprints = [], [], [], []
    for _ in range(args.repeats):
        plain += timed(lambda: plain_step(model, optimizer, batch), 1, fresh_state)
        fresh_state()
        captured += timed(lambda: fingerprints.append(capture(model, optimizer, loss_fn, batch)), 1)
        without += timed(lambda: capture(model, optimizer, loss_fn, batch, activations=False), 1)
    again = capture(model, optimizer, loss_fn, batch)  # capture rolled back: the same step again
    steady = timed(lambda: plain_step(model, optimizer, batch), args.repeats)

    with tempfile.TemporaryDirectory() as directory:
        path = fingerprints[0].save(Path(directory) / "fp.json")
        size = path.stat().st_size
    compare_times = timed(lambda: compare(fingerprints[-1], again), args.repeats)
    result = compare(fingerprints[-1], again)

    def wall(runs):
        return [w for w, _ in runs]

    def cpu(runs):
        return [c for _, c in runs]

    plain_s, capture_s = min(wall(plain)), min(wall(captured))
    cpu_ratio = min(cpu(captured)) / min(cpu(plain))
    wall_ratio = capture_s / plain_s
    median_ratio = statistics.median(wall(captured)) / statistics.median(wall(plain))
    figures = {
        "parameters": parameters,
        "plain_step_s": round(plain_s, 3),
        "steady_step_s": round(min(wall(steady)), 3),
        "capture_s": round(capture_s, 3),
        "plain_step_cpu_s": round(min(cpu(plain)), 3),
        "capture_cpu_s": round(min(cpu(captured)), 3),
        "capture_over_plain_step_cpu": round(cpu_ratio, 3),
        "capture_over_plain_step_wall_best": round(wall_ratio, 3),
        "capture_over_plain_step_wall_median": round(median_ratio, 3),
        "capture_without_activations_cpu_s": round(min(cpu(without)), 3),
        "capture_without_activations_over_plain_step_cpu": round(min(cpu(without)) / min(cpu(plain)), 3),
        "activation_records": len(fingerprints[0].forward or []),
        "fingerprint_bytes": size,
        "compare_s": round(statistics.median(wall(compare_times)), 4),
        "repeat_captures_compare_clean": result.ok,
    }
    print(f"plain training step (first step, best of {args.repeats}):   {plain_s:.3f} s wall, "
          f"{figures['plain_step_cpu_s']:.3f} s CPU (steady-state step {figures['steady_step_s']:.3f} s wall)")
    print(f"capture (best of {args.repeats}):                          {capture_s:.3f} s wall, "
          f"{figures['capture_cpu_s']:.3f} s CPU")
    print(f"capture / plain step:                                {cpu_ratio:.2f}x CPU time (limit {RATIO_LIMIT:.0f}x); "
          f"wall {wall_ratio:.2f}x best, {median_ratio:.2f}x median")
    print(f"capture without activations:                         {figures['capture_without_activations_cpu_s']:.3f} s CPU, "
          f"{figures['capture_without_activations_over_plain_step_cpu']:.2f}x the plain step")
    print(f"fingerprint size without full tensors:               {size / 1024:.1f} KiB  (limit 5 MB), "
          f"{figures['activation_records']} activation records")
    print(f"compare of two fingerprints:                         {figures['compare_s'] * 1000:.1f} ms")
    print(f"two captures of the same step compare clean:         {result.ok}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    within = cpu_ratio <= RATIO_LIMIT and size < SIZE_LIMIT_BYTES and result.ok
    print("WITHIN LIMITS" if within else "OVER LIMITS")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
