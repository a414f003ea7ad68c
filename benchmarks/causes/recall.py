#!/usr/bin/env python3
"""Recall of the default run on acclint's own cause set, beside `--preview`'s.

Each folder here is one real cause of a GPU/NPU (or PyTorch/MindSpore) accuracy gap, rebuilt from a
public issue thread or a documented behaviour as a small training project: `cause/` holds the
project with the cause, `fixed/` the same project with the cause fixed, and `case.toml` names the
source, the family, the rule codes expected to find it (`["none"]` when no rule covers it yet: a
miss by construction), the file:line where the cause is, and whether `--preview` found it when the
case was written (`found_with_preview`, which tests/test_cause_set.py holds the rules to).

Every case's two sides are scanned with the in-repo engine twice: as `acclint scan` runs by
default (stable rules only) and as `acclint scan --preview` runs (every rule).

Matching rule. A case is **found** in a mode when that mode reports, on the cause's file (the file
of `where`), a finding of an expected rule whose severity is `warning` or `error`. An `info` finding
does not count: it is a hint the default run does not ask the user to act on. The line is not
required to match: a missing setting (a seed, a deterministic switch) has no line of its own, and a
rule may name the call that should carry it. A **twin flagged** is a finding of an expected rule,
of any severity, anywhere in a case's `fixed/` side, in either mode: the fix must silence the rule.

    PYTHONPATH=src python benchmarks/causes/recall.py            # the table
    PYTHONPATH=src python benchmarks/causes/recall.py --details  # and each case's verdict

`measure()` returns the figures as a dict (benchmarks/precision/measure.py prints them beside
precision).
"""

from __future__ import annotations

import argparse
import collections
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
MODES = ("default", "preview")
FOUND_SEVERITIES = ("warning", "error")
FAMILIES = ("seed", "determinism", "mixed-precision", "fused-op", "framework-default", "contiguity",
            "parallel", "model-config", "debug-tooling")
NO_RULE = "none"
KINDS = ("scan", "diff")
DIFF_SIDES = ("reference", "port")  # a diff case's side holds its two setups in these folders


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    source: str
    expected: tuple  # rule codes; empty when no rule covers the cause yet
    path: str  # the cause's file, relative to cause/
    line: int
    why: str
    folder: Path
    # Recorded when the case was written: whether `--preview` found it then. The test suite holds
    # the rules to it, so that a rule which stops finding its cause fails CI.
    found_with_preview: bool = False
    # "scan": `acclint scan` of each side; "diff": `acclint diff reference port` of each side, where
    # the cause is a setting two setups disagree on (`expected` then names the diff's keys).
    kind: str = "scan"

    @property
    def cause(self) -> Path:
        return self.folder / "cause"

    @property
    def fixed(self) -> Path:
        return self.folder / "fixed"


@dataclass
class Verdict:
    """One case in one mode."""

    found: bool
    # Findings of the expected rules on the cause's side: (path, line, rule, severity, message).
    cause_hits: list = field(default_factory=list)
    # Findings of the expected rules on the fixed twin.
    twin_hits: list = field(default_factory=list)
    errors: list = field(default_factory=list)  # files that could not be read or parsed


def load_case(folder: Path) -> Case:
    with open(folder / "case.toml", "rb") as handle:
        data = tomllib.load(handle)
    path, _, line = data["where"].rpartition(":")
    expected = tuple(code for code in data["expected"] if code != NO_RULE)
    kind = data.get("kind", "scan")
    if kind not in KINDS:
        raise ValueError(f"{folder.name}: kind {kind!r} is not one of {', '.join(KINDS)}")
    if data["family"] not in FAMILIES:
        raise ValueError(f"{folder.name}: family {data['family']!r} is not one of {', '.join(FAMILIES)}")
    return Case(name=data["name"], family=data["family"], source=data["source"], expected=expected,
                path=path, line=int(line), why=data["why"], folder=folder,
                found_with_preview=data.get("found_with_preview", False), kind=kind)


def load_cases(root: Path = HERE) -> list:
    return [load_case(folder) for folder in sorted(root.iterdir()) if (folder / "case.toml").is_file()]


