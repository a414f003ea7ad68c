"""Whether SoftmaxCrossEntropyWithLogits's defaults (`sparse=False`, `reduction='none'`) are used on
purpose: labels the program one-hot encodes itself need `sparse=False`, and a loss that the user's own
loss Cell reduces (`self.mean(loss, 0)`) needs `reduction='none'` (knowledge/framework_defaults.toml,
`softmax_ce_on_purpose`)."""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Optional

from acclint.knowledge import table
from acclint.linter.facts import Call, FileFacts


@lru_cache(maxsize=1)
def _on_purpose() -> dict:
    return {key: frozenset(value) for key, value in table("framework_defaults")["softmax_ce_on_purpose"].items()}


def _at(file: FileFacts, call: Call) -> str:
    return f"`{call.callee}` at {file.path}:{file.spans[call.node].line}"


def one_hot_labels(files: Iterable[FileFacts]) -> Optional[str]:
    """Where the first of `files` that encodes labels one-hot does so, for evidence."""
    encoders = _on_purpose()["one_hot"]
    for file in files:
        found = next((c for c in file.calls if c.names & encoders), None)
        if found is not None:
            return _at(file, found)
    return None


def _owner(file: FileFacts, scope: str) -> Optional[str]:
    function = file.functions.get(scope)
    return function.owner if function is not None else None


def reduced_by_its_cell(file: FileFacts, loss: Call) -> Optional[str]:
    """Where the loss Cell (the class, else the function) that builds `loss` reduces a result, for evidence."""
    owner, table_ = _owner(file, loss.scope), _on_purpose()
    for call in file.calls:
        same = _owner(file, call.scope) == owner if owner is not None else call.scope == loss.scope
        if same and (call.names & table_["reducers"] or "." in call.callee and call.method in table_["reducer_methods"]):
            return _at(file, call)
    return None


def on_purpose(file: FileFacts, loss: Call, missing: list) -> dict:
    """keyword -> evidence, for the defaults among `missing` this file shows are used on purpose."""
    found = {}
    if "sparse" in missing and (where := one_hot_labels([file])) is not None:
        found["sparse"] = f"labels one-hot encoded by {where}"
    if "reduction" in missing and (where := reduced_by_its_cell(file, loss)) is not None:
        found["reduction"] = f"the loss reduced by {where}"
    return found
