#!/usr/bin/env python3
"""Re-scan the judged corpus and print each rule's measured precision.

The corpus (corpus.toml) pins public repositories by commit; judged/NAME.csv holds one verdict per
warning acclint gave there (repo, commit, path, line, rule, verdict, reason). Verdicts are read as
the file's author would: `right` (a real cause of divergence, or a real checklist gap), `wrong`, or
`debatable`. Precision = right / judged: a debatable warning is not counted as right.

Fetch each repository (the search tool's `fetch`) and write its pinned commit into ROOT/NAME with
extract_tree.py, then:

    PYTHONPATH=src python benchmarks/precision/measure.py --root /work/corpus
    PYTHONPATH=src python benchmarks/precision/measure.py --root /work/corpus --split heldout
    PYTHONPATH=src python benchmarks/precision/measure.py --root /work/corpus --unjudged todo.csv
    PYTHONPATH=src python benchmarks/precision/measure.py --root /work/corpus --write-table

Every rule runs (preview included), with default settings, each repository scanned whole as
`acclint scan ROOT/NAME` scans it. Findings are matched to verdicts by (path, line, rule).
Printed: per rule judged / right / wrong / debatable / precision, warnings not judged yet, and
verdicts whose warning is gone (a `right` one gone is a lost finding; a `wrong` one gone is a fix).
`--write-table` (with `--split all`) records the per-rule figures of the whole corpus in
src/acclint/knowledge/rule_precision.toml, which `acclint rules` shows and which decides a warning
rule's maturity. The tables printed first use the maturity in force while measuring, so the held-out
figures measure the previous table's choice; the held-out verdicts feed the table only after that
measurement is taken (and never a rule's code: those repositories are read only to judge).
"""

from __future__ import annotations

import argparse
import collections
import csv
import datetime
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
TABLE = HERE.parents[1] / "src" / "acclint" / "knowledge" / "rule_precision.toml"
COLUMNS = ("repo", "commit", "path", "line", "rule", "verdict", "reason")
VERDICTS = ("right", "wrong", "debatable")


@dataclass(frozen=True)
class Repo:
    name: str
    repo: str
    commit: str
    kind: str
    split: str


def load_corpus(path: Path = HERE / "corpus.toml") -> list[Repo]:
    with open(path, "rb") as handle:
        return [Repo(**entry) for entry in tomllib.load(handle)["repo"]]


def load_verdicts(repo: Repo) -> dict[tuple[str, int, str], dict]:
    path = HERE / "judged" / f"{repo.name}.csv"
    if not path.exists():
        return {}
    verdicts = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["verdict"] not in VERDICTS:
                raise SystemExit(f"{path}: verdict {row['verdict']!r} at {row['path']}:{row['line']} "
                                 f"is not one of {', '.join(VERDICTS)}")
            verdicts[(row["path"], int(row["line"]), row["rule"])] = row
    return verdicts


def scan_repo(tree: Path, jobs) -> list:
    from acclint.config import Config
    from acclint.linter.engine import scan
    from acclint.linter.maturity import JUDGED_SEVERITIES  # the severities maturity is measured on
    from acclint.rules import all_rules

    # Every rule runs, preview ones included: measuring them is how they earn stable.
    result = scan([tree], all_rules(), Config(preview=True), jobs=jobs, cwd=tree)
    return [f for f in result.findings if f.severity in JUDGED_SEVERITIES]


def relative(path: str, tree: Path) -> str:
    candidate = Path(path)
    if candidate.is_absolute():
        candidate = candidate.relative_to(tree)
    return candidate.as_posix()


class Tally:
    def __init__(self):
        self.counts = collections.defaultdict(collections.Counter)

    def add(self, rule: str, verdict: str):
        self.counts[rule][verdict] += 1

    def rows(self):
        for rule in sorted(self.counts):
            c = self.counts[rule]
            judged = sum(c[v] for v in VERDICTS)
            yield rule, judged, c["right"], c["wrong"], c["debatable"], c["unjudged"]

    def total(self):
        c = collections.Counter()
        for counts in self.counts.values():
            c.update(counts)
        return c


def precision(right: int, judged: int) -> str:
    return f"{100 * right / judged:.0f}%" if judged else "-"


def current_maturities() -> dict:
    """code -> maturity, from the packaged table (re-read: --write-table may have just rewritten it)."""
    from acclint.linter import maturity
    from acclint.rules import all_rules

    maturity.precision_table.cache_clear()
    return {rule.code: maturity.maturity(rule) for rule in all_rules()}


def print_table(title: str, tally: Tally, maturities: dict):
    print(f"\n## {title}\n")
    print("| rule | maturity | judged | right | wrong | debatable | precision | not judged |")
    print("|---|---|---|---|---|---|---|---|")
    for rule, judged, right, wrong, debatable, unjudged in tally.rows():
        print(f"| {rule} | {maturities.get(rule, '?')} | {judged} | {right} | {wrong} | {debatable} | "
              f"{precision(right, judged)} | {unjudged} |")
    for label, keep in (("all", lambda rule: True), ("stable", lambda rule: maturities.get(rule) == "stable")):
        c = collections.Counter()
        for rule, counts in tally.counts.items():
            if keep(rule):
                c.update(counts)
        judged = sum(c[v] for v in VERDICTS)
        print(f"| **{label}** | | {judged} | {c['right']} | {c['wrong']} | {c['debatable']} | "
              f"**{precision(c['right'], judged)}** | {c['unjudged']} |")


