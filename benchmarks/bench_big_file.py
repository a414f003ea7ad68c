#!/usr/bin/env python3
"""What one huge generated Python file costs: `acclint scan FILE` with its default limits, the
same scan with every limit off, and a bare `libcst.parse_module` of the same file, in one run.

Files of several shapes and sizes are generated into a temporary folder:

- `dict`:  one giant dict literal (`TABLE = {"key": [1, 2, 0.5, "v"], ...}`), as data dumps are;
- `funcs`: many small functions (`def layer_N(x): ...`), as code generators write;
- `long`:  long lines (`ROW_N = [0, 1, ..., 399]`, about 2 KB each);
- `expr`:  dense one-line statements (`aN = b + c * d - e / f ...`), the most tokens per byte of code.

Every measurement runs in its own child process, so its peak RSS (`ru_maxrss` from `wait4`) is
that run's alone; CPU is the child's user + system time. A run still going after `--cap`
seconds is killed and shown as `>cap`; runs without limits are made only up to
`--unlimited-up-to` MB (10 MB without limits needs about 7 GB and a minute or more).

    PYTHONPATH=src python benchmarks/bench_big_file.py                  # about 3 minutes
    PYTHONPATH=src python benchmarks/bench_big_file.py --sizes 1 2 5 10 --unlimited-up-to 10 --cap 300
    PYTHONPATH=src python benchmarks/bench_big_file.py --json

A generated file is at most its nominal size, so the 1 MB files are the largest the default
limit lets through: the peak RSS of those that are scanned is the bound the limits keep.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHAPES = ("dict", "funcs", "long", "expr")


def generate(shape: str, size: int) -> str:
    """At most `size` bytes of Python of one shape, as close to it as whole entries allow."""
    head, entry, tail = _SHAPES[shape]
    parts, total, i = [head], len(head) + len(tail), 0
    while True:
        text = entry(i)
        if total + len(text) > size:
            break
        parts.append(text)
        total += len(text)
        i += 1
    parts.append(tail)
    return "".join(parts)


_SHAPES = {
    "dict": ("# Lookup table.\nTABLE = {\n",
             lambda i: f'    "key_{i:07d}": [{i}, {i * 3 % 97}, {i / 7:.4f}, "v{i % 13}"],\n', "}\n"),
    "funcs": ("import torch\n\n",
              lambda i: (f"def layer_{i}(x, scale={i % 5}):\n    y = torch.relu(x) * scale\n"
                         f"    if y.sum() > {i}:\n        y = y - 1\n    return y.contiguous()\n\n\n"), ""),
    "long": ("", lambda i: f"ROW_{i} = [" + ", ".join(str((i * 31 + j) % 1000) for j in range(400)) + "]\n", ""),
    "expr": ("", lambda i: f"a{i} = b + c * d - e / f + g % h + i - j + k * l\n", ""),
}

BARE = "import libcst, sys; libcst.parse_module(open(sys.argv[1], encoding='utf-8').read())"
NO_LIMITS = '[tool.acclint]\nmax-file-size = "none"\nfile-time-budget = "none"\n'


def measure(command: list, cap: float) -> dict:
    """Wall, CPU and peak RSS of one child process; killed after `cap` seconds."""
    sink = tempfile.TemporaryFile()  # not a pipe: a report bigger than the pipe's buffer would block the child
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=sink, stderr=subprocess.DEVNULL)
    deadline = start + cap
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            child.kill()
            pid, status, usage = os.wait4(child.pid, 0)
            return {"wall_s": None, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
                    "capped": True}
        time.sleep(0.02)
    sink.seek(0)
    output = sink.read()
    sink.close()
    return {"wall_s": time.perf_counter() - start, "cpu_s": usage.ru_utime + usage.ru_stime,
            "rss_mb": usage.ru_maxrss / 1024, "capped": False, "output": output}


def scan_command(path: Path, config: Path) -> list:
    return [sys.executable, "-m", "acclint", "scan", "--no-cache", "-q", "--format", "json", "--config",
            str(config), str(path)]


def outcome(run: dict) -> str:
    if run.get("capped") or not run.get("output"):
        return "-"
    report = json.loads(run["output"])
    if report["skipped"]:
        return "skipped: " + report["skipped"][0]["reason"]
    return "error: " + report["errors"][0]["message"] if report["errors"] else "scanned"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 2, 5, 10], help="MB (10^6 bytes)")
    parser.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    parser.add_argument("--unlimited-up-to", type=float, default=1, help="largest MB parsed bare or scanned without limits")
    parser.add_argument("--cap", type=float, default=60.0, help="seconds before a run is killed")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory(prefix="acclint-bigfile-") as folder:
        folder = Path(folder)
        defaults, unlimited = folder / "defaults.toml", folder / "unlimited.toml"
        defaults.write_text("[tool.acclint]\n")
        unlimited.write_text(NO_LIMITS)
        for shape in args.shapes:
            for mb in args.sizes:
                path = folder / f"{shape}_{mb:g}mb.py"
                path.write_text(generate(shape, int(mb * 10**6)), encoding="utf-8")
                row = {"shape": shape, "mb": mb, "bytes": path.stat().st_size}
                row["limits"] = measure(scan_command(path, defaults), args.cap)
                row["outcome"] = outcome(row["limits"])
                if mb <= args.unlimited_up_to:
                    row["bare"] = measure([sys.executable, "-c", BARE, str(path)], args.cap)
                    row["no_limits"] = measure(scan_command(path, unlimited), args.cap)
                for run in ("limits", "bare", "no_limits"):
                    row.get(run, {}).pop("output", None)
                rows.append(row)
                if not args.json:
                    print(_line(row), flush=True)
                path.unlink()
    if args.json:
        print(json.dumps({"python": platform.python_version(), "cpus": os.cpu_count(),
                          "load_average": os.getloadavg(), "rows": rows}, indent=2))
    else:
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


def _cell(run) -> str:
    if not run:
        return "not run"
    if run["capped"]:
        return f">cap ({run['rss_mb']:.0f} MB at kill)"
    return f"{run['cpu_s']:.2f} s CPU, {run['rss_mb']:.0f} MB"


def _line(row: dict) -> str:
    return (f"| {row['shape']} | {row['mb']:g} | {_cell(row.get('bare'))} | {_cell(row.get('no_limits'))} | "
            f"{_cell(row['limits'])} | {row['outcome']} |")


if __name__ == "__main__":
    sys.exit(main())
