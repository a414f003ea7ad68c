#!/usr/bin/env python3
"""Scan whole repositories and print, per repository: files, KLOC, seconds, warnings, warnings/KLOC.

The repositories are not part of acclint: pass their checkouts as arguments (NAME=PATH, or a
PATH whose folder name is used). Each one is scanned as `acclint scan PATH` scans it, with every
rule and default settings, on all cores.

    PYTHONPATH=src python benchmarks/bench_repos.py /tmp/repos/Megatron-LM /tmp/repos/accelerate
    PYTHONPATH=src python benchmarks/bench_repos.py --json timm=/tmp/repos/pytorch-image-models
    PYTHONPATH=src python benchmarks/bench_repos.py --list /tmp/repos/mindcv   # + every warning

KLOC counts the lines of the files scanned (Python and shell). Seconds are wall time of the scan
(discovery, analysis, programs, filtering); CPU is this process plus its reaped workers.
"""

from __future__ import annotations

import argparse
import collections
import json
import resource
import sys
import time
from pathlib import Path


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as handle:
            return sum(1 for _ in handle)
    except OSError:
        return 0


def measure(name: str, path: Path, jobs) -> dict:
    from acclint.config import Config
    from acclint.linter.discovery import discover
    from acclint.linter.engine import scan
    from acclint.rules import all_rules

    found = discover([path], path)
    lines = sum(_lines(p) for p in found.files)
    child0 = _children_cpu()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = scan([path], all_rules(), Config(), jobs=jobs, cwd=path)
    wall = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0 + _children_cpu() - child0
    by_severity = collections.Counter(f.severity for f in result.findings)
    warnings = [f for f in result.findings if f.severity in ("warning", "error")]
    return {
        "repo": name,
        "files": result.files_scanned,
        "kloc": lines / 1000,
        "seconds": wall,
        "cpu_s": cpu,
        "warnings": len(warnings),
        "info": by_severity.get("info", 0),
        "warnings_per_kloc": len(warnings) / (lines / 1000) if lines else 0.0,
        "errors": len(result.errors),
        "by_rule": dict(sorted(collections.Counter(f.rule for f in warnings).items())),
        "findings": [f"{f.path}:{f.line}: {f.rule} {f.message}" for f in warnings],
    }


def table(rows: list) -> str:
    head = ("repository", "files", "KLOC", "seconds", "CPU s", "warnings", "warn/KLOC", "info", "errors", "warnings by rule")
    body = [(r["repo"], str(r["files"]), f"{r['kloc']:.1f}", f"{r['seconds']:.1f}", f"{r['cpu_s']:.1f}",
             str(r["warnings"]), f"{r['warnings_per_kloc']:.2f}", str(r["info"]), str(r["errors"]),
             " ".join(f"{k}:{v}" for k, v in r["by_rule"].items())) for r in rows]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repos", nargs="+", help="PATH or NAME=PATH of a repository checkout")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes [default: all cores]")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--list", action="store_true", help="also print every warning")
    args = parser.parse_args(argv)
    rows = []
    for spec in args.repos:
        name, _, path = spec.rpartition("=") if "=" in spec else ("", "", spec)
        path = Path(path).resolve()
        if not path.is_dir():
            parser.error(f"{path} is not a folder")
        rows.append(measure(name or path.name, path, args.jobs))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(table(rows))
    if args.list:
        for row in rows:
            print(f"\n== {row['repo']}: {row['warnings']} warnings ==")
            print("\n".join(row["findings"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