def write_table(tally: Tally, repos: int):
    today = datetime.date.today().isoformat()
    lines = [
        "# Measured precision of each rule on the judged corpus (benchmarks/precision/).",
        "# Generated by benchmarks/precision/measure.py --write-table; do not edit by hand.",
        "# precision = right / judged, over the whole corpus (tuning and held-out), written after a stop's",
        "# held-out measurement; the maturity it decides (linter/maturity.py) is what the next held-out",
        "# measurement is taken with.",
        f'measured = "{today}"',
        f"repositories = {repos}",
        "",
    ]
    for rule, judged, right, wrong, debatable, _ in tally.rows():
        if not judged:
            continue
        lines += [f"[{rule}]", f"judged = {judged}", f"right = {right}", f"wrong = {wrong}",
                  f"debatable = {debatable}", ""]
    TABLE.write_text("\n".join(lines), encoding="utf-8")
    print(f"\nwrote {TABLE}")
    # Maturity and precision show in the rule pages and the README's rule table: regenerate them too.
    subprocess.run([sys.executable, str(HERE.parents[1] / "tools" / "gen_docs.py")], check=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, required=True, help="folder holding one tree per repository (ROOT/NAME)")
    parser.add_argument("--split", choices=("tuning", "heldout", "all"), default="all")
    parser.add_argument("--repo", action="append", help="only this repository (repeatable)")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--unjudged", type=Path, help="write the warnings not judged yet to this CSV (with messages)")
    parser.add_argument("--write-table", action="store_true", help="record per-rule figures for `acclint rules`")
    parser.add_argument("--show", choices=VERDICTS, action="append", default=[],
                        help="list the warnings still reported that were judged so, with the reason (tuning split only)")
    args = parser.parse_args(argv)
    if args.write_table and (args.split != "all" or args.repo):
        parser.error("--write-table measures the whole corpus: use it with --split all and no --repo")

    repos = [r for r in load_corpus() if args.split in ("all", r.split) and (not args.repo or r.name in args.repo)]
    by_split = {"tuning": Tally(), "heldout": Tally()}
    overall = Tally()
    todo, gone, shown = [], [], []
    for repo in repos:
        tree = args.root / repo.name
        if not tree.is_dir():
            print(f"{repo.name}: no tree at {tree} (fetch {repo.repo} and extract {repo.commit[:12]})", file=sys.stderr)
            continue
        verdicts = load_verdicts(repo)
        seen = set()
        for finding in scan_repo(tree, args.jobs):
            key = (relative(finding.path, tree), finding.line, finding.rule)
            seen.add(key)
            row = verdicts.get(key)
            verdict = row["verdict"] if row else "unjudged"
            for tally in (by_split[repo.split], overall):
                tally.add(finding.rule, verdict)
            if not row:
                todo.append((repo, key, finding.message))
            elif row["verdict"] in args.show and repo.split == "tuning":
                shown.append((repo.name, key, row["verdict"], row["reason"]))
        gone += [(repo.name, key, row["verdict"]) for key, row in verdicts.items() if key not in seen]
        print(f"{repo.name}: {len(seen)} warnings, {len(verdicts)} verdicts", file=sys.stderr)

    # The figures of record are taken with the maturity in force while measuring (the previous table's):
    # the held-out split measures that choice. A table written now decides the next maturity.
    maturities = current_maturities()
    for split in ("tuning", "heldout"):
        if by_split[split].counts:
            print_table(f"{split} ({sum(r.split == split for r in repos)} repositories)", by_split[split], maturities)
    print_table(f"all ({len(repos)} repositories)", overall, maturities)
    if args.write_table:
        write_table(overall, len(repos))
        after = current_maturities()
        changed = sorted(code for code in after if after[code] != maturities.get(code))
        print("\nmaturity changed by the new table: " + (", ".join(f"{c} {maturities.get(c)} -> {after[c]}"
                                                                 for c in changed) or "none"))
        print_table(f"all ({len(repos)} repositories), with the new table's maturity", overall, after)
    for name, (path, line, rule), verdict, reason in sorted(shown, key=lambda item: (item[1][2], item[0])):
        print(f"{rule} {verdict:9} {name}/{path}:{line}: {reason}")
    if gone:
        lost = [g for g in gone if g[2] == "right"]
        print(f"\n{len(gone)} judged warnings no longer reported ({len(lost)} of them right: lost findings)")
        for name, (path, line, rule), verdict in sorted(gone):
            print(f"  {verdict:9} {name}/{path}:{line} {rule}")
    if args.unjudged:
        with open(args.unjudged, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMNS + ("message",))
            for repo, (path, line, rule), message in todo:
                writer.writerow((repo.repo, repo.commit, path, line, rule, "", "", message))
        print(f"\n{len(todo)} warnings not judged yet written to {args.unjudged}")
    return 0


def print_cause_recall() -> None:
    """Default-run recall on the cause set (benchmarks/causes/), printed beside precision: a maturity
    change that raises precision by hiding a rule shows here as causes the default run no longer finds."""
    sys.path.insert(0, str(HERE.parent / "causes"))
    import recall

    recall.print_table(recall.measure())


if __name__ == "__main__":
    status = main()
    print_cause_recall()
    sys.exit(status)
