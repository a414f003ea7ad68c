"""Row source: a PyTorch call on one side and the MindSpore API its mapping page compares it with on
the other, computing with different values of a parameter the page documents (knowledge/
api_differences.toml, the table rule ACL711 reads): `nn.LeakyReLU()` (slope 0.01) against
MindSpore `nn.LeakyReLU()` (0.2), or the same value written differently on each side."""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from acclint.knowledge import table
from acclint.knowledge.api_differences import ApiDifference, load, number, same_api, selected_version
from acclint.setups.diff import Mismatch
from acclint.setups.model.read import ModelSide
from acclint.setups.model.sources import Rows, register
from acclint.setups.record import Setting

CATEGORY = "framework-default"
_COMPARED = ("default-value", "init")


@lru_cache(maxsize=1)
def _left_to_defaults_source() -> frozenset:
    """(MindSpore API, parameter) pairs the framework-defaults source already compares."""
    return frozenset((api, parameter) for entry in table("framework_defaults").values()
                     if isinstance(entry, dict) and "torch_apis" in entry
                     for api in entry["apis"] for parameter in entry.get("covers", ()))


@register
def api_differences(left: ModelSide, right: ModelSide) -> Rows:
    rows = Rows()
    covered = _left_to_defaults_source()
    for row in load(selected_version()):
        if row.kind not in _COMPARED or (row.mindspore, row.mindspore_parameter) in covered:
            continue
        for torch_side, ms_side, torch_first in ((left, right, True), (right, left, False)):
            compared = _compare(row, torch_side, ms_side, torch_first)
            if isinstance(compared, Mismatch):
                rows.mismatches.append(compared)
            elif compared is not None:
                rows.same.append(compared)
            if compared is not None:
                break
    return rows


def _compare(row: ApiDifference, torch_side: ModelSide, ms_side: ModelSide, torch_first: bool):
    """A Mismatch, the key when both sides compute with the same value, or None when not comparable."""
    torch_call = _first(torch_side, lambda names: row.torch in names)
    ms_call = _first(ms_side, lambda names: any(same_api(name, row.mindspore) for name in names))
    if torch_call is None or ms_call is None:
        return None
    torch_value = _value(torch_call[1], row.torch_parameter, row.torch_position, row.torch_default)
    ms_value = _value(ms_call[1], row.mindspore_parameter, row.mindspore_position, row.mindspore_default)
    key = f"{row.torch.rsplit('.', 1)[-1]}.{row.torch_parameter}"
    if torch_value is None or ms_value is None:
        return None
    if _equal(torch_value[0], ms_value[0]):
        return key  # compared, and the same
    torch_setting = Setting(key, torch_value[0], torch_call[0].where(torch_call[1]), origin=torch_value[1],
                            written=f"{row.torch} {row.torch_parameter}")
    ms_setting = Setting(key, ms_value[0], ms_call[0].where(ms_call[1]), origin=ms_value[1],
                         written=f"{row.mindspore} {row.mindspore_parameter}")
    left, right = (torch_setting, ms_setting) if torch_first else (ms_setting, torch_setting)
    message = (f"{key}: the PyTorch side computes with {row.torch_parameter}={torch_value[0]} "
               f"({torch_setting.where}), the MindSpore side with {row.mindspore_parameter}={ms_value[0]} "
               f"({ms_setting.where}). {row.consequence} Pass `{row.mindspore_parameter}={torch_value[0]}` on "
               f"the MindSpore side to match ({row.url}).")
    return Mismatch(key, CATEGORY, left, right, message, consequence=row.consequence)


def _first(side: ModelSide, matches) -> Optional[tuple]:
    for file, call in side.calls():
        if call.names and matches(call.names):
            return file, call
    return None


def _value(call, keyword: str, position: Optional[int], default: str) -> Optional[tuple]:
    """(value, origin) the call computes with: the literal it passes, else the default when it
    leaves the parameter out. None when that cannot be told (a non-literal, `*args`, or positional
    arguments where the table does not place the parameter)."""
    if any(arg.star for arg in call.args):
        return None
    arg = call.arg(keyword, position)
    if arg is not None:
        return (arg.value.literal, "explicit") if arg.value.is_literal else None
    if position is None and any(arg.keyword is None for arg in call.args):
        return None  # positional arguments, and where this parameter sits is not recorded
    return default, "default"


def _equal(a, b) -> bool:
    left, right = number(a), number(b)
    if left is not None and right is not None:
        return abs(left - right) <= 1e-12 * max(1.0, abs(left), abs(right))
    return str(a) == str(b)
