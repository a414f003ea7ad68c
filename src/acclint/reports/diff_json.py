"""`acclint diff --format json`: the documented contract (docs/formats.md#setup-differences).

A side whose value is a default has `null` for its location (`left_origin`: "default");
`consequence` (what the difference does to the numbers, for model-code rows; else null),
`ignored`, `not_compared` and `problems` are additions consumers may ignore.
"""

from __future__ import annotations

import json

from acclint.setups import DiffResult, Setting
from acclint.setups.values import to_json

CONTRACT_VERSION = 1


def _location(setting: Setting):
    if setting.where is None:
        return None
    return {"path": setting.where.path, "line": setting.where.line}


def diff_dict(result: DiffResult) -> dict:
    return {
        "version": CONTRACT_VERSION,
        "left": result.left.path,
        "right": result.right.path,
        "mismatches": [
            {
                "key": m.key,
                "category": m.category,
                "left": to_json(m.left.value) if m.left.known else m.left.written or to_json(m.left.value),
                "right": to_json(m.right.value) if m.right.known else m.right.written or to_json(m.right.value),
                "left_location": _location(m.left),
                "right_location": _location(m.right),
                "message": m.message,
                "left_origin": m.left.origin,
                "right_origin": m.right.origin,
                "consequence": m.consequence or None,
            }
            for m in result.mismatches
        ],
        "same": list(result.same),
        "ignored": list(result.ignored),
        "not_compared": {"left": list(result.only_left), "right": list(result.only_right)},
        "problems": list(result.problems),
    }


def render_diff_json(result: DiffResult) -> str:
    return json.dumps(diff_dict(result), indent=2, ensure_ascii=False)
