"""SARIF 2.1.0 output for GitHub code scanning.

No PyPI package we could find ships the OASIS SARIF 2.1.0 JSON schema (checked: sarif-om,
sarif-tools, jschon, sarif-pydantic), and tests must not fetch it from the web, so
`sarif_problems` below checks what the schema and GitHub's upload endpoint enforce for the
parts we emit: required properties, types, enums, 1-based regions, rule indexes.
"""

import json
import re

import pytest

from acclint.findings import FileError, Finding, ScanResult, Skipped
from acclint.linter.rulebase import Example, Rule, RuleDoc
from acclint.reports.fingerprint import FINGERPRINT_KEY
from acclint.reports.sarif import SARIF_SCHEMA, render_sarif, sarif_log

LEVELS = {"none", "note", "warning", "error"}
PRECISIONS = {"very-high", "high", "medium", "low"}
PROBLEM_SEVERITIES = {"error", "warning", "recommendation"}


def sarif_problems(log) -> list[str]:
    """Everything wrong with `log` as a GitHub-uploadable SARIF 2.1.0 log; empty when valid."""
    problems: list[str] = []

    def need(condition, where):
        if not condition:
            problems.append(where)
        return condition

    def is_text(value):
        return isinstance(value, str) and value != ""

    def is_pos_int(value):
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1

    def message(obj, where):
        need(isinstance(obj, dict) and is_text(obj.get("text")), f"{where}.message.text")

    def artifact(location, where):
        if not need(isinstance(location, dict), where):
            return
        uri = location.get("uri")
        need(is_text(uri) and " " not in uri and "\\" not in uri, f"{where}.uri")
        if "uriBaseId" in location:
            need(is_text(location["uriBaseId"]), f"{where}.uriBaseId")
            # Relative to the base: no scheme, no leading slash.
            need(isinstance(uri, str) and not re.match(r"^[a-z]+:|^/", uri), f"{where}.uri rel")

    need(isinstance(log, dict), "log is an object")
    if problems:
        return problems
    need(log.get("version") == "2.1.0", "version")
    need(is_text(log.get("$schema")), "$schema")
    runs = log.get("runs")
    if not need(isinstance(runs, list) and runs, "runs"):
        return problems
    for r, run in enumerate(runs):
        driver = run.get("tool", {}).get("driver") if isinstance(run, dict) else None
        if not need(isinstance(driver, dict) and is_text(driver.get("name")), f"runs[{r}].driver"):
            continue
        rules = driver.get("rules", [])
        need(isinstance(rules, list), "driver.rules")
        ids = [rule.get("id") for rule in rules if isinstance(rule, dict)]
        need(len(ids) == len(rules) and all(is_text(i) for i in ids), "rules[].id")
        need(len(set(ids)) == len(ids), "rule ids unique")
        for i, rule in enumerate(rules):
            where = f"rules[{i}]"
            for key in ("shortDescription", "fullDescription"):
                if key in rule:
                    need(is_text(rule[key].get("text")), f"{where}.{key}.text")
            if "help" in rule:
                need(is_text(rule["help"].get("text")), f"{where}.help.text")
                need(rule["help"].get("markdown") is None
                     or isinstance(rule["help"]["markdown"], str), f"{where}.help.markdown")
            if "defaultConfiguration" in rule:
                need(rule["defaultConfiguration"].get("level") in LEVELS, f"{where}.level")
            props = rule.get("properties", {})
            if "tags" in props:
                need(isinstance(props["tags"], list)
                     and all(is_text(t) for t in props["tags"]), f"{where}.tags")
            if "precision" in props:
                need(props["precision"] in PRECISIONS, f"{where}.precision")
            if "problem.severity" in props:
                need(props["problem.severity"] in PROBLEM_SEVERITIES, f"{where}.problem.severity")
        results = run.get("results")
        if not need(isinstance(results, list), f"runs[{r}].results"):
            continue
        for k, result in enumerate(results):
            where = f"results[{k}]"
            message(result.get("message"), where)
            need(is_text(result.get("ruleId")), f"{where}.ruleId")
            if "ruleIndex" in result:
                index = result["ruleIndex"]
                need(isinstance(index, int) and 0 <= index < len(rules)
                     and rules[index].get("id") == result.get("ruleId"), f"{where}.ruleIndex")
            if "level" in result:
                need(result["level"] in LEVELS, f"{where}.level")
            locations = result.get("locations")
            if not need(isinstance(locations, list) and locations, f"{where}.locations"):
                continue
            physical = locations[0].get("physicalLocation", {})
            artifact(physical.get("artifactLocation"), f"{where}.artifactLocation")
            region = physical.get("region", {})
            need(is_pos_int(region.get("startLine")), f"{where}.region.startLine")
            for key in ("startColumn", "endLine", "endColumn"):
                if key in region:
                    need(is_pos_int(region[key]), f"{where}.region.{key}")
            if is_pos_int(region.get("endLine")) and is_pos_int(region.get("startLine")):
                need(region["endLine"] >= region["startLine"], f"{where}.region line order")
                if region["endLine"] == region["startLine"] and "endColumn" in region:
                    need(region["endColumn"] >= region.get("startColumn", 1),
                         f"{where}.region column order")
            fingerprints = result.get("partialFingerprints", {})
            need(isinstance(fingerprints, dict)
                 and all(isinstance(v, str) for v in fingerprints.values()),
                 f"{where}.partialFingerprints")
        for i, invocation in enumerate(run.get("invocations", [])):
            need(isinstance(invocation.get("executionSuccessful"), bool),
                 f"invocations[{i}].executionSuccessful")
            for n, note in enumerate(invocation.get("toolExecutionNotifications", [])):
                message(note.get("message"), f"notifications[{n}]")
                need(note.get("level", "warning") in LEVELS, f"notifications[{n}].level")
                for location in note.get("locations", []):
                    artifact(location.get("physicalLocation", {}).get("artifactLocation"),
                             f"notifications[{n}].artifactLocation")
    return problems