@lru_cache(maxsize=None)
def _rules(preview: bool) -> tuple:
    """The rules `acclint scan` runs in this mode, chosen as the CLI chooses them."""
    from acclint.config import Config, rule_enabled
    from acclint.linter.maturity import is_preview
    from acclint.rules import all_rules

    config = Config(preview=preview)
    return config, tuple(rule for rule in all_rules() if rule_enabled(config, rule.code, rule.category,
                                                                       is_preview(rule)))


def scan_side(tree: Path, preview: bool):
    """(findings, errors) of one side of a case, scanned whole as `acclint scan TREE` would."""
    from acclint.linter.engine import scan

    config, rules = _rules(preview)
    result = scan([tree], list(rules), config, jobs=1, cwd=tree)
    return result.findings, [f"{e.path}: {e.code} {e.message}" for e in result.errors]


def diff_side(tree: Path, expected: set) -> tuple:
    """(hits, errors) of one side of a diff case: the mismatches of expected keys, as
    (path, line, key, "warning", message), that `acclint diff reference port` reports there."""
    from acclint.setups import SetupError, diff_paths

    try:
        result = diff_paths(*(str(tree / side) for side in DIFF_SIDES))
    except SetupError as exc:
        return [], [str(exc)]
    hits = []
    for mismatch in result.mismatches:
        if mismatch.key in expected:
            where = mismatch.right.where or mismatch.left.where  # a default has no line: show the other side's
            path = Path(where.path) if where else Path()
            shown = path.relative_to(tree).as_posix() if path.is_absolute() else path.as_posix()
            hits.append((shown, where.line if where else 0, mismatch.key, "warning", mismatch.message))
    return hits, result.problems


def judge_diff(case: Case) -> Verdict:
    # A diff has no preview rules: both modes see the same rows.
    cause_hits, cause_errors = diff_side(case.cause, set(case.expected))
    twin_hits, twin_errors = diff_side(case.fixed, set(case.expected))
    return Verdict(found=bool(cause_hits), cause_hits=cause_hits, twin_hits=[h[:4] for h in twin_hits],
                   errors=[f"cause/{e}" for e in cause_errors] + [f"fixed/{e}" for e in twin_errors])


def judge(case: Case, preview: bool) -> Verdict:
    if case.kind == "diff":
        return judge_diff(case)
    cause_findings, cause_errors = scan_side(case.cause, preview)
    twin_findings, twin_errors = scan_side(case.fixed, preview)
    expected = set(case.expected)
    cause_hits = [(f.path, f.line, f.rule, f.severity, f.message) for f in cause_findings
                  if f.rule in expected and f.path == case.path]
    twin_hits = [(f.path, f.line, f.rule, f.severity) for f in twin_findings if f.rule in expected]
    found = any(hit[3] in FOUND_SEVERITIES for hit in cause_hits)
    return Verdict(found=found, cause_hits=cause_hits, twin_hits=twin_hits,
                   errors=[f"cause/{e}" for e in cause_errors] + [f"fixed/{e}" for e in twin_errors])


def judge_all(cases: list) -> dict:
    """{case name: {mode: Verdict}}: every case scanned once per mode and side."""
    return {case.name: {mode: judge(case, mode == "preview") for mode in MODES} for case in cases}


def why_missed(case: Case, verdicts: dict) -> str:
    """Why the default run misses a case, in a few words."""
    from acclint.linter.maturity import maturity
    from acclint.rules import all_rules

    if not case.expected:
        return "no rule yet"
    if case.kind == "diff":
        return "not reported by diff"
    default, preview = verdicts["default"], verdicts["preview"]
    codes = {rule.code: rule for rule in all_rules()}
    if preview.found:
        previews = [code for code in case.expected if code in codes and maturity(codes[code]) == "preview"]
        if previews:
            return "preview rule " + ", ".join(previews)
    hits = default.cause_hits or preview.cause_hits
    if hits:
        _, _, rule, severity, message = hits[0]
        # A finding whose premises are not all proven says which one, after "Not proven:".
        unproven = message.partition("Not proven: ")[2]
        reason = f"{rule} reported as {severity}" + (" by default" if preview.found else "")
        return reason + (f", not proven: {unproven}" if unproven else "")
    return "found only with --preview" if preview.found else "not reported"


