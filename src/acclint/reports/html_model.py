"""What the HTML report shows, as plain data: the checklist, the score, findings with their
source, the setup diff and the runtime verdict. The template only lays it out.

Built from the contract shapes (docs/formats.md): the scan JSON dict, the diff JSON dict and a runtime
view (see html_runtime), so the report follows the contract rather than the internals behind it.
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, Optional, Sequence

from markupsafe import Markup, escape

from acclint.findings import SEVERITIES
from acclint.knowledge import table
from acclint.linter.rulebase import Rule
from acclint.reports.common import plural, rule_title
from acclint.reports.html_groups import RuleGroup, rule_groups
from acclint.reports.rule_page import Bullets, Code, Prose, page_sections

RUNTIME = "runtime"
PASS, FAIL, NOT_CHECKED = "pass", "fail", "not-checked"
STATUS_WORDS = {PASS: "pass", FAIL: "fail", NOT_CHECKED: "not checked"}
# Severities that make a checklist item fail; `info` findings are advice and leave it passing.
FAILING = ("error", "warning")
CONTEXT_LINES = 2  # source lines shown before and after a finding's span
MAX_SPAN_LINES = 8  # a longer span shows its first lines only


def _escape(text: str) -> str:
    return html.escape(text, quote=False)


SCORE_FORMULA = (
    "Readiness = checklist items that pass ÷ all {total} checklist items × 100. "
    "An item fails on any error or warning finding, setup difference or runtime mismatch; "
    "info findings are advice and do not fail it. An item that was not checked counts as not passing: "
    "readiness is proved, not assumed."
)


@dataclass
class ChecklistItem:
    key: str
    title: str
    asks: str
    source: str  # where the guides ask for it (shown on hover and in print)
    status: str = NOT_CHECKED
    reason: str = ""  # why not checked, or what the status rests on; `code` in backticks
    counts: dict[str, int] = field(default_factory=dict)  # severity -> findings
    differences: int = 0  # setup-diff mismatches, or runtime mismatches for the runtime item
    evidence: str = ""  # fragment id of the section with the evidence
    rules: list[tuple[str, str]] = field(default_factory=list)  # (code, title) of the rules that checked it

    @property
    def status_word(self) -> str:
        return STATUS_WORDS[self.status]

    @property
    def findings(self) -> int:
        return sum(self.counts.values())

    @property
    def count_text(self) -> str:
        parts = [plural(n, s, "info" if s == "info" else None) for s, n in self.counts.items() if n]
        if self.differences:
            noun = "runtime mismatch" if self.key == RUNTIME else "setup difference"
            parts.append(plural(self.differences, noun, noun + "es" if noun.endswith("mismatch") else None))
        return ", ".join(parts) if parts else "—"


@dataclass
class FindingView:
    id: str
    rule: str
    rule_name: Optional[str]
    has_page: bool
    category: str
    severity: str
    path: str
    line: int
    column: int
    message: Markup
    fix: Optional[Markup]
    snippet: Markup  # rendered lines, span marked; empty when the source cannot be read
    # Why acclint thinks so: (premise, proven, evidence) for each premise the claim rests on.
    premises: tuple = ()

    @property
    def proven(self) -> bool:
        return bool(self.premises) and all(proven for _, proven, _ in self.premises)

    @property
    def title(self) -> str:
        return rule_title(self.rule, self.rule_name)


@dataclass
class ItemFindings:
    item: ChecklistItem
    rules: list[RuleGroup]  # top problems first (html_groups)

    @property
    def count(self) -> int:
        return sum(len(group.findings) for group in self.rules)


@dataclass
class Found:
    """What the scan judged as a whole: training programs (their entry scripts) and launch scripts.
    The rules judge a program's run; with no program found, no item can pass on their word."""

    programs: Sequence[str]
    launch_scripts: Sequence[str]

    @property
    def text(self) -> str:
        found = f"{plural(len(self.programs), 'training program')} and {plural(len(self.launch_scripts), 'launch script')} found"
        if self.programs:
            return found + "."
        return found + ": the rules judge a training run, so the items they check are not checked."


