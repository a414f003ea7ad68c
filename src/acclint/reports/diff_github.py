"""`acclint diff --format github`: one workflow annotation per mismatch, on the right side's line
(the run being migrated), or on the left's when the right takes a default."""

from __future__ import annotations

from acclint.reports.github import _command
from acclint.setups import DiffResult


def render_diff_github(result: DiffResult) -> str:
    commands = []
    for mismatch in result.mismatches:
        where = mismatch.right.where or mismatch.left.where
        properties = {"title": f"acclint diff: {mismatch.key} [{mismatch.category}]"}
        if where is not None:
            properties = {"file": where.path, "line": where.line, **properties}
        commands.append(_command("warning", properties, mismatch.message))
    for problem in result.problems:
        commands.append(_command("notice", {"title": "acclint diff"}, problem))
    return "\n".join(commands)
