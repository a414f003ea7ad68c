#!/usr/bin/env python3
"""Re-scan the judged corpus and print each rule's measured precision.

The corpus (corpus.toml) pins public repositories by commit; judged/NAME.csv holds one verdict per
warning acclint gave there (repo, commit, path, line, rule, verdict, reason). Verdicts are read as
the file's author would: `right` (a real cause of divergence, or a real checklist gap), `immaterial`
(right, but it does not change anything here), `wrong`, or `debatable`. Precision = (right +
immaterial) / (right + immaterial + wrong), over the decided verdicts, as the issues measure it; the
strict figure = right / decided. Debatable warnings are counted apart and printed, and the totals
also give the figure that counts them as wrong.
A zoo of many small programs enters as several entries sharing one `tree`, each listing its model
folders in `paths`; a (entry, rule) stratum with many warnings is judged on a seeded random sample
(`--sample`, recorded in samples/NAME.csv) and weighted back by its size. README.md states the method.

Fetch each repository (the search tool's `fetch`) and write its pinned commit into ROOT/NAME with
extract_tree.py, then:

    PYTHONPATH=src python benchmarks/precision/measure.py --root /work/corpus
    PYTHONPATH=src python benchmarks/precision/measure.py --root /work/corpus --split heldout
    PYTHONPATH=src python benchmarks/precision/measure.py --root /work/corpus --unjudged todo.csv
    PYTHONPATH=src python benchmarks/precision/measure.py --root /work/corpus --sample todo.csv
    PYTHONPATH=src python benchmarks/precision/measure.py --root /work/corpus --write-table

Every rule runs (preview included), with default settings, each repository scanned whole as
`acclint scan ROOT/NAME` scans it (a zoo entry: `acclint scan PATH...` from ROOT/TREE). Findings are
matched to verdicts by (path, line, rule). Printed: per rule judged / right / immaterial / wrong /
debatable / precision / strict, the same for proven and for unproven findings, the default run's
figure (proven findings of stable rules: what a default scan shows as warnings) beside the
preview-only one, warnings not judged yet, and verdicts whose warning is gone (a `right` one gone
is a lost finding; a `wrong` one gone is a fix).
`--write-table` (with `--split tuning` or `all`) records the per-rule figures of the tuning split in
src/acclint/knowledge/rule_precision.toml, which `acclint rules` shows and which decides a warning
rule's maturity. Held-out verdicts never feed the table: the held-out split measures the maturity the
tuning split decided, as it measures the rules the tuning split shaped (with `--split all` its tables
are printed again with the new table's maturity).
"""

from __future__ import annotations

import argparse
import collections
import csv
import datetime
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
TABLE = HERE.parents[1] / "src" / "acclint" / "knowledge" / "rule_precision.toml"
COLUMNS = ("repo", "commit", "path", "line", "rule", "verdict", "reason")
VERDICTS = ("right", "immaterial", "wrong", "debatable")
SAMPLE_COLUMNS = ("repo", "commit", "path", "line", "rule", "sampled")
PROOFS = ("proven", "unproven")


@dataclass(frozen=True)
class Repo:
    name: str
    repo: str
    commit: str
    kind: str
    split: str
    tree: str = ""  # the folder under the corpus root; several entries of one zoo share it
    paths: tuple = ()  # the folders this entry scans (a zoo's part); empty: the whole tree

    @property
    def folder(self) -> str:
        return self.tree or self.name


def load_corpus(path: Path = HERE / "corpus.toml") -> list[Repo]:
    with open(path, "rb") as handle:
        return [Repo(**{**entry, "paths": tuple(entry.get("paths", ()))}) for entry in tomllib.load(handle)["repo"]]


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