class UnseededNumpy(Rule):
    code = "ACL101"
    name = "unseeded-numpy"
    category = "seed"
    severity = "warning"
    summary = "NumPy's global RNG is used before it is seeded"
    doc = RuleDoc(
        what="Finds np.random calls that run before any np.random.seed.",
        why="GPU and NPU runs then start from different weights.",
        fix="Seed NumPy once at start-up.",
        references=("https://numpy.org/doc/stable/reference/random/",),
    )
    invalid = (Example.script("import numpy as np\nnp.random.rand(3)  # expect: ACL101\n"),)
    valid = (Example.script("import numpy as np\nnp.random.seed(0)\nnp.random.rand(3)\n"),)


class CudnnBenchmark(Rule):
    code = "ACL202"
    name = "cudnn-benchmark"
    category = "determinism"
    severity = "error"
    summary = "cudnn.benchmark picks kernels by timing"
    precision = "medium"
    doc = RuleDoc(what="Flags cudnn.benchmark = True.", why="Nondeterministic.", fix="Drop it.")


class FusedHint(Rule):
    code = "ACL301"
    name = "fused-hint"
    category = "fused-op"
    severity = "info"
    summary = "a fused op differs on NPU"
    doc = RuleDoc(what="w", why="y", fix="f")


RULES = [FusedHint(), CudnnBenchmark(), UnseededNumpy()]


def finding(rule="ACL101", path="train.py", line=2, column=1, end_line=None, end_column=18,
            severity=None, message="np.random.rand before seeding", fix=None):
    severity = severity or {"ACL101": "warning", "ACL202": "error"}.get(rule, "info")
    end_line = line if end_line is None else end_line
    return Finding(rule, "seed", severity, path, line, column, end_line, end_column, message, fix)


def sample() -> ScanResult:
    return ScanResult(
        3,
        [finding(), finding("ACL202", line=5, message="benchmark on"),
         finding("ACL301", "pkg/model.py", 3, 9, 6, 2, message="fused", fix="use unfused")],
        [FileError("broken.py", "syntax error at line 3: invalid syntax", "E999")],
        [Skipped("weights.bin", "binary file")],
    )


def log_of(result=None, rules=RULES, **kwargs):
    kwargs.setdefault("tool_version", "0.1.0")
    return json.loads(render_sarif(result or sample(), rules, **kwargs))


def run_of(log):
    return log["runs"][0]


# --- the validator itself must be able to fail ---------------------------------------------


def test_output_passes_the_structural_checks(tmp_path):
    (tmp_path / "train.py").write_text("import numpy as np\nnp.random.rand(3)\n")
    assert sarif_problems(log_of(base_dir=str(tmp_path))) == []
    assert sarif_problems(log_of(ScanResult())) == []


def test_registered_rules_pass_the_structural_checks():
    from acclint.rules import all_rules

    rules = all_rules()
    result = ScanResult(1, [finding(rule.code, line=i + 1, severity=rule.severity)
                            for i, rule in enumerate(rules)])
    log = log_of(result, rules=rules)
    assert sarif_problems(log) == []
    assert len(run_of(log)["tool"]["driver"]["rules"]) == len(rules)


