"""Row source: a PyTorch API on one side and the MindSpore API ported from it on the other, both
left at their own defaults where those differ (knowledge/framework_defaults.toml entries that name
`torch_apis`, e.g. nn.LayerNorm eps 1e-5 vs MindSpore nn.LayerNorm epsilon 1e-7)."""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from acclint.knowledge import table
from acclint.setups.diff import Mismatch
from acclint.setups.model.read import ModelSide
from acclint.setups.model.sources import Rows, register
from acclint.setups.record import Setting

CATEGORY = "framework-default"


@lru_cache(maxsize=1)
def _entries() -> tuple:
    return tuple(entry for entry in table("framework_defaults").values()
                 if isinstance(entry, dict) and "torch_apis" in entry)


@register
def framework_defaults(left: ModelSide, right: ModelSide) -> Rows:
    rows = Rows()
    for entry in _entries():
        torch_left = _defaulted(left, entry["torch_apis"], entry["torch_keyword"], entry.get("torch_position"))
        ms_right = _defaulted(right, entry["apis"], entry["keyword"], entry.get("position"))
        torch_right = _defaulted(right, entry["torch_apis"], entry["torch_keyword"], entry.get("torch_position"))
        ms_left = _defaulted(left, entry["apis"], entry["keyword"], entry.get("position"))
        if torch_left and ms_right:
            rows.mismatches.append(_mismatch(entry, _setting(entry, torch_left, "torch"),
                                             _setting(entry, ms_right, "mindspore")))
        elif ms_left and torch_right:
            rows.mismatches.append(_mismatch(entry, _setting(entry, ms_left, "mindspore"),
                                             _setting(entry, torch_right, "torch")))
    return rows


def _defaulted(side: ModelSide, apis: list, keyword: str, position: Optional[int]) -> Optional[tuple]:
    """The first call of one of `apis` that leaves `keyword` to the default, as (file, call, api)."""
    for file, call in side.calls():
        found = call.names & set(apis)
        if found and call.arg(keyword, position) is None and not any(a.star for a in call.args):
            return file, call, sorted(found)[0]
    return None


def _setting(entry: dict, found: tuple, framework: str) -> Setting:
    file, call, api = found
    default = entry["torch_default"] if framework == "torch" else entry["mindspore"]
    return Setting(entry["diff_key"], default, file.where(call), origin="default", written=f"{api} default")


def _mismatch(entry: dict, left: Setting, right: Setting) -> Mismatch:
    key = entry["diff_key"]
    message = (f"{key}: both sides leave it to the framework's default, and the defaults differ: left "
               f"{left.value} ({left.where}), right {right.value} ({right.where}). Pass it explicitly on "
               f"the MindSpore side (`{entry['keyword']}=`) to match the PyTorch one ({entry['source']}).")
    return Mismatch(key, CATEGORY, left, right, message, consequence=f"{entry['mindspore']} vs {entry['torch']}")