class Sample:
    """The sampled strata of one entry: rule -> (every warning of the stratum when it was drawn, the
    ones drawn). A drawn warning stands for population / drawn of them (its inverse inclusion odds)."""

    def __init__(self, repo: Repo, folder: Path = HERE / "samples"):
        self.repo = repo
        self.path = folder / f"{repo.name}.csv"
        self.strata: dict[str, tuple[set, set]] = {}
        if self.path.exists():
            with open(self.path, newline="", encoding="utf-8") as handle:
                for row in csv.DictReader(handle):
                    population, drawn = self.strata.setdefault(row["rule"], (set(), set()))
                    key = (row["path"], int(row["line"]), row["rule"])
                    population.add(key)
                    if row["sampled"] == "yes":
                        drawn.add(key)

    def weight(self, key) -> Optional[float]:
        """The warning's weight: 1 outside a sampled stratum, population / drawn for a drawn one, None
        for one of the population that was not drawn (neither judged nor unjudged: not sampled)."""
        stratum = self.strata.get(key[2])
        if stratum is None or key not in stratum[0]:
            return 1.0  # not sampled, or new since the draw: judged one by one
        population, drawn = stratum
        return len(population) / len(drawn) if key in drawn else None

    def draw(self, keys: list, verdicts: dict, threshold: int, size: int, seed: int) -> list[str]:
        """Draw a seeded random sample of `size` in each stratum not drawn yet that has more than
        `threshold` warnings not judged yet. Returns the rules drawn."""
        by_rule = collections.defaultdict(list)
        for key in keys:
            by_rule[key[2]].append(key)
        drawn_rules = []
        for rule, stratum in sorted(by_rule.items()):
            if rule in self.strata or sum(key not in verdicts for key in stratum) <= threshold:
                continue
            population = sorted(set(stratum))
            draw = random.Random(f"{seed}:{self.repo.name}:{rule}")  # seeded per stratum: draws are independent
            picked = draw.sample(population, min(size, len(population)))
            self.strata[rule] = (set(population), set(picked))
            drawn_rules.append(rule)
        if drawn_rules:
            self.save()
        return drawn_rules

    def save(self):
        self.path.parent.mkdir(exist_ok=True)
        with open(self.path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(SAMPLE_COLUMNS)
            for rule in sorted(self.strata):
                population, drawn = self.strata[rule]
                for path, line, _ in sorted(population):
                    writer.writerow((self.repo.repo, self.repo.commit, path, line, rule,
                                     "yes" if (path, line, rule) in drawn else "no"))


def scan_repo(tree: Path, jobs, paths=()) -> list:
    from acclint.config import Config
    from acclint.linter.engine import scan
    from acclint.linter.maturity import JUDGED_SEVERITIES  # the severities maturity is measured on
    from acclint.rules import all_rules

    # Every rule runs, preview ones included: measuring them is how they earn stable.
    targets = [tree / path for path in paths] if paths else [tree]
    result = scan(targets, all_rules(), Config(preview=True), jobs=jobs, cwd=tree)
    return [f for f in result.findings if f.severity in JUDGED_SEVERITIES]


def proof(finding) -> str:
    # Findings that do not say whether their premises are proven count as unproven.
    return "proven" if getattr(finding, "proven", None) else "unproven"


def relative(path: str, tree: Path) -> str:
    candidate = Path(path)
    if candidate.is_absolute():
        candidate = candidate.relative_to(tree)
    return candidate.as_posix()


class Figures(collections.Counter):
    """Weighted verdict counts (a sampled warning weighs its stratum's population / drawn)."""

    @property
    def judged(self) -> float:
        return sum(self[v] for v in VERDICTS)

    @property
    def right(self) -> float:  # "immaterial" is right: the warning says something true
        return self["right"] + self["immaterial"]

    @property
    def decided(self) -> float:  # judged right or wrong; a debatable verdict decides neither way
        return self.right + self["wrong"]

    def precision(self) -> str:
        return percent(self.right, self.decided)

    def strict(self) -> str:
        return percent(self["right"], self.decided)

    def debatable_as_wrong(self) -> str:
        return percent(self.right, self.judged)

    def describe(self) -> str:
        return f"{self.precision()} of {number(self.decided)}" if self.decided else "-"


class Tally:
    def __init__(self):
        self.counts = collections.defaultdict(lambda: {p: Figures() for p in PROOFS})
        self.verdicts = collections.Counter()  # rule -> verdicts read, unweighted

    def add(self, rule: str, verdict: str, proven: str, weight: float = 1.0):
        self.counts[rule][proven][verdict] += weight
        if verdict in VERDICTS:
            self.verdicts[rule] += 1

    def figures(self, rule: str, proofs=PROOFS) -> Figures:
        total = Figures()
        for p in proofs:
            total.update(self.counts[rule][p])
        return total

    def summed(self, keep, proofs=PROOFS) -> Figures:
        total = Figures()
        for rule in list(self.counts):
            if keep(rule):
                total.update(self.figures(rule, proofs))
        return total


def percent(right: float, judged: float) -> str:
    return f"{100 * right / judged:.0f}%" if judged else "-"


def number(value: float) -> str:
    return f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"


def current_maturities() -> dict:
    """code -> maturity, from the packaged table (re-read: --write-table may have just rewritten it)."""
    from acclint.linter import maturity
    from acclint.rules import all_rules

    maturity.reload()
    return {rule.code: maturity.maturity(rule) for rule in all_rules()}


def print_table(title: str, tally: Tally, maturities: dict):
    print(f"\n## {title}\n")
    print("| rule | maturity | judged | right | immaterial | wrong | debatable | precision | strict | "
          "debatable as wrong | proven | unproven | verdicts read | not judged | not sampled |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for rule in sorted(tally.counts):
        c = tally.figures(rule)
        print(f"| {rule} | {maturities.get(rule, '?')} | {number(c.judged)} | {number(c['right'])} | "
              f"{number(c['immaterial'])} | {number(c['wrong'])} | {number(c['debatable'])} | {c.precision()} | "
              f"{c.strict()} | {c.debatable_as_wrong()} | {tally.figures(rule, ('proven',)).describe()} | "
              f"{tally.figures(rule, ('unproven',)).describe()} | {tally.verdicts[rule]} | "
              f"{number(c['unjudged'])} | {number(c['unsampled'])} |")
    stable = lambda rule: maturities.get(rule) == "stable"  # noqa: E731
    rows = (
        ("all (--preview)", tally.summed(lambda rule: True)),
        ("stable rules, proven and unproven", tally.summed(stable)),
        # What a default scan shows as warnings: unproven findings of stable rules become info.
        ("default run (proven, stable rules)", tally.summed(stable, ("proven",))),
        ("preview-only (preview rules)", tally.summed(lambda rule: not stable(rule))),
    )
    for label, c in rows:
        print(f"| **{label}** | | {number(c.judged)} | {number(c['right'])} | {number(c['immaterial'])} | "
              f"{number(c['wrong'])} | {number(c['debatable'])} | **{c.precision()}** | {c.strict()} | "
              f"{c.debatable_as_wrong()} | | | | "
              f"{number(c['unjudged'])} | {number(c['unsampled'])} |")


def table_rows(c: Figures) -> list[str]:
    # Rounded parts, summed: a table reader sees judged = right + wrong + debatable.
    right, immaterial, wrong, debatable = (round(c[v]) for v in VERDICTS)
    return [f"judged = {right + immaterial + wrong + debatable}", f"right = {right + immaterial}",
            f"wrong = {wrong}", f"debatable = {debatable}", f"immaterial = {immaterial}"]


def write_table(tally: Tally, repos: int):
    today = datetime.date.today().isoformat()
    lines = [
        "# Measured precision of each rule on the judged corpus (benchmarks/precision/).",
        "# Generated by benchmarks/precision/measure.py --write-table; do not edit by hand.",
        "# precision = right / (right + wrong), over the tuning split only: the maturity it decides",
        "# (linter/maturity.py) is what the held-out split measures. Debatable verdicts decide neither",
        "# way and are kept for the reader. `right` counts `immaterial` verdicts too (right, but it does not",
        "# matter there); figures of sampled strata are weighted back to the stratum's size and rounded.",
        "# [RULE.proven] and [RULE.unproven]: the same figures for findings whose premises were all proven",
        "# and for the rest.",
        f'measured = "{today}"',
        f"repositories = {repos}",
        "",
    ]
    for rule in sorted(tally.counts):
        if not round(tally.figures(rule).judged):
            continue
        lines += [f"[{rule}]", *table_rows(tally.figures(rule)), ""]
        for p in PROOFS:
            lines += [f"[{rule}.{p}]", *table_rows(tally.figures(rule, (p,))), ""]
    TABLE.write_text("\n".join(lines), encoding="utf-8")
    print(f"\nwrote {TABLE}")
    # Maturity and precision show in the rule pages and the README's rule table: regenerate them too.
    subprocess.run([sys.executable, str(HERE.parents[1] / "tools" / "gen_docs.py")], check=True)


def write_todo(path: Path, todo: list, what: str):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS + ("message",))
        for repo, (file, line, rule), message in todo:
            writer.writerow((repo.repo, repo.commit, file, line, rule, "", "", message))
    print(f"\n{len(todo)} {what} written to {path}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, required=True,
                        help="folder holding one tree per repository (ROOT/NAME, or ROOT/TREE for a zoo's parts)")
    parser.add_argument("--split", choices=("tuning", "heldout", "all"), default="all")
    parser.add_argument("--repo", action="append", help="only this repository (repeatable)")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--unjudged", type=Path, help="write the warnings not judged yet to this CSV (with messages)")
    parser.add_argument("--sample", type=Path,
                        help="draw a seeded sample in each (repository, rule) stratum with more than "
                             "--sample-threshold warnings not judged yet (recorded in samples/NAME.csv), then "
                             "write the warnings to judge (the samples' and those of small strata) to this CSV")
    parser.add_argument("--sample-threshold", type=int, default=12)
    parser.add_argument("--sample-size", type=int, default=12)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--write-table", action="store_true", help="record per-rule figures for `acclint rules`")
    parser.add_argument("--show", choices=VERDICTS, action="append", default=[],
                        help="list the warnings still reported that were judged so, with reasons (tuning split only)")
    args = parser.parse_args(argv)
    if args.write_table and (args.split == "heldout" or args.repo):
        parser.error("--write-table measures the tuning split whole: use it with --split tuning (or all) "
                     "and no --repo")
    if args.sample_size < args.sample_threshold:
        parser.error("--sample-size must be at least --sample-threshold: a smaller stratum is judged whole")

    repos = [r for r in load_corpus() if args.split in ("all", r.split) and (not args.repo or r.name in args.repo)]
    by_split = {"tuning": Tally(), "heldout": Tally()}
    overall = Tally()
    todo, gone, shown = [], [], []
    for repo in repos:
        tree = args.root / repo.folder
        if not tree.is_dir():
            print(f"{repo.name}: no tree at {tree} (fetch {repo.repo} and extract {repo.commit[:12]})", file=sys.stderr)
            continue
        verdicts = load_verdicts(repo)
        findings = {}  # key -> finding: one per place, as the scan reports them
        for finding in scan_repo(tree, args.jobs, repo.paths):
            findings.setdefault((relative(finding.path, tree), finding.line, finding.rule), finding)
        sample = Sample(repo)
        if args.sample:
            drawn = sample.draw(list(findings), verdicts, args.sample_threshold, args.sample_size, args.seed)
            if drawn:
                print(f"{repo.name}: sampled {', '.join(drawn)}", file=sys.stderr)
        for key, finding in findings.items():
            weight = sample.weight(key)
            row = verdicts.get(key)
            verdict = "unsampled" if weight is None else row["verdict"] if row else "unjudged"
            for tally in (by_split[repo.split], overall):
                tally.add(finding.rule, verdict, proof(finding), weight if verdict in VERDICTS else 1.0)
            if verdict == "unjudged":
                todo.append((repo, key, finding.message))
            elif verdict in args.show and repo.split == "tuning":
                shown.append((repo.name, key, row["verdict"], proof(finding), row["reason"]))
        gone += [(repo.name, key, row["verdict"]) for key, row in verdicts.items() if key not in findings]
        print(f"{repo.name}: {len(findings)} warnings, {len(verdicts)} verdicts, "
              f"{len(sample.strata)} sampled strata", file=sys.stderr)

    # The figures of record are taken with the maturity in force while measuring (the previous table's):
    # the held-out split measures that choice. A table written now decides the next maturity.
    maturities = current_maturities()
    for split in ("tuning", "heldout"):
        if by_split[split].counts:
            print_table(f"{split} ({sum(r.split == split for r in repos)} repositories)", by_split[split], maturities)
    print_table(f"all ({len(repos)} repositories)", overall, maturities)
    if args.write_table:
        # The tuning split alone decides; the held-out split (when measured in the same run) is then
        # printed again with the maturity that table decides, which is what it measures.
        write_table(by_split["tuning"], sum(r.split == "tuning" for r in repos))
        after = current_maturities()
        changed = sorted(code for code in after if after[code] != maturities.get(code))
        print("\nmaturity changed by the new table: " + (", ".join(f"{c} {maturities.get(c)} -> {after[c]}"
                                                                 for c in changed) or "none"))
        for split in ("tuning", "heldout"):
            if by_split[split].counts:
                print_table(f"{split} ({sum(r.split == split for r in repos)} repositories), with the new "
                            f"table's maturity", by_split[split], after)
    for name, (path, line, rule), verdict, proven, reason in sorted(shown, key=lambda item: (item[1][2], item[0])):
        print(f"{rule} {verdict:10} {proven:8} {name}/{path}:{line}: {reason}")
    if gone:
        lost = [g for g in gone if g[2] in ("right", "immaterial")]
        print(f"\n{len(gone)} judged warnings no longer reported ({len(lost)} of them right: lost findings)")
        for name, (path, line, rule), verdict in sorted(gone):
            print(f"  {verdict:10} {name}/{path}:{line} {rule}")
    if args.unjudged:
        write_todo(args.unjudged, todo, "warnings not judged yet")
    if args.sample:
        write_todo(args.sample, todo, "warnings to judge (samples and small strata)")
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