@pytest.mark.parametrize("breakage, problem", [
    (lambda log: log.update(version="2.0.0"), "version"),
    (lambda log: run_of(log)["results"][0].update(level="info"), "results[0].level"),
    (lambda log: run_of(log)["results"][0].update(ruleIndex=1), "results[0].ruleIndex"),
    (lambda log: run_of(log)["results"][0]["locations"][0]["physicalLocation"]["region"]
     .update(startLine=0), "results[0].region.startLine"),
    (lambda log: run_of(log)["results"][0]["locations"][0]["physicalLocation"]["region"]
     .update(endColumn=0), "results[0].region.endColumn"),
    (lambda log: run_of(log)["results"][0]["message"].pop("text"), "results[0].message.text"),
    (lambda log: run_of(log)["tool"]["driver"].pop("name"), "runs[0].driver"),
    (lambda log: run_of(log)["invocations"][0].update(executionSuccessful="yes"),
     "invocations[0].executionSuccessful"),
    (lambda log: run_of(log)["results"][0]["locations"][0]["physicalLocation"]
     ["artifactLocation"].update(uri="/abs/train.py"), "results[0].artifactLocation.uri rel"),
])
def test_validator_catches_broken_logs(breakage, problem):
    log = log_of()
    breakage(log)
    assert problem in sarif_problems(log)


# --- the log -----------------------------------------------------------------------------


def test_header_and_driver():
    log = log_of(information_uri="https://example.org/acclint")
    assert log["$schema"] == SARIF_SCHEMA == "https://json.schemastore.org/sarif-2.1.0.json"
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    driver = run_of(log)["tool"]["driver"]
    assert driver["name"] == "acclint"
    assert driver["version"] == driver["semanticVersion"] == "0.1.0"
    assert driver["informationUri"] == "https://example.org/acclint"


def test_semantic_version_only_for_semver():
    driver = run_of(log_of(tool_version="0.2.0.dev3"))["tool"]["driver"]
    assert driver["version"] == "0.2.0.dev3" and "semanticVersion" not in driver
    assert "informationUri" not in driver


def test_rule_descriptors():
    rules = run_of(log_of())["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == ["ACL101", "ACL202", "ACL301"]
    numpy = rules[0]
    assert numpy["name"] == "unseeded-numpy"
    assert numpy["shortDescription"]["text"] == UnseededNumpy.summary
    assert numpy["fullDescription"]["text"] == UnseededNumpy.doc.what
    for part in (UnseededNumpy.doc.what, UnseededNumpy.doc.why, UnseededNumpy.doc.fix):
        assert part in numpy["help"]["text"] and part in numpy["help"]["markdown"]
    assert "# expect" not in numpy["help"]["markdown"]
    assert numpy["properties"] == {"tags": ["seed"], "precision": "high",
                                   "problem.severity": "warning"}
    assert [rule["defaultConfiguration"]["level"] for rule in rules] == [
        "warning", "error", "note"]
    assert rules[1]["properties"]["precision"] == "medium"  # declared on the rule
    assert rules[2]["properties"]["problem.severity"] == "recommendation"


def test_results_levels_indexes_and_messages():
    run = run_of(log_of())
    rules = run["tool"]["driver"]["rules"]
    results = run["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("ACL301", "note"), ("ACL101", "warning"), ("ACL202", "error")]  # sorted by path
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    assert results[0]["message"]["text"] == "fused\nfix: use unfused"


def test_a_finding_may_carry_a_severity_other_than_the_rule_default():
    results = run_of(log_of(ScanResult(1, [finding(severity="error")])))["results"]
    assert results[0]["level"] == "error"


def test_unknown_rule_codes_get_a_descriptor():
    run = run_of(log_of(ScanResult(1, [finding("ACL999")]), rules=[UnseededNumpy()]))
    rules = run["tool"]["driver"]["rules"]
    assert rules[run["results"][0]["ruleIndex"]]["id"] == "ACL999"
    assert sarif_problems(log_of(ScanResult(1, [finding("ACL999")]), rules=[])) == []


def test_locations_are_relative_posix_uris_under_srcroot(tmp_path):
    result = ScanResult(4, [
        finding(path="./src/my model.py"),
        finding(path=str(tmp_path / "pkg" / "train.py")),
        finding(path="/elsewhere/x.py"),
    ])
    run = run_of(log_of(result, base_dir=str(tmp_path)))
    locations = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]:
                 r["locations"][0]["physicalLocation"]["artifactLocation"]
                 for r in run["results"]}
    assert locations["src/my%20model.py"]["uriBaseId"] == "%SRCROOT%"
    assert locations["pkg/train.py"]["uriBaseId"] == "%SRCROOT%"
    assert "uriBaseId" not in locations["file:///elsewhere/x.py"]  # outside the project
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"


