"""What a program holds beyond its flow: every call written in the files it reaches, and the code that
runs on behalf of an object rather than by a call the flow follows (a dataset's `__getitem__` runs
in DataLoader workers, a model's loss in `forward`). Rules that claim something is written nowhere
in a program, or look inside such methods, read these."""

from __future__ import annotations

from typing import Iterator, Optional

from acclint.linter.facts import MODULE_SCOPE, Call, ClassDef, FileFacts, FunctionDef
from acclint.linter.project import Program, Project, _scope_facts


def program_calls(program: Program) -> Iterator[tuple]:
    """(file, call) for every call written in a file the program reaches, outside test code."""
    for file in program.files:
        for call in file.calls:
            if call.node not in file.test_nodes:
                yield file, call


def mentions_any(program: Program, predicate) -> bool:
    """Whether some call of the program's files satisfies `predicate(call)`."""
    return any(predicate(call) for _, call in program_calls(program))


def reached_scopes(program: Program) -> set:
    """(abspath, scope) of the code the program runs: the top level of every file it reaches and
    every function its flow enters."""
    scopes = {(file.abspath, MODULE_SCOPE) for file in program.files}
    scopes.update(program.reached_functions)
    return scopes


def class_of_call(project: Project, file: FileFacts, call: Call) -> Optional[tuple]:
    """(file, ClassDef) a call constructs, when it constructs a local class."""
    target = project.local_target(file, call.callee, call.scope, {})
    return target if target is not None and isinstance(target[1], ClassDef) else None


def method_of(project: Project, file: FileFacts, cls: ClassDef, name: str) -> Optional[tuple]:
    """(file, FunctionDef) of `cls.name`, defined on the class or a local base."""
    return project._method(file, cls.qualname, name)


def first_call(project: Project, file: FileFacts, function: FunctionDef, predicate, depth: int) -> Optional[tuple]:
    """(file, call) of the first call satisfying `predicate` in `function` or the local functions and
    methods it calls, at most `depth` calls deep, on the path that runs when nothing fails and the callers
    switch nothing on: calls in `except` bodies (a replacement sample drawn when one cannot be read) and
    calls under a test of a parameter the caller leaves at an off default (`random_flip=False`, not passed)
    are left out."""
    todo, seen = [(file, function, 0, frozenset())], set()
    while todo:
        current_file, current, level, off = todo.pop(0)
        key = (current_file.abspath, current.qualname)
        if key in seen:
            continue
        seen.add(key)
        calls = [fact for fact in _scope_facts(current_file, current.qualname)
                 if isinstance(fact, Call) and not fact.in_handler and not _switched_off(fact, off)]
        for call in calls:
            if predicate(call):
                return current_file, call
        if level >= depth:
            continue
        for call in calls:
            target = project.local_target(current_file, call.callee, call.scope, {})
            if target is not None and isinstance(target[1], FunctionDef):
                todo.append((target[0], target[1], level + 1, left_off(target[1], call)))
    return None


def left_off(function: FunctionDef, call: Call) -> frozenset:
    """Parameters of `function` that `call` does not pass and whose default is off (False, None, 0, "")."""
    if any(arg.star for arg in call.args):
        return frozenset()  # `**kwargs` may pass anything
    params = list(function.params)
    if function.owner and params[:1] in (["self"], ["cls"]) and "." in call.callee:
        params = params[1:]  # bound by `obj.method(...)`
    passed = set(params[:sum(1 for arg in call.args if arg.keyword is None)])
    passed.update(arg.keyword for arg in call.args if arg.keyword)
    return frozenset(name for name, value in function.defaults.items()
                     if name not in passed and value.is_literal and not value.literal)


def _switched_off(call: Call, off: frozenset) -> bool:
    """Under `if flag:` / `flag and ...` (or `is not None`) of a parameter left at its off default."""
    return bool(off) and any(guard.dotted in off and guard.form in ("truthy", "not-none") for guard in call.flag_guards)