@dataclass
class RulePage:
    code: str
    title: str
    category: str
    severity: str
    summary: str
    sections: list[tuple[str, Markup]]


@dataclass
class Report:
    title: str
    command: str  # "report" or "scan"
    inputs: list[tuple[str, str]]  # (what, value) lines of the header
    checklist: list[ChecklistItem]
    score: int
    passed: int
    checked: int
    formula: str
    found: Optional[Found]  # None: the scan did not say (a scan dict from elsewhere)
    groups: list[ItemFindings]
    by_rule: list[RuleGroup]  # every rule with findings, top problems first: the summary by rule
    files: list[tuple[str, int]]  # every file with findings, with its count (the file filter)
    total_findings: int
    severity_counts: dict[str, int]
    files_scanned: int
    errors: list[dict]
    skipped: list[dict]
    rule_pages: list[RulePage]
    diff: Optional[dict]  # the diff JSON dict, rows prepared (see _diff_view)
    runtime: Optional[dict]  # see html_runtime.runtime_view
    generated: str
    version: str

    @property
    def verdict(self) -> str:
        """The answer to the lead's question: is this port ready for a parity run, and what is left?"""
        failing = [i.title for i in self.checklist if i.status == FAIL]
        unchecked = [i.title for i in self.checklist if i.status == NOT_CHECKED]
        if not failing and not unchecked:
            return "Ready for a parity run: every checklist item was checked and passes."
        parts = []
        if failing:
            parts.append(f"fix {', '.join(failing)}")
        if unchecked:
            parts.append(f"check {', '.join(unchecked)}")
        return "Not ready for a parity run yet: " + "; then ".join(parts) + "."

    @property
    def score_band(self) -> str:
        return "good" if self.score == 100 else ("fair" if self.score >= 50 else "poor")

    @property
    def severity_text(self) -> str:
        return ", ".join(plural(n, s, "info" if s == "info" else None) for s, n in self.severity_counts.items())


def checklist_items() -> list[ChecklistItem]:
    return [ChecklistItem(i["key"], i["title"], i["asks"], i["source"]) for i in table("checklist")["item"]]


# --- source snippets --------------------------------------------------------------------------


def snippet(lines: Optional[list[str]], finding: Mapping[str, Any]) -> Markup:
    """The finding's lines with CONTEXT_LINES around them, numbered, the span in <mark>.

    Columns are 1-based, end exclusive, counted in characters, as the scan JSON gives them.
    Built as plain strings with html.escape: 5,000 snippets must render in well under a second.
    """
    if not lines:
        return Markup("")
    start, end = finding["line"], max(finding.get("end_line") or finding["line"], finding["line"])
    if not 1 <= start <= len(lines):
        return Markup("")
    end = min(end, len(lines), start + MAX_SPAN_LINES - 1)
    first, last = max(1, start - CONTEXT_LINES), min(len(lines), end + CONTEXT_LINES)
    width = len(str(last))
    end_line = finding.get("end_line") or start
    rows = []
    for number in range(first, last + 1):
        text = lines[number - 1]
        gutter = f'<span class="ln">{str(number).rjust(width)}</span>'
        if not start <= number <= end:
            rows.append(f"<span>{gutter}{_escape(text)}</span>")
            continue
        left = finding.get("column", 1) - 1 if number == start else 0
        right = (finding.get("end_column") or 0) - 1 if number == end_line else len(text)
        left = max(0, min(left, len(text)))
        right = max(left, min(right, len(text)))
        if right == left:  # an empty span (e.g. "missing" findings at a line): mark the line
            left, right = 0, len(text)
        rows.append(f'<span class="hit">{gutter}{_escape(text[:left])}<mark>{_escape(text[left:right])}</mark>'
                    f"{_escape(text[right:])}</span>")
    # Block-level rows, so no newline between them: the browser breaks lines (and copies them).
    return Markup("".join(rows))


