#!/usr/bin/env python3
"""Split a model zoo into a tuning and a held-out part by model folder, reproducibly.

A zoo holds hundreds of small programs, one per model folder. A model folder is the shallowest
folder, at least MIN_DEPTH deep, that holds a README of its own (every model of a zoo documents
itself); Python files with no such folder above them fall to their folder at MIN_DEPTH. The model
folders are shuffled with SEED and the first FRACTION of them is the tuning part. The output is the
two `[[repo]]` entries for corpus.toml, each listing its `paths`.

    python benchmarks/precision/split_zoo.py GIT_DIR COMMIT --name NAME --repo OWNER/NAME --kind npu \
        --min-depth 3 [--scope PREFIX ...] [--seed 27] [--fraction 0.7] [--limit N]
"""

from __future__ import annotations

import argparse
import posixpath
import random
import subprocess


def model_folders(files: list[str], min_depth: int, scope: list[str]) -> list[str]:
    readme_dirs = {posixpath.dirname(f) for f in files if posixpath.basename(f).lower().startswith("readme")}
    folders = set()
    for path in files:
        if not path.endswith(".py") or (scope and not any(path.startswith(p.rstrip("/") + "/") for p in scope)):
            continue
        parts = path.split("/")[:-1]
        if len(parts) < min_depth:
            continue
        found = next(("/".join(parts[:i]) for i in range(min_depth, len(parts) + 1)
                      if "/".join(parts[:i]) in readme_dirs), None)
        folders.add(found or "/".join(parts[:min_depth]))
    # A folder inside another one is part of it (the fallback may pick a parent of a README folder).
    return sorted(f for f in folders if not any(f.startswith(o + "/") for o in folders))


def split(folders: list[str], seed: int, fraction: float, limit=None) -> tuple[list[str], list[str]]:
    shuffled = sorted(folders)
    random.Random(seed).shuffle(shuffled)
    shuffled = shuffled[:limit]  # a zoo too large to scan at every stop: a random subset of it
    cut = round(fraction * len(shuffled))
    return sorted(shuffled[:cut]), sorted(shuffled[cut:])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gitdir")
    parser.add_argument("commit")
    parser.add_argument("--name", required=True, help="tree name under the corpus root")
    parser.add_argument("--repo", required=True)
    parser.add_argument("--kind", required=True, choices=("npu", "gpu"))
    parser.add_argument("--min-depth", type=int, required=True)
    parser.add_argument("--scope", action="append", default=[], help="only model folders under this prefix")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--fraction", type=float, default=0.7)
    parser.add_argument("--limit", type=int, help="keep only this many model folders (the first of the shuffle)")
    args = parser.parse_args(argv)
    listing = subprocess.run(["git", "-C", args.gitdir, "ls-tree", "-r", "--name-only", "-z", args.commit],
                             capture_output=True, check=True).stdout.decode("utf-8", "surrogateescape")
    folders = model_folders([f for f in listing.split("\0") if f], args.min_depth, args.scope)
    for split_name, paths in zip(("tuning", "heldout"), split(folders, args.seed, args.fraction, args.limit)):
        print(f"\n[[repo]]\nname = \"{args.name}-{split_name}\"\nrepo = \"{args.repo}\"\n"
              f"commit = \"{args.commit}\"\nkind = \"{args.kind}\"\nsplit = \"{split_name}\"\n"
              f"tree = \"{args.name}\"\n"
              f"# {len(paths)} of {len(folders)} model folders: split_zoo.py --min-depth {args.min_depth}"
              + "".join(f" --scope {s}" for s in args.scope) + f" --seed {args.seed} --fraction {args.fraction}"
              + (f" --limit {args.limit}" if args.limit else "") + "\n"
              "paths = [\n" + "".join(f'    "{p}",\n' for p in paths) + "]")


if __name__ == "__main__":
    main()