def ratio(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def summarize(cases: list, verdicts: dict) -> dict:
    found = {mode: [c.name for c in cases if verdicts[c.name][mode].found] for mode in MODES}
    families = {}
    for family in FAMILIES:
        members = [c for c in cases if c.family == family]
        if members:
            families[family] = {"cases": len(members),
                                **{mode: sum(verdicts[c.name][mode].found for c in members) for mode in MODES}}
    twins = sorted({c.name for c in cases for mode in MODES if verdicts[c.name][mode].twin_hits})
    default, preview = len(found["default"]), len(found["preview"])
    return {
        "cases": len(cases),
        "with_rule": sum(bool(c.expected) for c in cases),
        "found_default": default,
        "found_preview": preview,
        "recall_default": default / len(cases) if cases else 0.0,
        "recall_preview": preview / len(cases) if cases else 0.0,
        "default_over_preview": default / preview if preview else 0.0,
        "twin_flagged": len(twins),
        "twins_flagged": twins,
        "families": families,
        "missed_by_default": {c.name: why_missed(c, verdicts[c.name]) for c in cases
                              if not verdicts[c.name]["default"].found},
        "unreadable": {c.name: verdicts[c.name][m].errors for c in cases for m in MODES if verdicts[c.name][m].errors},
    }


def measure(root: Path = HERE) -> dict:
    """The cause set's figures (see summarize) for benchmarks/precision/measure.py."""
    cases = load_cases(root)
    return summarize(cases, judge_all(cases))


def print_table(figures: dict, out=sys.stdout) -> None:
    n = figures["cases"]
    print(f"\n## Cause set: {n} cases ({figures['with_rule']} with an expected rule), fixed twins flagged: "
          f"{figures['twin_flagged']}\n", file=out)
    print("| family | cases | default | --preview |", file=out)
    print("|---|---|---|---|", file=out)
    for family, row in figures["families"].items():
        print(f"| {family} | {row['cases']} | {row['default']} | {row['preview']} |", file=out)
    print(f"| **all** | {n} | **{figures['found_default']} ({ratio(figures['found_default'], n)})** | "
          f"**{figures['found_preview']} ({ratio(figures['found_preview'], n)})** |", file=out)
    print(f"\ndefault / preview: {ratio(figures['found_default'], figures['found_preview'])}", file=out)
    if figures["twins_flagged"]:
        print("fixed twins flagged: " + ", ".join(figures["twins_flagged"]), file=out)
    reasons = collections.Counter(figures["missed_by_default"].values())
    if reasons:
        print("\nmissed by the default run:", file=out)
        for name, reason in sorted(figures["missed_by_default"].items(), key=lambda item: (item[1], item[0])):
            print(f"  {name}: {reason}", file=out)
    for name, errors in figures["unreadable"].items():
        print(f"unreadable in {name}: " + "; ".join(errors), file=out)


def print_details(cases: list, verdicts: dict, out=sys.stdout) -> None:
    print("\n| case | family | expected | where | default | preview | twin |", file=out)
    print("|---|---|---|---|---|---|---|", file=out)
    for case in cases:
        row = verdicts[case.name]
        cells = []
        for mode in MODES:
            hits = row[mode].cause_hits
            cells.append(("found " if row[mode].found else "- ")
                         + ", ".join(f"{rule}@{line} {severity}" for _, line, rule, severity, _ in hits))
        twin = ", ".join(f"{mode}: {rule}@{path}:{line}" for mode in MODES
                         for path, line, rule, _ in row[mode].twin_hits) or "quiet"
        print(f"| {case.name} | {case.family} | {', '.join(case.expected) or NO_RULE} | {case.path}:{case.line} | "
              f"{cells[0]} | {cells[1]} | {twin} |", file=out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--details", action="store_true", help="one row per case: what each mode reported")
    args = parser.parse_args(argv)
    cases = load_cases()
    verdicts = judge_all(cases)
    if args.details:
        print_details(cases, verdicts)
    print_table(summarize(cases, verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
