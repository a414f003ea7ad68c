#!/usr/bin/env python3
"""Time `acclint diff` of two launch scripts plus their entry scripts against a bare parse.

Baseline, on the same four files: a tree-sitter-bash parse of both launch scripts and a
`libcst.parse_module` of both entry scripts (the parses acclint cannot avoid). acclint: the
whole `extract(left)`, `extract(right)`, `diff_setups(...)`, and rendering the text report.

By default the pair is generated, real-size and deterministic: a MindSpeed-LLM-style launch
script (~80 flags in string variables) against a Megatron-style one (~80 flags in arrays),
each beside a ~400-line entry script (argparse, model classes, optimizer, scheduler). Give
`--left A.sh --right B.sh` to time any real pair (their entry scripts are found as `acclint
diff` finds them). Run from the repository root:

    PYTHONPATH=src python benchmarks/bench_diff.py [--left A --right B] [--repeat R] [--json]

Reported: the first (cold) diff in a fresh process, including loading the knowledge tables,
and the median of R warm repeats, each as seconds and as a ratio to the baseline's median;
plus the wall time of the whole `python -m acclint diff` command in a subprocess.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLAGS = [
    ("num-layers", "32"), ("hidden-size", "4096"), ("ffn-hidden-size", "11008"), ("num-attention-heads", "32"),
    ("seq-length", "4096"), ("max-position-embeddings", "4096"), ("micro-batch-size", "1"),
    ("global-batch-size", "256"), ("make-vocab-size-divisible-by", "1"), ("lr", "1.25e-6"),
    ("train-iters", "5000"), ("lr-decay-style", "cosine"), ("attention-dropout", "0.0"),
    ("init-method-std", "0.01"), ("hidden-dropout", "0.0"), ("position-embedding-type", "rope"),
    ("normalization", "RMSNorm"), ("min-lr", "1.25e-7"), ("weight-decay", "1e-1"),
    ("lr-warmup-fraction", "0.01"), ("clip-grad", "1.0"), ("adam-beta1", "0.9"), ("adam-beta2", "0.95"),
    ("initial-loss-scale", "65536"), ("tensor-model-parallel-size", "8"), ("pipeline-model-parallel-size", "1"),
    ("seed", "1234"), ("rotary-base", "10000"), ("norm-epsilon", "1e-5"), ("num-query-groups", "8"),
    ("log-interval", "1"), ("save-interval", "10000"), ("eval-interval", "1000"), ("eval-iters", "10"),
    ("split", "949,50,1"), ("tokenizer-type", "PretrainedFromHF"), ("distributed-backend", "nccl"),
]
SWITCHES = [
    "use-mcore-models", "sequence-parallel", "untie-embeddings-and-output-weights", "disable-bias-linear",
    "swiglu", "use-flash-attn", "no-masked-softmax-fusion", "attention-softmax-in-fp32",
    "no-gradient-accumulation-fusion", "use-distributed-optimizer", "bf16", "group-query-attention",
]
NPU_SWITCHES = ["use-fused-rmsnorm", "use-fused-swiglu", "use-fused-rotary-pos-emb"]


def _entry_script(arguments: int, classes: int) -> str:
    """A ~400-line training entry: argparse, model classes, optimizer, scheduler, loop."""
    lines = ["import argparse", "import torch", "from torch import nn", "import torch.nn.functional as F", "",
             "parser = argparse.ArgumentParser()"]
    for index in range(arguments):
        lines.append(f"parser.add_argument('--option-{index}', type=float, default={index}.5, help='option {index}')")
    lines += ["parser.add_argument('--lr', type=float, default=1e-3)", "args = parser.parse_args()", ""]
    for index in range(classes):
        lines += [
            f"class Block{index}(nn.Module):",
            "    def __init__(self, dim):",
            "        super().__init__()",
            "        self.fc1 = nn.Linear(dim, 4 * dim)",
            "        self.fc2 = nn.Linear(4 * dim, dim)",
            "        self.norm = nn.LayerNorm(dim, eps=1e-5)",
            "        self.drop = nn.Dropout(0.1)",
            "",
            "    def forward(self, x):",
            "        a, b = torch.chunk(self.fc1(self.norm(x)), 2, dim=-1)",
            "        y = F.silu(a) * b",
            "        y = torch.cat([y, y], dim=-1)",
            "        return x + self.drop(self.fc2(y))",
            "",
        ]
    lines += [
        "model = nn.Sequential(*[Block0(512) for _ in range(4)])",
        "optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)",
        "scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=1000, eta_min=1e-5)",
        "torch.manual_seed(1234)",
        "for step in range(10):",
        "    loss = model(torch.randn(8, 512)).pow(2).mean()",
        "    loss.backward()",
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
        "    optimizer.step()",
        "    scheduler.step()",
    ]
    return "\n".join(lines) + "\n"


def _string_style(flags, switches) -> str:
    body = " \\\n".join([f"    --{k} {v}" for k, v in flags] + [f"    --{s}" for s in switches])
    return (
        "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\nexport HCCL_DETERMINISTIC=true\n"
        "NPUS_PER_NODE=8\nDATA_PATH=\"your data path\"\n"
        "DISTRIBUTED_ARGS=\"\n    --nproc_per_node $NPUS_PER_NODE \\\n    --nnodes 1 \\\n    --master_port 6000\n\"\n"
        f"GPT_ARGS=\"\n{body}\n\"\n"
        "python -m torch.distributed.launch $DISTRIBUTED_ARGS train.py \\\n    $GPT_ARGS \\\n"
        "    --data-path $DATA_PATH | tee logs/train.log\n"
    )


def _array_style(flags, switches) -> str:
    body = "\n".join([f"    --{k} {v}" for k, v in flags] + [f"    --{s}" for s in switches])
    return (
        "#!/bin/bash\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\nGPUS_PER_NODE=8\n"
        "DISTRIBUTED_ARGS=(\n    --nproc_per_node $GPUS_PER_NODE\n    --nnodes 1\n)\n"
        f"TRAINING_ARGS=(\n{body}\n)\n"
        "torchrun ${DISTRIBUTED_ARGS[@]} train.py ${TRAINING_ARGS[@]} --data-path $1\n"
    )


def generate_pair(folder: Path) -> tuple[Path, Path]:
    for side in ("gpu", "npu"):
        (folder / side).mkdir(parents=True, exist_ok=True)
        (folder / side / "train.py").write_text(_entry_script(arguments=100, classes=20), encoding="utf-8")
    extra = [(f"option-{i}", f"{i}.5") for i in range(30)]
    gpu_flags = FLAGS + extra
    npu_flags = [(k, "0.999" if k == "adam-beta2" else v) for k, v in FLAGS] + extra
    left = folder / "gpu" / "train_gpu.sh"
    right = folder / "npu" / "train_npu.sh"
    left.write_text(_array_style(gpu_flags, SWITCHES), encoding="utf-8")
    right.write_text(_string_style(npu_flags, SWITCHES + NPU_SWITCHES), encoding="utf-8")
    return left, right


def entry_of(script: Path) -> Path:
    from acclint.linter.shell import read_shell_script
    from acclint.setups.shell import entry_script, training_launch

    launch = training_launch(read_shell_script(script))
    found = entry_script(str(script), launch) if launch is not None else None
    if found is None:
        raise SystemExit(f"bench_diff: no entry script found for {script}")
    return Path(found)


def baseline(files: list[Path]) -> float:
    """Seconds to parse the two launch scripts with tree-sitter-bash and the entries with libcst."""
    import libcst
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    texts = [(path.suffix, path.read_bytes()) for path in files]
    parser = Parser(Language(tree_sitter_bash.language()))
    start = time.perf_counter()
    for suffix, data in texts:
        if suffix == ".sh":
            parser.parse(data)
        else:
            libcst.parse_module(data.decode("utf-8"))
    return time.perf_counter() - start


def run_diff(left: Path, right: Path) -> tuple[float, int]:
    from acclint.reports import render_diff
    from acclint.setups import diff_setups, extract

    start = time.perf_counter()
    result = diff_setups(extract(str(left)), extract(str(right)))
    render_diff(result, "text")
    return time.perf_counter() - start, len(result.mismatches)


def command_wall(left: Path, right: Path) -> float:
    env = dict(os.environ)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "acclint", "diff", str(left), str(right)], capture_output=True, env=env,
                   check=False)
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--left", type=Path)
    parser.add_argument("--right", type=Path)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.left and args.right:
            left, right = args.left, args.right
        else:
            left, right = generate_pair(Path(tmp))
        files = [left, right, entry_of(left), entry_of(right)]
        lines = sum(path.read_text(encoding="utf-8").count("\n") for path in files)
        load_before = os.getloadavg()[0]
        import libcst  # noqa: F401 - imports are not what we time
        import tree_sitter_bash  # noqa: F401

        base_first = baseline(files)
        cold, mismatches = run_diff(left, right)  # includes loading the knowledge tables once
        bases = [baseline(files) for _ in range(args.repeat)]
        warm = [run_diff(left, right)[0] for _ in range(args.repeat)]
        walls = [command_wall(left, right) for _ in range(3)]
        base = statistics.median(bases)
        figures = {
            "files": [str(path) for path in files],
            "lines": lines,
            "mismatches": mismatches,
            "baseline_first_s": round(base_first, 4),
            "baseline_median_s": round(base, 4),
            "diff_cold_s": round(cold, 4),
            "diff_warm_median_s": round(statistics.median(warm), 4),
            "cold_ratio": round(cold / base, 2),
            "warm_ratio": round(statistics.median(warm) / base, 2),
            "command_wall_median_s": round(statistics.median(walls), 3),
            "repeat": args.repeat,
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "python": platform.python_version(),
        }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"files: {len(files)} ({lines} lines), {mismatches} mismatches")
        print(f"baseline (tree-sitter + libcst parse): {figures['baseline_median_s']:.4f} s (median of {args.repeat})")
        print(f"acclint diff, cold (first, loads tables): {figures['diff_cold_s']:.4f} s = {figures['cold_ratio']}x")
        print(f"acclint diff, warm (median): {figures['diff_warm_median_s']:.4f} s = {figures['warm_ratio']}x")
        print(f"`python -m acclint diff` wall (median of 3, incl. interpreter start): "
              f"{figures['command_wall_median_s']:.3f} s")
        print(f"load average before/after: {figures['load_average'][0]} / {figures['load_average'][1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