_SHELL_LINE = re.compile(r"(export\s+)?[A-Za-z_][A-Za-z0-9_]*=\S*")


@lru_cache(maxsize=1024)
def _is_code(text: str) -> bool:
    if _SHELL_LINE.fullmatch(text.strip()):
        return True
    try:
        compile(text, "<fix>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def fix_text(fix: Optional[str]) -> Optional[Markup]:
    """A fix in prose quotes its code in backticks; a fix that is one line of code shows as code."""
    if not fix:
        return None
    if "`" not in fix and _is_code(fix):
        return Markup(f"<code>{_escape(fix)}</code>")
    return inline(fix)


# --- rule pages -------------------------------------------------------------------------------


def inline(text: str) -> Markup:
    """Prose with `code` spans; everything else escaped."""
    parts = str(text).split("`")
    return Markup("".join(f"<code>{_escape(part)}</code>" if index % 2 else _escape(part)
                          for index, part in enumerate(parts)))


def breakable(path: str) -> Markup:
    """A path that may wrap after each `/` (<wbr>), never inside a name: a narrow column shows
    `examples/gpu/` over `train.py:12`, not one letter per line."""
    return Markup("/<wbr>".join(_escape(part) for part in str(path).split("/")))


def _block(block) -> Markup:
    if isinstance(block, Prose):
        return Markup("").join(Markup("<p>{}</p>").format(inline(p)) for p in block.text.split("\n\n"))
    if isinstance(block, Bullets):
        return Markup("<ul>{}</ul>").format(Markup("").join(Markup("<li>{}</li>").format(inline(i)) for i in block.items))
    if isinstance(block, Code):
        name = Markup('<div class="fname">{}</div>').format(block.filename) if block.filename else Markup("")
        # Focusable and named: a long line scrolls, and a keyboard must reach what scrolls.
        label = f"Example: {block.filename}" if block.filename else "Example code"
        return name + Markup('<pre class="code" tabindex="0" role="group" aria-label="{}">{}</pre>').format(label, block.source)
    return escape(str(block))


def rule_page(rule: Rule) -> RulePage:
    sections = [(title, Markup("").join(_block(b) for b in blocks)) for title, blocks in page_sections(rule)]
    return RulePage(rule.code, rule_title(rule.code, rule.name), rule.category, rule.severity, rule.summary, sections)


# --- the checklist ----------------------------------------------------------------------------


@dataclass
class ScanScope:
    """What the scan could check: the rules installed and the rules that ran."""

    installed: Sequence[Rule]
    active_codes: Optional[frozenset] = None  # None: every installed rule ran
    preview_codes: frozenset = frozenset()  # rules that did not run only because they are preview

    def active(self, category: str) -> list[Rule]:
        return [r for r in self.installed if r.category == category
                and (self.active_codes is None or r.code in self.active_codes)]

    def installed_in(self, category: str) -> list[Rule]:
        return [r for r in self.installed if r.category == category]


def _judge_category(item: ChecklistItem, scope: ScanScope, scan: Optional[dict], counts: Mapping[str, int],
                    diff: Optional[dict], diff_count: int, command: str, found: Optional[Found]) -> None:
    installed, active = scope.installed_in(item.key), scope.active(item.key)
    no_program = found is not None and not found.programs
    checked_by = []
    if scan is not None and active and scan.get("files_scanned", 0) and not no_program:
        checked_by.append(plural(len(active), "rule"))
        item.rules = [(r.code, rule_title(r.code, r.name)) for r in sorted(active, key=lambda r: r.code)]
    if diff is not None and item.key == "hyperparameter":
        checked_by.append("the setup diff")
    item.counts = dict(counts)
    item.differences = diff_count
    failing = sum(counts.get(s, 0) for s in FAILING) + diff_count
    if failing:
        item.status = FAIL
    elif checked_by or (any(counts.values()) and not no_program):
        item.status = PASS
    else:
        item.status = NOT_CHECKED
        if scan is not None and not scan.get("files_scanned", 0):
            item.reason = "no file was scanned"
        elif scan is not None and active and no_program:
            item.reason = "no training program was found among the files scanned"
        elif not installed and item.key == "hyperparameter":
            item.reason = ("no `--diff LEFT RIGHT` given: hyperparameters are checked by comparing two setups"
                           if command == "report" else
                           "scan does not compare setups: use `acclint report --diff LEFT RIGHT`")
        elif not installed:
            item.reason = "no rule of this family is installed in this acclint"
        else:
            item.reason = _why_rules_did_not_run(installed, scope.preview_codes)
        return
    item.reason = "checked by " + " and ".join(checked_by) if checked_by else ""


def _why_rules_did_not_run(installed: Sequence[Rule], preview_codes: frozenset) -> str:
    """`its 3 rules are preview (`--preview` to run them)`, `its rule was turned off (...)`, or both, counted."""
    preview = sum(1 for rule in installed if rule.code in preview_codes)
    off = len(installed) - preview
    waiting = f"`--preview` to run {'it' if preview == 1 else 'them'}"
    turned_off = "`--select` / `--ignore` / config"
    if not off:
        return f"its {_rules(preview)} {_be(preview, 'is', 'are')} preview ({waiting})"
    if not preview:
        return f"its {_rules(off)} {_be(off, 'was', 'were')} turned off ({turned_off})"
    return (f"{preview} of its {len(installed)} rules {_be(preview, 'is', 'are')} preview ({waiting}) and "
            f"{off} {_be(off, 'was', 'were')} turned off ({turned_off})")


def _rules(count: int) -> str:
    return "rule" if count == 1 else f"{count} rules"


def _be(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


def _judge_runtime(item: ChecklistItem, runtime: Optional[dict], command: str) -> None:
    item.evidence = "runtime"
    if runtime is None:
        item.reason = ("no `--fingerprints A.json B.json` given" if command == "report"
                       else "scan does not read fingerprints: use `acclint report --fingerprints A.json B.json`")
        return
    item.differences = len(runtime["mismatches"])
    item.status = PASS if runtime["ok"] else FAIL
    cause = runtime.get("first_cause")
    name = "" if not cause or cause["name"] == cause["kind"] else f" `{cause['name']}`"
    item.reason = (f"first cause: `{cause['kind']}`{name}" if cause
                   else f"parity over {plural(len(runtime['stages']), 'stage')}")


# --- the diff ---------------------------------------------------------------------------------


def _where(location: Any) -> Optional[str]:
    if isinstance(location, Mapping) and location.get("path"):
        line = location.get("line")
        return f"{location['path']}:{line}" if line else str(location["path"])
    return None


def show_value(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.8g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(show_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={show_value(v)}" for k, v in value.items())
    return str(value)


def diff_view(diff: Mapping[str, Any], titles: Mapping[str, str]) -> dict:
    rows = []
    for m in diff.get("mismatches", []):
        category = m.get("category") or ""
        rows.append({
            "key": m.get("key", "?"),
            "category": category,
            "item": titles.get(category, category),
            "left": show_value(m.get("left")),
            "right": show_value(m.get("right")),
            # A side without a location took the launcher's documented default (or a value derived from others).
            "left_where": _where(m.get("left_location")) or m.get("left_origin") or "default",
            "right_where": _where(m.get("right_location")) or m.get("right_origin") or "default",
            "message": m.get("message", ""),
        })
    return {"left": diff.get("left", ""), "right": diff.get("right", ""), "rows": rows,
            "same": [str(key) for key in diff.get("same", [])],
            "problems": [str(p) for p in diff.get("problems", [])]}  # what a side could not read


# --- the whole report -------------------------------------------------------------------------


def build_report(
    *,
    scan: Optional[dict],
    scope: ScanScope,
    sources: Callable[[str], Optional[list[str]]],
    diff: Optional[dict] = None,
    runtime: Optional[dict] = None,
    command: str = "report",
    inputs: Sequence[tuple[str, str]] = (),
    generated: str = "",
    version: str = "",
    found: Optional[Found] = None,
) -> Report:
    findings = list((scan or {}).get("findings", []))
    findings.sort(key=lambda f: (f["path"], f["line"], f.get("column", 0), f["rule"]))
    rules = {rule.code: rule for rule in scope.installed}

    items = checklist_items()
    runtime_item = next(i for i in items if i.key == RUNTIME)
    categories = [i for i in items if i.key != RUNTIME]
    known = {i.key for i in items}
    # A category the checklist does not know yet (a newer rule family) still gets its row.
    extra = sorted({f["category"] for f in findings if f["category"] not in known}
                   | {r.category for r in scope.installed if r.category not in known})
    categories += [ChecklistItem(c, c.replace("-", " ").capitalize(), "Rules of this family.", "") for c in extra]

    counts: dict[str, dict[str, int]] = {i.key: dict.fromkeys(SEVERITIES, 0) for i in categories}
    for finding in findings:
        bucket = counts[finding["category"]]
        bucket[finding["severity"]] = bucket.get(finding["severity"], 0) + 1
    diff_counts: dict[str, int] = defaultdict(int)
    for m in (diff or {}).get("mismatches", []):
        diff_counts[m.get("category") or "hyperparameter"] += 1
    for item in categories:
        if item.key not in counts:
            counts[item.key] = dict.fromkeys(SEVERITIES, 0)
        _judge_category(item, scope, scan, counts[item.key], diff, diff_counts.get(item.key, 0), command, found)
        has_findings = any(counts[item.key].values())
        item.evidence = f"item-{item.key}" if has_findings or not diff_counts.get(item.key) else "setup-diff"
    _judge_runtime(runtime_item, runtime, command)
    checklist = categories + [runtime_item]

    views: dict[str, list[FindingView]] = defaultdict(list)
    for number, f in enumerate(findings, start=1):
        rule = rules.get(f["rule"])
        views[f["category"]].append(FindingView(
            id=f"f{number}", rule=f["rule"], rule_name=rule.name if rule else None, has_page=rule is not None,
            category=f["category"], severity=f["severity"], path=f["path"], line=f["line"],
            column=f.get("column", 1), message=inline(f["message"]), fix=fix_text(f.get("fix")), snippet=snippet(sources(f["path"]), f),
            premises=tuple((p["premise"], p["proven"], inline(p["evidence"])) for p in f.get("premises", ())),
        ))
    groups = [ItemFindings(item, rule_groups(views[item.key], item.title)) for item in categories]

    file_counts: dict[str, int] = defaultdict(int)
    for f in findings:
        file_counts[f["path"]] += 1
    # Pages for every rule that ran (the evidence of a passing item) and every rule that reported.
    used = sorted({f["rule"] for f in findings if f["rule"] in rules} | {code for i in categories for code, _ in i.rules})
    passed = sum(1 for i in checklist if i.status == PASS)
    checked = sum(1 for i in checklist if i.status != NOT_CHECKED)
    severity_totals = dict.fromkeys(SEVERITIES, 0)
    for f in findings:
        severity_totals[f["severity"]] = severity_totals.get(f["severity"], 0) + 1
    return Report(
        title="acclint migration-readiness report",
        command=command,
        inputs=list(inputs),
        checklist=checklist,
        score=round(100 * passed / len(checklist)),
        passed=passed,
        checked=checked,
        formula=SCORE_FORMULA.format(total=len(checklist)),
        found=found,
        groups=groups,
        by_rule=sorted((rule for group in groups for rule in group.rules), key=RuleGroup.sort_key),
        files=sorted(file_counts.items()),
        total_findings=len(findings),
        severity_counts=severity_totals,
        files_scanned=(scan or {}).get("files_scanned", 0),
        errors=list((scan or {}).get("errors", [])),
        skipped=list((scan or {}).get("skipped", [])),
        rule_pages=[rule_page(rules[code]) for code in used],
        diff=diff_view(diff, {i.key: i.title for i in checklist}) if diff is not None else None,
        runtime=runtime,
        generated=generated,
        version=version,
    )
