#!/usr/bin/env python3
"""List the proven warnings of the tuning split that have no verdict yet, and draw the samples.

Scans each tuning repository as measure.py does (every rule, preview included), keeps warnings and
errors whose premises are all proven (`finding.proven`) and that judged/<repo>.csv has no verdict for,
and writes them to OUT/<repo>.csv (with the message and the premises' evidence) so they can be judged.

A (repository, rule) stratum with more than 12 of them is judged on a seeded sample of 12; the draw is
recorded in samples/<repo>.csv by measure.Sample (seeded as measure.py --sample draws): each drawn
warning stands for N / n of its stratum (N: the proven warnings not judged at the draw).
A stratum already in samples/<repo>.csv is not drawn again.

    PYTHONPATH=src python benchmarks/precision/proven_todo.py --root /work/corpus --out /tmp/todo
"""

from __future__ import annotations

import argparse
import collections
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure  # noqa: E402

THRESHOLD = 12
SIZE = 12


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repo", action="append")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    repos = [r for r in measure.load_corpus() if r.split == "tuning" and (not args.repo or r.name in args.repo)]
    for repo in repos:
        tree = args.root / repo.folder
        if not tree.is_dir():
            print(f"{repo.name}: no tree at {tree}", file=sys.stderr)
            continue
        verdicts = measure.load_verdicts(repo)
        todo = {}
        proven = {}
        for finding in measure.scan_repo(tree, args.jobs, repo.paths):
            if not finding.proven:
                continue
            key = (measure.relative(finding.path, tree), finding.line, finding.rule)
            proven[key] = finding
            if key not in verdicts:
                todo[key] = finding
        proven_total = collections.Counter(key[2] for key in proven)
        # Every proven warning with its verdict so far: the proven figures per rule, before weighting.
        with open(args.out / f"{repo.name}.proven.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(("path", "line", "rule", "verdict"))
            for key in sorted(proven):
                writer.writerow(key + (verdicts.get(key, {}).get("verdict", ""),))
        # The stratum is the proven warnings not judged yet: measure.Sample's draw over them alone.
        sample = measure.Sample(repo)
        sample.draw(sorted(todo), {}, THRESHOLD, SIZE, args.seed)
        with open(args.out / f"{repo.name}.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(("path", "line", "rule", "severity", "to_judge", "message", "evidence"))
            for key, finding in sorted(todo.items()):
                to_judge = "no" if sample.weight(key) is None else "yes"
                evidence = " | ".join(f"{p.premise}: {p.evidence}" for p in finding.premises)
                writer.writerow(key + (finding.severity, to_judge, finding.message, evidence))
        print(f"{repo.name}: proven {dict(proven_total)}; not judged {dict(collections.Counter(k[2] for k in todo))}",
              file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
