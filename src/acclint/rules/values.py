"""Where a value written as a name comes from: a constant, a parameter's default, or an attribute of
the model's config class.

Model code rarely writes its hyperparameters as literals at the layer: `nn.Dropout(dropout)` takes
the default of `__init__(self, dropout=0.1)`, `nn.Dropout(config.hidden_dropout_prob)` the default
of the config class, `nn.LayerNorm(d, eps=config.layer_norm_eps)` the config's epsilon. These
helpers follow such a name one step, through the facts of the file and the project's resolution of
local classes, and say where the value was found (for the message). What they cannot see (a value
passed by a caller, a config read from a JSON file) stays unknown: callers decide what that means.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator, Optional

from acclint.knowledge import table
from acclint.linter.facts import MODULE_SCOPE, NOT_LITERAL, ClassDef, FileFacts, FunctionDef, Value


@dataclass(frozen=True)
class Origin:
    """A value found for a name, and where: `what` names it for a message ("the default of
    `dropout` in Block.__init__", "BertConfig.layer_norm_eps"); `value` is NOT_LITERAL when the
    name is defined there but not as a literal."""

    value: Any
    what: str
    file: FileFacts
    node: int

    @property
    def where(self) -> str:
        line = self.file.spans[self.node].line if 0 <= self.node < len(self.file.spans) else 1
        return f"{self.file.path}:{line}"


@lru_cache(maxsize=1)
def _config_table() -> dict:
    return table("model_config")["config_params"]


def is_config_param(name: str) -> bool:
    """A parameter through which a module receives its model's config (`config`, `neox_args`)."""
    conventions = _config_table()
    return name in conventions["names"] or name.endswith(tuple(conventions["suffixes"]))


def config_params(function: FunctionDef) -> tuple:
    return tuple(p for p in function.params if is_config_param(p))


def number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def enclosing_function(file: FileFacts, scope: str) -> Optional[FunctionDef]:
    return file.functions.get(scope) if scope != MODULE_SCOPE else None


def reassigned(file: FileFacts, scope: str, name: str, before: int) -> bool:
    """Whether `name` is rebound in `scope` before `before` (then a parameter's default is not what is used)."""
    return any(a.scope == scope and a.name == name and a.order < before for a in file.name_assignments)


def name_origin(file: FileFacts, scope: str, name: str, order: int) -> Optional[Origin]:
    """The value a bare `name` read in `scope` at `order` holds, when this file shows it: the default of a
    parameter of the enclosing function (not rebound before), a constant of that scope, or a module constant."""
    function = enclosing_function(file, scope)
    if function is not None and name in function.params:
        default = function.defaults.get(name)
        if default is None or reassigned(file, scope, name, order):
            return None
        return Origin(default.literal, f"the default of `{name}` in {function.qualname}", file, function.node)
    for where in ((scope, name), (MODULE_SCOPE, name)):
        found = file.constants.get(where)
        if found is not None:
            label = "module constant" if where[0] == MODULE_SCOPE else "constant"
            return Origin(found[0], f"{label} `{name}`", file, found[1])
    return None


# -- config classes ------------------------------------------------------------------------------

def class_attribute(project, file: FileFacts, cls: ClassDef, attribute: str) -> Optional[Origin]:
    """`attribute` as `cls` (or a local base) defines it: a class-body field (dataclass), or `self.attribute = x`
    in its `__init__` (a transformers config), with x's literal value or the default of the parameter it is."""
    for owner_file, owner in ((file, cls), *project.local_bases(file, cls)):
        label = f"{owner.qualname}.{attribute}"
        field = owner.fields.get(attribute)
        if field is not None:
            return Origin(field.literal, label, owner_file, owner.node)
        init = owner_file.functions.get(f"{owner.qualname}.__init__")
        if init is None:
            continue
        for assignment in owner_file.assignments:
            if assignment.scope == init.qualname and assignment.target == f"self.{attribute}":
                value = assignment.value
                if value.dotted in init.defaults:
                    value = init.defaults[value.dotted]
                return Origin(value.literal, label, owner_file, assignment.node)
    return None


def resolve_class(project, file: FileFacts, value: Optional[Value]) -> Optional[tuple]:
    """(file, ClassDef) of a local class that `value` (an annotation, `config_class = X`) names."""
    if value is None:
        return None
    dotted = value.dotted
    if dotted is None and isinstance(value.literal, str):  # `config: "BertConfig"`
        dotted = value.literal
    if not dotted:
        return None
    target = project.local_target(file, dotted, MODULE_SCOPE, {})
    return target if target is not None and isinstance(target[1], ClassDef) else None


def declared_config_class(project, file: FileFacts, function: FunctionDef, param: str) -> Optional[tuple]:
    """The config class a module declares for `param` of `function`: its annotation (`config: BertConfig`),
    else the owner class's `config_class = BertConfig` (transformers), through local bases."""
    found = resolve_class(project, file, function.annotations.get(param))
    if found is not None or function.owner is None:
        return found
    owner = file.classes.get(function.owner)
    if owner is None:
        return None
    for owner_file, cls in ((file, owner), *project.local_bases(file, owner)):
        for attribute in _config_table()["class_attributes"]:
            found = resolve_class(project, owner_file, cls.fields.get(attribute))
            if found is not None:
                return found
    return None


def is_config_class(cls: ClassDef) -> bool:
    """A class that holds a model's configuration: named so, or deriving from a class named so."""
    suffixes = tuple(table("model_config")["eps_names"]["config_class_suffixes"])
    names = [cls.qualname, *(base.dotted or "" for base in cls.bases)]
    return any(name.rsplit(".", 1)[-1].endswith(suffixes) for name in names)


def config_classes(project, file: FileFacts) -> Iterator[tuple]:
    """(file, ClassDef) of the config classes of `file` and of the local modules it imports at its top level."""
    return ((owner, cls) for owner, cls in _imported_classes(project, file) if is_config_class(cls))


def _imported_classes(project, file: FileFacts) -> Iterator[tuple]:
    yield from ((file, cls) for cls in file.classes.values())
    from acclint.linter.project import import_targets  # the project model owns import resolution

    seen = {file.abspath}
    for imp in file.imports:
        if imp.scope != MODULE_SCOPE:
            continue
        for module in import_targets(imp):
            target = project.module_file(file, module)
            if target is not None and target.abspath not in seen:
                seen.add(target.abspath)
                yield from ((target, cls) for cls in target.classes.values())


def config_attribute(project, file: FileFacts, function: FunctionDef, param: str, attribute: str) -> Optional[Origin]:
    """`param.attribute` inside `function`: the attribute as the declared config class defines it; without a
    declaration, as the one value config classes of this file and its imported modules agree on. A declared
    class outside the project leaves it unknown (another config class of the file is not that one)."""
    declared = declared_config_class(project, file, function, param)
    if declared is not None:
        return class_attribute(project, *declared, attribute)
    if param in function.annotations:
        return None  # declared, but outside the project (an installed package's config): unknown
    found = [origin for owner_file, cls in config_classes(project, file)
             if (origin := class_attribute(project, owner_file, cls, attribute)) is not None]
    values = {repr(origin.value) for origin in found}
    return found[0] if len(values) == 1 else None


def value_origin(project, file: FileFacts, scope: str, order: int, value: Value) -> Optional[Origin]:
    """Where a non-literal argument's value comes from: a bare name (parameter default, constant), or an
    attribute of a config the enclosing function receives (`config.hidden_dropout_prob`,
    `self.config.hidden_dropout_prob`), through the config class."""
    parts = (value.dotted or "").split(".")
    if not parts[0]:
        return None
    if len(parts) == 1:
        return name_origin(file, scope, parts[0], order)
    if parts[0] == "self" and len(parts) == 3:
        parts = parts[1:]  # `self.config.x`: the config __init__ stored, read through its parameter
    function = enclosing_function(file, scope)
    if len(parts) != 2 or not is_config_param(parts[0]) or function is None:
        return None
    init = function if parts[0] in function.params else file.functions.get(f"{function.owner}.__init__")
    if init is None or parts[0] not in init.params:
        return None
    return config_attribute(project, file, init, parts[0], parts[1])


def caller_arguments(project, program, file: FileFacts, function: FunctionDef, param: str) -> Iterator[tuple]:
    """(step, Arg) for each call in `program` to `function` (or to its class, for `__init__`) that passes
    `param` by keyword or by position; Arg is None where it may come through `*args`/`**kwargs`."""
    method = function.owner is not None
    target_name = function.owner if function.qualname.endswith(".__init__") else function.qualname
    last = target_name.rsplit(".", 1)[-1]
    position = function.params.index(param) - (1 if method else 0)
    for step in program.calls():
        call = step.fact
        if call.method != last and call.callee.rsplit(".", 1)[-1] != last:
            continue
        target = project.local_target(step.file, call.callee, call.scope, {})
        if target is None or target[0] is not file or target[1].qualname != target_name:
            continue
        arg = call.arg(param, position)
        if arg is not None or any(a.star for a in call.args):
            yield step, arg


def passed_by_a_caller(project, program, file: FileFacts, function: FunctionDef, param: str) -> bool:
    """Whether a call in `program` to `function` (or to its class, for `__init__`) passes `param`,
    by keyword, by position or through `*args`/`**kwargs`: then its default is not what runs."""
    return next(caller_arguments(project, program, file, function, param), None) is not None
