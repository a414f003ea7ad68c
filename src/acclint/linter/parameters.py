"""The value a function's parameter has in every call a program can make: its literal default, when no
call of the function in the files the program reaches passes another value.

`def _bn(channel, res_base=False): if res_base: ...` runs that branch in no run when every call of `_bn`
passes nothing for `res_base`, or passes what resolves to the same default: an equal literal, a parameter
of the caller that resolves so in turn, or `self.res_base` stored in `__init__` from a parameter of the
class that no construction passes. A function handed over as a value, a decorated one (a registry may call
it with a configuration's keywords), a call that unpacks `*args` / `**kwargs`, a method called on an
object acclint cannot type, or no call found at all leaves the value unknown (None).

The calls are looked up in an index of each file's calls by name, built once per file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from acclint.linter.facts import ClassDef, FileFacts, FunctionDef

_MAX_DEPTH = 3  # parameters passed on through callers
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod"})


@dataclass(frozen=True)
class ParameterValue:
    value: Any
    evidence: str  # "`res_base` defaults to False (net.py:3), and none of the 4 calls of `_bn` ... passes another"


class Parameters:
    """The parameters of the functions that `files` (a program's files) define, resolved from their calls."""

    def __init__(self, project, files: list, setting=None):
        """`setting(dotted)`: the linter.runconfig.Setting every run gives a configuration key, or None."""
        self.project = project
        self.files = files
        self.setting = setting or (lambda dotted: None)
        self._values: dict = {}

    def value(self, file: FileFacts, scope: str, name: str, depth: int = 0) -> Optional[ParameterValue]:
        """The value `name`, a parameter of the function `scope` of `file`, has in every call, or None."""
        key = (file.abspath, scope, name)
        if key not in self._values:
            self._values[key] = None  # a recursive call path resolves to unknown
            if depth <= _MAX_DEPTH:
                self._values[key] = self._resolve(file, scope, name, depth)
        return self._values[key]

    def _resolve(self, file: FileFacts, scope: str, name: str, depth: int) -> Optional[ParameterValue]:
        function = file.functions.get(scope)
        if function is None or name not in function.params:
            return None
        default = function.defaults.get(name)
        if default is None or not default.is_literal or _decorated(function):
            return None
        if any(a.scope == scope and a.name == name for a in file.name_assignments):
            return None  # rebound in the body: the default is not what the test reads
        calls = self._calls_of(file, function)
        if not calls:
            return None
        notes = []
        for caller, call in calls:
            passed = _passed(call, function, name)
            if passed is False:
                return None
            if passed is None:
                continue
            note = self._same(caller, call, passed, default.literal, depth)
            if note is None:
                return None
            notes.append(note)
        line = file.spans[function.node].line
        shown = f" ({notes[0]})" if notes else ""
        calls_said = f"the only call of `{function.qualname}` the program reaches passes" if len(calls) == 1 else \
            f"none of the {len(calls)} calls of `{function.qualname}` the program reaches passes"
        return ParameterValue(default.literal, f"`{name}` defaults to {default.literal!r} ({file.path}:{line}), and "
                                               f"{calls_said} {'no other' if len(calls) == 1 else 'another'} "
                                               f"value{shown}")

    # -- what a call passes ---------------------------------------------------------------------
    def _same(self, caller: FileFacts, call, value, default: Any, depth: int) -> Optional[str]:
        """A note on why `value`, passed by `call`, is `default` in every run; None when it may not be."""
        where = f"{caller.path}:{caller.spans[call.node].line}"
        if value.is_literal:
            return f"{where} passes {value.literal!r}" if _equal(value.literal, default) else None
        dotted = value.dotted or ""
        if dotted and "." not in dotted:
            found = self.value(caller, call.scope, dotted, depth + 1)
            return f"{where} passes `{dotted}`, a parameter {default!r} in every call" if found is not None \
                and _equal(found.value, default) else None
        if dotted.startswith("self.") and dotted.count(".") == 1:
            stored = self._stored(caller, call.scope, dotted, depth)
            return f"{where} passes `{dotted}`, set in `__init__` from a parameter {default!r} in every call" \
                if stored is not None and _equal(stored.value, default) else None
        setting = self.setting(dotted) if dotted else None
        if setting is not None and _equal(setting.value, default):
            return f"{where} passes `{dotted}`: {setting.describe()}"
        return None

    def _stored(self, file: FileFacts, scope: str, dotted: str, depth: int) -> Optional[ParameterValue]:
        """`self.x`, assigned once in the file, in its class's `__init__`, from a parameter of it."""
        function = file.functions.get(scope)
        owner = function.owner if function is not None else None
        writes = [a for a in file.assignments if a.target == dotted]
        if owner is None or len(writes) != 1 or writes[0].scope != f"{owner}.__init__":
            return None
        source = writes[0].value.dotted or ""
        return self.value(file, writes[0].scope, source, depth + 1) if source and "." not in source else None

    # -- which calls reach the function ---------------------------------------------------------
    def _calls_of(self, file: FileFacts, function: FunctionDef) -> Optional[list]:
        """(caller file, Call) of each call of `function` in the program's files; None when some call may
        reach it unseen (handed over as a value, called on an object acclint does not type)."""
        short = function.qualname.rsplit(".", 1)[-1]
        constructor = short == "__init__" and function.owner is not None
        names = self._class_names(file, function) if constructor else {short}
        if names is None:
            return None
        if constructor:
            names.add("__init__")
        target = (file.abspath, function.qualname)
        found = []
        for caller in self.files:
            calls, references = _index(caller)
            for name in names:
                for reference in references.get(name, ()):
                    if self._reaches(caller, reference.name, reference.scope, target, constructor):
                        return None
                for call in calls.get(name, ()):
                    resolved = self.project.local_target(caller, call.callee, call.scope, {})
                    if resolved is None:
                        if _may_reach(call, function, names):
                            return None
                        continue
                    if _key(self._init_of(resolved) if constructor else resolved) == target:
                        found.append((caller, call))
        return found

    def _reaches(self, caller: FileFacts, name: str, scope: str, target: tuple, constructor: bool) -> bool:
        resolved = self.project.local_target(caller, name, scope, {})
        return resolved is not None and _key(self._init_of(resolved) if constructor else resolved) == target

    def _init_of(self, resolved: tuple) -> Optional[tuple]:
        """The `__init__` a construction `Cls(...)` runs (its own or a base's); a method call stays itself."""
        file, definition = resolved
        if isinstance(definition, ClassDef):
            return self.project._method(file, definition.qualname, "__init__")
        return resolved

    def _class_names(self, file: FileFacts, function: FunctionDef) -> Optional[set]:
        """Names of the classes of the program's files whose construction runs `function` (an `__init__`);
        None when one of them is decorated."""
        target = (file.abspath, function.qualname)
        names = set()
        for other in self.files:
            for cls in other.classes.values():
                if _key(self.project._method(other, cls.qualname, "__init__")) == target:
                    if cls.decorators:
                        return None  # a registry's class: built from a configuration's keywords too
                    names.add(cls.qualname.rsplit(".", 1)[-1])
        return names


def _may_reach(call, function: FunctionDef, names: set) -> bool:
    """Whether a call acclint could not resolve may still run `function`: a method called on an object of a
    type acclint does not know (`obj.step()`), a construction through a module it could not read, an
    explicit `Cls.__init__(self, ...)`. A plain function's unresolved call is another function of that name."""
    head, _, last = call.callee.rpartition(".")
    if function.owner is None or not head:
        return False
    if last == "__init__":  # `super().__init__()` of a base acclint did not read; `Cls.__init__(self)` of ours
        return head.rsplit(".", 1)[-1] in names
    if last in names and function.qualname.endswith(".__init__"):
        return not call.names  # `models.Net(...)`: a library's class of that name is not ours
    return True


def _passed(call, function: FunctionDef, name: str):
    """The Value `call` passes for `name`; None when it passes nothing; False when it may pass it unseen."""
    if any(arg.star for arg in call.args):
        return False
    for arg in call.args:
        if arg.keyword == name:
            return arg.value
    position = function.params.index(name)
    bound = function.owner is not None and not any(d.dotted == "staticmethod" for d in function.decorators)
    explicit_self = call.callee.endswith(".__init__") and not call.callee.startswith("super()")
    if bound and not explicit_self:
        position -= 1  # `self` (or `cls`) is not written in the call
    positional = [arg for arg in call.args if arg.keyword is None]
    return positional[position].value if 0 <= position < len(positional) else None


def _decorated(function: FunctionDef) -> bool:
    return any((d.dotted or "") not in _PLAIN_DECORATORS for d in function.decorators)


def _equal(value: Any, default: Any) -> bool:
    return value == default and type(value) is type(default)


def _key(resolved: Optional[tuple]) -> Optional[tuple]:
    return (resolved[0].abspath, resolved[1].qualname) if resolved is not None else None


def _index(file: FileFacts) -> tuple:
    """(last name -> calls, last name -> references) of one file, built once."""
    index = getattr(file, "_calls_by_name", None)
    if index is None:
        calls: dict = {}
        for call in file.calls:
            calls.setdefault(call.callee.rsplit(".", 1)[-1], []).append(call)
        references: dict = {}
        for reference in file.references:
            references.setdefault(reference.name.rsplit(".", 1)[-1], []).append(reference)
        index = file._calls_by_name = (calls, references)
    return index