def test_region_is_one_based_end_exclusive_and_clamped():
    run = run_of(log_of(ScanResult(2, [
        finding(line=40, column=5, end_column=30),
        finding(path="z.py", line=0, column=0, end_line=0, end_column=0),  # degenerate
    ])))
    regions = [r["locations"][0]["physicalLocation"]["region"] for r in run["results"]]
    assert regions[0] == {"startLine": 40, "startColumn": 5, "endLine": 40, "endColumn": 30}
    assert regions[1] == {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1}


def test_file_errors_and_skips_become_notifications():
    invocation = run_of(log_of())["invocations"][0]
    assert invocation["executionSuccessful"] is True
    notes = invocation["toolExecutionNotifications"]
    assert [(n["level"], n["message"]["text"]) for n in notes] == [
        ("error", "syntax error at line 3: invalid syntax"), ("note", "skipped: binary file")]
    uri = notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "broken.py"
    assert notes[0]["descriptor"] == {"id": "E999"}  # the same code as the JSON report's
    assert "descriptor" not in notes[1]


# --- fingerprints --------------------------------------------------------------------------


def fingerprints(result, base_dir):
    run = run_of(log_of(result, base_dir=str(base_dir)))
    return [r["partialFingerprints"][FINGERPRINT_KEY] for r in run["results"]]


def test_fingerprint_survives_lines_inserted_above(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir(), after.mkdir()
    (before / "train.py").write_text("import numpy as np\nx = np.random.rand(3)\n")
    (after / "train.py").write_text("import os\nimport numpy as np\n\n  x =  np.random.rand(3)\n")
    old = fingerprints(ScanResult(1, [finding(line=2)]), before)
    new = fingerprints(ScanResult(1, [finding(line=4, column=3)]), after)
    assert old == new
    assert re.fullmatch(r"[0-9a-f]{32}:1", old[0])
    # ...but not an edit of the flagged line itself, though the message stays the same.
    (after / "train.py").write_text("import os\nimport numpy as np\n\nx = np.random.rand(4)\n")
    assert fingerprints(ScanResult(1, [finding(line=4)]), after) != old


def test_fingerprint_changes_with_rule_path_or_line_text(tmp_path):
    (tmp_path / "train.py").write_text("a = 1\nb = 2\n")
    (tmp_path / "other.py").write_text("a = 1\n")
    prints = fingerprints(ScanResult(1, [
        finding(line=1), finding("ACL202", line=1, column=2), finding(line=2),
        finding(path="other.py", line=1)]), tmp_path)
    digests = {p.split(":")[0] for p in prints}  # without the occurrence number
    assert len(digests) == 4


def test_fingerprint_falls_back_to_the_message_when_the_line_is_unreadable(tmp_path):
    same = fingerprints(ScanResult(1, [finding(path="gone.py", line=3)]), tmp_path)
    moved = fingerprints(ScanResult(1, [finding(path="gone.py", line=9)]), tmp_path)
    other = fingerprints(ScanResult(1, [finding(path="gone.py", message="different")]), tmp_path)
    assert same == moved != other


def test_identical_lines_get_occurrence_numbers(tmp_path):
    (tmp_path / "train.py").write_text("np.random.rand(3)\nnp.random.rand(3)\n")
    prints = fingerprints(ScanResult(1, [finding(line=2), finding(line=1)]), tmp_path)
    assert prints[0].split(":")[0] == prints[1].split(":")[0]
    assert [p.split(":")[1] for p in prints] == ["1", "2"]


def test_output_is_deterministic(tmp_path):
    (tmp_path / "train.py").write_text("x\n" * 10)
    kwargs = dict(tool_version="0.1.0", base_dir=str(tmp_path))
    assert render_sarif(sample(), RULES, **kwargs) == render_sarif(sample(), RULES[::-1], **kwargs)


def test_sarif_log_and_render_agree():
    assert json.loads(render_sarif(sample(), RULES, tool_version="1.0.0")) == sarif_log(
        sample(), RULES, tool_version="1.0.0")
