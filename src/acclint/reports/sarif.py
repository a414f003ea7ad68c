"""SARIF 2.1.0 for GitHub code scanning (`github/codeql-action/upload-sarif`).

Follows GitHub's "SARIF support for code scanning" subset: rules carry their help and default
level, results carry a relative location under %SRCROOT% and a partial fingerprint.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path, PurePath
from typing import Iterable, Optional, Union
from urllib.parse import quote

from acclint.findings import Finding, ScanResult
from acclint.linter.rulebase import Rule
from acclint.reports.common import (
    PROBLEM_SEVERITY,
    SARIF_LEVEL,
    message_with_fix,
    sorted_errors,
    sorted_findings,
    sorted_skipped,
)
from acclint.reports.fingerprint import FINGERPRINT_KEY, Fingerprinter
from acclint.reports.rule_page import markdown_body, text_body

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
SRCROOT = "%SRCROOT%"
TOOL_NAME = "acclint"
DEFAULT_PRECISION = "high"  # a rule may declare `precision = "medium"` for heuristic checks

_SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


def rule_descriptor(rule: Rule) -> dict:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": inspect.cleandoc(rule.doc.what)},
        "help": {"text": text_body(rule), "markdown": markdown_body(rule)},
        "defaultConfiguration": {"level": SARIF_LEVEL[rule.severity]},
        "properties": {
            "tags": [rule.category],
            "precision": getattr(rule, "precision", DEFAULT_PRECISION),
            "problem.severity": PROBLEM_SEVERITY[rule.severity],
        },
    }


def artifact_location(path: str, base_dir: Union[str, Path, None]) -> dict:
    """A URI relative to %SRCROOT% (what GitHub needs to place the alert), percent-encoded."""
    pure = PurePath(path)
    if pure.is_absolute():
        if base_dir is not None:
            try:
                pure = pure.relative_to(Path(base_dir).absolute())
            except ValueError:
                # Outside the project: an absolute URI is the only honest location left.
                return {"uri": Path(path).as_uri()}
        else:
            return {"uri": Path(path).as_uri()}
    return {"uri": quote(pure.as_posix(), safe="/"), "uriBaseId": SRCROOT}


def region(finding: Finding) -> dict:
    """1-based, end exclusive like the finding; clamped so a degenerate range stays valid."""
    start_line = max(finding.line, 1)
    start_column = max(finding.column, 1)
    end_line = max(finding.end_line, start_line)
    end_column = max(finding.end_column, 1)
    if end_line == start_line:
        end_column = max(end_column, start_column)
    return {
        "startLine": start_line,
        "startColumn": start_column,
        "endLine": end_line,
        "endColumn": end_column,
    }


def _notification(level: str, text: str, path: str, base_dir, code: Optional[str] = None) -> dict:
    location = {"physicalLocation": {"artifactLocation": artifact_location(path, base_dir)}}
    note = {"level": level, "message": {"text": text}, "locations": [location]}
    if code is not None:  # E902/E999/E000: which failure, as the JSON report's `code`
        note["descriptor"] = {"id": code}
    return note


def sarif_log(
    result: ScanResult,
    rules: Iterable[Rule],
    *,
    tool_version: str,
    base_dir: Union[str, Path, None] = None,
    information_uri: Optional[str] = None,
) -> dict:
    descriptors = [rule_descriptor(rule) for rule in sorted(rules, key=lambda r: r.code)]
    index = {descriptor["id"]: i for i, descriptor in enumerate(descriptors)}
    fingerprint = Fingerprinter(base_dir)

    results = []
    for finding in sorted_findings(result.findings):
        if finding.rule not in index:
            # A code with no Rule object (e.g. an engine-internal check): give it a minimal
            # descriptor so `ruleIndex` still points at the right entry.
            index[finding.rule] = len(descriptors)
            descriptors.append({"id": finding.rule})
        location = artifact_location(finding.path, base_dir)
        results.append(
            {
                "ruleId": finding.rule,
                "ruleIndex": index[finding.rule],
                "level": SARIF_LEVEL[finding.severity],
                "message": {"text": message_with_fix(finding)},
                "locations": [
                    {"physicalLocation": {"artifactLocation": location, "region": region(finding)}}
                ],
                "partialFingerprints": {FINGERPRINT_KEY: fingerprint(finding, location["uri"])},
                # The premises the claim rests on, proven or not, with the evidence (docs/premises.md).
                "properties": {"proven": finding.proven, "premises": [p.to_dict() for p in finding.premises]},
            }
        )

    notifications = [
        _notification("error", error.message, error.path, base_dir, error.code)
        for error in sorted_errors(result.errors)
    ] + [
        _notification("note", f"skipped: {item.reason}", item.path, base_dir)
        for item in sorted_skipped(result.skipped)
    ]

    driver: dict = {"name": TOOL_NAME, "version": tool_version}
    if _SEMVER.match(tool_version):
        driver["semanticVersion"] = tool_version
    if information_uri:
        driver["informationUri"] = information_uri
    driver["rules"] = descriptors

    run: dict = {
        "tool": {"driver": driver},
        # The scan finished; files it could not read are reported, not fatal (SARIF §3.20.14).
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notifications}],
        # Columns count Python str characters, not SARIF's default UTF-16 code units.
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    if base_dir is not None:
        root = Path(base_dir).absolute().as_uri()
        # The spec wants a base URI to end with a slash.
        run["originalUriBaseIds"] = {SRCROOT: {"uri": root if root.endswith("/") else root + "/"}}
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render_sarif(
    result: ScanResult,
    rules: Iterable[Rule],
    *,
    tool_version: str,
    base_dir: Union[str, Path, None] = None,
    information_uri: Optional[str] = None,
) -> str:
    log = sarif_log(
        result, rules, tool_version=tool_version, base_dir=base_dir, information_uri=information_uri
    )
    return json.dumps(log, indent=2, ensure_ascii=False)
