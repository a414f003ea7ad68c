"""A rule's own valid and invalid examples, scanned as small projects on disk.

The test-suite checks every built-in rule with this (tests/rules/test_rule_examples.py), and
`acclint test-rules` checks a project's own rules (`plugins`) the same way.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Iterator, Optional

# What tools/new_rule.py writes where the author still has to: a rule carrying it is not done.
PLACEHOLDER = "TODO(new_rule)"


def cases(rule) -> Iterator[tuple]:
    """(kind, index, example) for each example of `rule`, invalid ones first."""
    for kind, examples in (("invalid", rule.invalid), ("valid", rule.valid)):
        for index, example in enumerate(examples):
            yield kind, index, example


def scan_example(rule, example, folder: Path):
    """Write the example's files under `folder`, scan them with `rule` alone: ((path, line) of its
    findings, the ScanResult)."""
    from acclint.config import Config, load_config
    from acclint.linter.engine import scan

    for relative, source in example.on_disk().items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source, encoding="utf-8")
    # An example may carry its project's `[tool.acclint]` (a rule whose behaviour depends on a setting,
    # such as ACL711's mindspore-version); it is read as the CLI would read it.
    pyproject = folder / "pyproject.toml"
    config = (load_config(pyproject, explicit=False, known_codes={rule.code}) if "pyproject.toml" in example.files
              else Config())
    result = scan([folder], [rule], config, jobs=1, cwd=folder)
    return {(f.path, f.line) for f in result.findings if f.rule == rule.code}, result


def example_problem(rule, kind: str, example, folder: Path) -> Optional[str]:
    """What is wrong with one example of `rule` (scanned under the empty `folder`), or None."""
    if any(PLACEHOLDER in source for source in example.files.values()):
        return f"the {kind} example is still the placeholder tools/new_rule.py wrote: write a real one"
    found, result = scan_example(rule, example, folder)
    if result.errors:
        return "the example could not be scanned: " + "; ".join(f"{e.path}: {e.code} {e.message}" for e in result.errors)
    if kind == "valid":
        if found:
            return "a valid example was reported: " + "; ".join(
                f"{f.path}:{f.line} {f.message}" for f in result.findings if f.rule == rule.code)
        return None
    expected = example.expected(rule.code)
    if not expected:
        return f"an invalid example must mark where its finding lands (`# expect: {rule.code}`)"
    if found != expected:
        return (f"expected findings at {sorted(expected)}, found {sorted(found)}: "
                + "; ".join(f.message for f in result.findings))
    return None


def metadata_problem(rule) -> Optional[str]:
    """Examples of both kinds and a complete page, or what is missing."""
    if not (rule.invalid and rule.valid):
        return "a rule needs at least one invalid and one valid example"
    texts = [rule.summary, rule.doc.what, rule.doc.why, rule.doc.fix]
    if not all(texts):
        return "summary, doc.what, doc.why and doc.fix must all be written"
    if any(PLACEHOLDER in text for text in texts):
        return "the summary or doc is still the placeholder tools/new_rule.py wrote"
    return None


def rule_problems(rule) -> list:
    """Every problem of `rule`'s examples and page, each as one line (empty: all pass)."""
    problems = []
    metadata = metadata_problem(rule)
    if metadata:
        problems.append(f"{rule.code}: {metadata}")
    for kind, index, example in cases(rule):
        with tempfile.TemporaryDirectory(prefix="acclint-example-") as folder:
            problem = example_problem(rule, kind, example, Path(folder))
        if problem:
            problems.append(f"{rule.code} {kind} example {index + 1}: {problem}")
    return problems
