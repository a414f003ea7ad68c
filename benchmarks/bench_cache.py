#!/usr/bin/env python3
"""What the content cache saves: cold scan, warm re-scan, and a re-scan after one file changed.

Corpus as in bench_scan.py (N `.py` files of an installed package, evenly spread, copied with
their relative paths), plus a small training program (`train.py` importing `helpers.py`), so
that "one file changed" changes a helper that an entry point's findings depend on.

Measured in one run, single process (`jobs=1`, so CPU is this process's CPU):

1. cold: `scan` with an empty cache (analyses and stores every file);
2. warm: the same scan again, nothing changed (reads every entry);
3. one changed: `helpers.py` edited, scanned again (one miss; program checks over all facts);
4. that program alone: `scan([train.py, helpers.py])` without a cache: what the changed file's
   program costs by itself.

Targets (issue 10): warm CPU <= 10% of cold CPU; one changed ~ warm + that program alone.
Also checks that the warm and one-changed scans report what an uncached scan reports.

    PYTHONPATH=src python benchmarks/bench_cache.py [--files N] [--package NAME | --path DIR] [--repeat R] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scan import DEFAULT_PACKAGE, choose_files, copy_corpus, package_dir  # noqa: E402

WARM_RATIO_TARGET = 0.10

TRAIN = '''\
import torch
from helpers import seed_everything


if __name__ == "__main__":
    seed_everything(0)
    model = torch.nn.Linear(4, 1)
    model(torch.ones(2, 4)).sum().backward()
'''
HELPERS = '''\
import random

import torch


def seed_everything(seed):
    random.seed(seed)
    torch.manual_seed(seed)
'''


def _scan(folder: Path, cache_dir, paths=None) -> tuple:
    from acclint.config import Config
    from acclint.linter.cache import Cache
    from acclint.linter.engine import scan
    from acclint.rules import all_rules

    rules, config = all_rules(), Config()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    cache = Cache(cache_dir, rules, config) if cache_dir is not None else None
    result = scan(paths or [folder], rules, config, jobs=1, cwd=folder, cache=cache)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    findings = sorted((f.rule, f.path, f.line, f.message) for f in result.findings)
    return {"cpu_s": cpu, "wall_s": wall, "hits": cache.hits if cache else 0,
            "misses": cache.misses if cache else result.files_scanned}, findings


def one_run(folder: Path) -> dict:
    cache_dir = folder.parent / "cache"
    shutil.rmtree(cache_dir, ignore_errors=True)
    cold, cold_findings = _scan(folder, cache_dir)
    warm, warm_findings = _scan(folder, cache_dir)
    helpers = folder / "helpers.py"
    helpers.write_text(HELPERS.replace("    torch.manual_seed(seed)\n", ""), encoding="utf-8")
    changed, changed_findings = _scan(folder, cache_dir)
    uncached, fresh_changed = _scan(folder, None)
    alone, _ = _scan(folder, None, [folder / "train.py", helpers])
    helpers.write_text(HELPERS, encoding="utf-8")
    return {
        "cold": cold, "warm": warm, "one_changed": changed, "program_alone": alone, "uncached": uncached,
        "warm_matches_cold": warm_findings == cold_findings,
        "changed_matches_uncached": changed_findings == fresh_changed,
        "helper_change_seen": any(f[0] == "ACL104" and f[1] == "train.py" for f in changed_findings),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--package", default=DEFAULT_PACKAGE)
    parser.add_argument("--path", type=Path)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    root = args.path or package_dir(args.package)
    base, relpaths = choose_files(root, args.files, keep_top=args.path is None)
    with tempfile.TemporaryDirectory(prefix="acclint-bench-cache-") as tmp:
        folder = Path(tmp) / "corpus"
        copy_corpus(base, relpaths, folder)
        (folder / "train.py").write_text(TRAIN, encoding="utf-8")
        (folder / "helpers.py").write_text(HELPERS, encoding="utf-8")
        _scan(folder, None, [folder / "train.py"])  # imports and tables, untimed
        runs = [one_run(folder) for _ in range(args.repeat)]

    def median(stage: str, key: str = "cpu_s") -> float:
        return statistics.median(r[stage][key] for r in runs)

    report = {
        "files": len(relpaths) + 2,
        "cold_cpu_s": median("cold"), "warm_cpu_s": median("warm"),
        "one_changed_cpu_s": median("one_changed"), "program_alone_cpu_s": median("program_alone"),
        "uncached_cpu_s": median("uncached"),
        "warm_over_cold": median("warm") / median("cold"),
        "cold_over_uncached": median("cold") / median("uncached"),
        "warm_target": WARM_RATIO_TARGET,
        "correct": all(r["warm_matches_cold"] and r["changed_matches_uncached"] and r["helper_change_seen"]
                       for r in runs),
        "runs": runs,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"files: {report['files']} (cache entries: {runs[0]['cold']['misses']} written, "
              f"{runs[0]['warm']['hits']} read warm)")
        print(f"scan without cache CPU   {report['uncached_cpu_s']:8.3f} s")
        print(f"cold scan CPU            {report['cold_cpu_s']:8.3f} s   = {report['cold_over_uncached']:.2f}x "
              "without cache (writing the entries)")
        print(f"warm re-scan CPU         {report['warm_cpu_s']:8.3f} s   = {report['warm_over_cold']:.1%} of cold "
              f"(target <= {WARM_RATIO_TARGET:.0%}: {'met' if report['warm_over_cold'] <= WARM_RATIO_TARGET else 'MISSED'})")
        print(f"one helper changed CPU   {report['one_changed_cpu_s']:8.3f} s")
        print(f"  minus warm             {report['one_changed_cpu_s'] - report['warm_cpu_s']:8.3f} s")
        print(f"its program alone CPU    {report['program_alone_cpu_s']:8.3f} s   (scanned by itself, no cache)")
        print(f"findings equal to an uncached scan: {'yes' if report['correct'] else 'NO'}")
    return 0 if report["correct"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
