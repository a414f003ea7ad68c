"""Where an optimizer's parameters come from, and which of its arguments apply to them.

MindSpore optimizers take a parameter list or groups (a list of dicts): a group's own `lr` or
`weight_decay` replaces the optimizer's argument for that group (mindspore nn/optim/optimizer.py,
`parse_keys`), so a default the call leaves out applies only to groups that do not carry the key.
A group without `params` (`{"order_params": ...}`) only orders the parameters and is not a group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from acclint.knowledge import table
from acclint.linter.facts import MODULE_SCOPE, Call, FileFacts, ParamGroups, Value


@dataclass(frozen=True)
class Parameters:
    """What an optimizer call is given: `groups` when written as a list of dicts; `plain` for an
    ungrouped list (`net.trainable_params()`); neither when acclint cannot tell."""

    text: str  # how the argument is written, for messages
    where: str  # file:line of the groups or of the call
    groups: Optional[ParamGroups] = None
    plain: bool = False

    def groups_without(self, key: str) -> Optional[list]:
        """1-based numbers of the groups that do not carry `key`; None when not known."""
        if self.plain:
            return [1]
        if self.groups is None:
            return None
        keys = self.groups.keys or tuple(frozenset(group) for group in self.groups)
        return [number for number, written in enumerate(keys, start=1) if "params" in written and key not in written]


def _ungrouped_methods() -> frozenset:
    return frozenset(table("framework_defaults")["param_groups"]["ungrouped_methods"])


def _line(file: FileFacts, node: int) -> str:
    return f"{file.path}:{file.spans[node].line}" if 0 <= node < len(file.spans) else file.path


def _plain(value: Value) -> bool:
    return bool(value.chain) and value.chain[-1] in _ungrouped_methods()


def _written(value: Value) -> str:
    if value.dotted:
        return f"`{value.dotted}`"
    if value.base and value.chain:
        return f"`{value.base}.{'.'.join(value.chain)}()`"
    if value.base and value.base_call:
        return f"`{value.base}(...)`"
    return "the parameters"


def optimizer_parameters(file: FileFacts, call: Call) -> Optional[Parameters]:
    """The parameters argument (`params=` or first) of an optimizer call, resolved in its file."""
    arg = call.arg("params", 0)
    if arg is None or arg.star:
        return None
    value, here = arg.value, _line(file, call.node)
    text = _written(value)
    inline = file.param_groups.get(call.node)
    if inline is not None:
        return Parameters("a list of groups", here, groups=inline)
    if _plain(value):
        return Parameters(text, here, plain=True)
    if not value.dotted or "." in value.dotted:
        return Parameters(text, here)
    constant = file.constants.get((call.scope, value.dotted)) or file.constants.get((MODULE_SCOPE, value.dotted))
    if constant is not None and isinstance(constant[0], ParamGroups):
        return Parameters(text, _line(file, constant[1]), groups=constant[0])
    bound = [a for a in file.name_assignments
             if a.scope == call.scope and a.name == value.dotted and a.order < call.order]
    if bound and _plain(bound[-1].value):
        return Parameters(text, here, plain=True)
    returned = _returned_groups(file, bound[-1].value) if bound else None
    if returned is not None:
        return Parameters(text, _line(file, returned[1]), groups=returned[0])
    return Parameters(text, here)


def _returned_groups(file: FileFacts, value: Value):
    """(ParamGroups, node) that a function of this file returns by name (`return group_params`), for a
    name bound from calling it (`group_params = init_group_params(net)`)."""
    if not (value.base_call and value.base and not value.chain and value.base in file.functions):
        return None
    for ret in file.returns:
        if ret.scope == value.base and ret.value.dotted and "." not in ret.value.dotted:
            constant = file.constants.get((value.base, ret.value.dotted))
            if constant is not None and isinstance(constant[0], ParamGroups):
                return constant
    return None
