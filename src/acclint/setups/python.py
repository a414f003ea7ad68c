"""Settings a Python training script writes, read from the engine's one-pass facts.

argparse `add_argument` defaults, optimizer / scheduler / dropout / loss / data-loader
constructors of PyTorch and MindSpore (knowledge/setups.toml says which argument is which key),
seeds, determinism and precision switches, environment writes, and fused NPU calls. Arguments
written as `args.lr` take the argparse default, or the launch script's value when a launch
script runs this file (`overrides`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

from acclint.knowledge import table
from acclint.linter.facts import MODULE_SCOPE, NOT_LITERAL, Call, FileFacts, ParamGroups, Value
from acclint.linter.options import option_dicts
from acclint.setups import keys
from acclint.setups.record import Setting, Setup, Where
from acclint.setups.values import parse_text, show

# Calls whose keyword arguments are settings by name (HF TrainingArguments and friends).
KEYWORD_SETTINGS = frozenset(
    {"transformers.TrainingArguments", "transformers.Seq2SeqTrainingArguments", "trl.SFTConfig"}
)
# `mindspore.set_context(deterministic="ON")` and `torch_npu.npu.set_option({...})` under its aliases.
SET_CONTEXT = frozenset(table("npu_modes")["precision"]["set_context"])
SET_OPTION = frozenset(table("npu_modes")["precision"]["set_option"])
FRAMEWORKS = (("mindspore", "mindspore"), ("torch", "pytorch"))
_UNSET = object()


def extract_python(facts: FileFacts, overrides: Optional[dict] = None) -> Setup:
    """The setup of one parsed file. `overrides`: key -> Setting from a launch script."""
    reader = _Reader(facts, dict(overrides or {}))
    return reader.read()


class _Reader:
    def __init__(self, facts: FileFacts, overrides: dict):
        self.facts = facts
        self.overrides = overrides
        self.setup = Setup(path=facts.path, kind="python", files=[facts.path])
        self.options: dict[str, str] = {}  # argparse dest -> key
        self.dropouts: list[Setting] = []

    def where(self, node: int) -> Where:
        spans = self.facts.spans
        line = spans[node].line if 0 <= node < len(spans) else 1
        return Where(self.facts.path, line)

    def read(self) -> Setup:
        self.setup.imports = frozenset(i.module.split(".", 1)[0] for i in self.facts.imports)
        self.setup.framework = _framework(self.setup.imports)
        calls = self.facts.calls
        for call in calls:  # argparse first: later calls refer to `args.x`
            if call.method == "add_argument":
                self._argument(call)
        constructors = keys.constructors()
        fused = keys.fused_calls()
        composed = keys.composed_calls()
        for call in calls:
            names = call.names
            for name in names:
                if name in constructors:
                    self._constructor(call, name, constructors[name])
                    break
                if name in fused:
                    self.setup.put(Setting(fused[name], True, self.where(call.node), written=call.callee))
                    break
                if name in composed:
                    for op in composed[name]:
                        self.setup.composed.setdefault(op, self.where(call.node))
            if names & KEYWORD_SETTINGS:
                self._keywords(call)
            elif names & SET_CONTEXT:
                self._set_context(call)
            elif names & SET_OPTION:
                self._set_option(call)
            elif not names and call.method == "batch" and self.setup.framework == "mindspore":
                self._constructor(call, "mindspore.dataset.GeneratorDataset.batch",
                                  constructors["mindspore.dataset.GeneratorDataset.batch"])
        self._dropout()
        self._assignments()
        self._environment()
        return self.setup

    # -- argparse ---------------------------------------------------------------------------
    def _argument(self, call: Call) -> None:
        options = [a.value.literal for a in call.args if a.keyword is None and isinstance(a.value.literal, str)]
        long_options = [o for o in options if o.startswith("--")] or [o for o in options if o.startswith("-")]
        if not long_options:
            return
        key = keys.normalise(long_options[0])
        for other in options:
            alias = keys.normalise(other)
            if alias != key:
                self.setup.aliases[alias] = key
                if alias in self.overrides and key not in self.overrides:
                    self.overrides[key] = replace(self.overrides[alias], key=key)
        dest_arg = call.arg("dest")
        dest = dest_arg.value.literal if dest_arg is not None else long_options[0].lstrip("-").replace("-", "_")
        if isinstance(dest, str):
            self.options[dest] = key
        action = call.arg("action")
        default = call.arg("default")
        if default is not None:
            if not default.value.is_literal or default.value.literal in (None, ""):
                return  # None, "" or an expression: the script decides later; nothing to compare
            value, known = default.value.literal, True
        elif action is not None and action.value.literal in ("store_true", "store_false"):
            value, known = action.value.literal == "store_false", True
        else:
            return  # no default: the script needs the value from its command line
        written = f"{long_options[0]} default"
        self.setup.put(Setting(key, _plain(value), self.where(call.node), written=written, known=known))

    # -- constructors -----------------------------------------------------------------------
    def _constructor(self, call: Call, name: str, spec: dict) -> None:
        where = self.where(call.node)
        label = spec.get("label", name)
        role = spec.get("role")
        params = spec.get("params", [])
        defaults = spec.get("defaults", {})
        complement = set(spec.get("complement", []))
        found: dict[str, Any] = {}
        for param, target in spec.get("keys", {}).items():
            arg = call.arg(param, params.index(param) if param in params else None)
            if arg is not None and not arg.star:
                setting = self._argument_value(arg.value, target, where, f"{param}=", call)
            elif param in defaults and not (role == "dropout" and found):
                setting = Setting(target if isinstance(target, str) else "", _plain(defaults[param]), where,
                                  origin="default", written=f"{label} default {param}")
            else:
                continue
            if param in complement and setting.known and isinstance(setting.value, (int, float)):
                setting = replace(setting, value=round(1 - setting.value, 12),
                                  written=f"{param}={setting.value}", note=f"{param} is the keep probability")
            found[param] = setting.value
            if role == "lr-scheduler":
                setting = replace(setting, group=role)
            self._put_target(target, setting, role)
        if role == "optimizer":
            self._param_groups(call, spec, found)
        value = spec.get("value")
        for param, alternative in spec.get("value_if", {}).items():
            if found.get(param) not in (None, 0, 0.0, False) and not isinstance(found.get(param), str):
                value = alternative
        if value is not None and role in ("optimizer", "lr-scheduler", "loss"):
            arguments = ", ".join(f"{param}={show(v)}" for param, v in found.items())
            self.setup.put(Setting(role, value, where, written=f"{label}({arguments})",
                                   semantics=spec.get("semantics", "")))

    def _param_groups(self, call: Call, spec: dict, found: dict) -> None:
        """Per-group values (`[{"params": decay}, {"params": no_decay, "weight_decay": 0.0}]`): a
        key a group overrides becomes the tuple of every group's value, in group order."""
        groups = self.facts.param_groups.get(call.node)
        first = call.arg(spec.get("params", ["params"])[0], 0)
        if groups is None and first is not None and first.value.dotted:
            constant = self.facts.constants.get((call.scope, first.value.dotted)) or self.facts.constants.get(
                (MODULE_SCOPE, first.value.dotted))
            groups = constant[0] if constant is not None and isinstance(constant[0], ParamGroups) else None
        if not groups:
            return
        for param, target in spec.get("keys", {}).items():
            if not isinstance(target, str) or not any(param in group for group in groups):
                continue
            values = tuple(_plain(group.get(param, found.get(param))) for group in groups)
            value = values[0] if len(set(map(repr, values))) == 1 else values
            written = f"param groups: {param}=" + ", ".join(show(v) for v in values)
            self.setup.put(Setting(target, value, self.where(call.node), written=written))

    def _put_target(self, target, setting: Setting, role: Optional[str]) -> None:
        if isinstance(target, list):  # betas=(b1, b2) -> adam-beta1, adam-beta2
            values = setting.value if isinstance(setting.value, (list, tuple)) else ()
            for index, key in enumerate(target):
                item = values[index] if index < len(values) else None
                self.setup.put(replace(setting, key=key, value=item, known=setting.known and item is not None))
        elif role == "dropout":
            self.dropouts.append(replace(setting, key=target))
        else:
            self.setup.put(replace(setting, key=target))

    def _argument_value(self, value: Value, key, where: Where, written: str, call: Call) -> Setting:
        key_name = key if isinstance(key, str) else key[0]
        if value.is_literal:
            return Setting(key_name, _plain(value.literal), where, written=f"{written}{value.literal!r}")
        dotted = value.dotted or ""
        resolved = self._local(dotted, call) or self._resolve_name(dotted)
        if resolved is not None:
            return replace(resolved, key=key_name, note=f"through {dotted}")
        dtype = _dtype(value)
        if dtype is not None:
            return Setting(key_name, dtype, where, written=f"{written}{dotted}")
        return Setting(key_name, dotted or "<expression>", where, known=False, written=f"{written}{dotted or '...'}")

    def _local(self, name: str, call: Call) -> Optional[Setting]:
        """`batch_size = 64` ... `DataLoader(ds, batch_size=batch_size)` in one function: the value
        the name holds when the call runs, if every assignment before it writes that literal (a
        non-literal one, `batch_size = args.bs`, or another literal makes it unknown) and the name
        is no parameter of the function."""
        if call.scope == MODULE_SCOPE or not name or "." in name:
            return None
        function = self.facts.functions.get(call.scope)
        if function is not None and name in function.params:
            return None  # `if x is None: x = 0`: the caller's value, unless it passed none
        before = [a for a in self.facts.name_assignments
                  if a.name == name and a.scope == call.scope and a.order < call.order]
        if not before or not before[-1].value.is_literal:
            return None
        last = before[-1]
        value = _plain(last.value.literal)
        if any(not a.value.is_literal or _plain(a.value.literal) != value for a in before[:-1]):
            return None  # `if big: bs = 64` / `else: bs = 32`: which one runs is not known here
        constant = self.facts.constants.get((call.scope, name))
        # The constant table keeps the last literal of the function: its line, when it is this value.
        where = self.where(constant[1]) if constant is not None and _plain(constant[0]) == value else self.where(call.node)
        return Setting("", value, where, written=f"{name} = {last.value.literal!r}")

    def _resolve_name(self, dotted: str) -> Optional[Setting]:
        """`args.lr` -> the argparse option (or the launch script's value); `LR` -> its constant."""
        head, _, attribute = dotted.rpartition(".")
        if head and attribute in self.options:
            key = self.options[attribute]
            return self.overrides.get(key) or self.setup.settings.get(key)
        for scope in (MODULE_SCOPE,):
            constant = self.facts.constants.get((scope, dotted))
            if constant is not None:
                return Setting("", _plain(constant[0]), self.where(constant[1]), written=f"{dotted} = {constant[0]!r}")
        return None

    def _dropout(self) -> None:
        """Every dropout module of the model: one value when they agree, else the set of values."""
        if not self.dropouts:
            return
        explicit = [s for s in self.dropouts if not s.is_default] or self.dropouts
        values = sorted({s.value for s in explicit if s.known}, key=str)
        first = explicit[0]
        if len(values) == 1:
            self.setup.put(replace(first, value=values[0]))
        else:
            self.setup.put(replace(first, value=tuple(values), written=f"{len(explicit)} dropout layers"))

    # -- other settings ---------------------------------------------------------------------
    def _keywords(self, call: Call) -> None:
        where = self.where(call.node)
        for arg in call.args:
            if arg.keyword:
                self._put_target(keys.normalise(arg.keyword),
                                 self._argument_value(arg.value, keys.normalise(arg.keyword), where, f"{arg.keyword}=",
                                                     call),
                                 None)

    def _set_context(self, call: Call) -> None:
        ascend = call.arg("ascend_config")
        if ascend is not None and not ascend.star:
            for node, options in option_dicts(self.facts, call, ascend.value):
                self._options(node, options, "ascend_config")
        deterministic = call.arg("deterministic")
        if deterministic is not None and isinstance(deterministic.value.literal, str):
            value = deterministic.value.literal.upper() == "ON"
            self.setup.put(Setting("deterministic", value, self.where(call.node),
                                   written=f"set_context(deterministic={deterministic.value.literal!r})"))

    def _set_option(self, call: Call) -> None:
        options = call.arg("option", 0)
        if options is not None and not options.star:
            for node, found in option_dicts(self.facts, call, options.value):
                self._options(node, found, "set_option")

    def _options(self, node: int, options: dict, written: str) -> None:
        """`{"ACL_PRECISION_MODE": ...}` (torch_npu) or `{"precision_mode": ...}` (MindSpore), at `node`."""
        environment = keys.knowledge()["environment"]
        for name, value in options.items():
            key = environment.get(str(name)) or environment.get(f"ACL_{str(name).upper()}")
            if key is not None and value is not NOT_LITERAL:
                self.setup.put(Setting(key, _plain(value), self.where(node), written=f"{written}({name}={value!r})"))

    def _assignments(self) -> None:
        table = keys.knowledge()["assignments"]
        for assignment in self.facts.assignments:
            for name in assignment.names:
                if name in table and assignment.value.is_literal:
                    self.setup.put(Setting(table[name], _plain(assignment.value.literal), self.where(assignment.node),
                                           written=f"{assignment.target} = {assignment.value.literal!r}"))

    def _environment(self) -> None:
        environment = keys.knowledge()["environment"]
        for write in self.facts.env_writes:
            if write.name in environment:
                self.setup.put(Setting(environment[write.name], parse_text(write.value or ""), self.where(write.node),
                                       written=f"{write.name}={write.value}", known=write.value is not None))


DTYPE_MODULES = ("torch.", "mindspore.", "mindspore.common.dtype.", "numpy.")
DTYPE_NAMES = {"half": "float16", "float": "float32", "bfloat16": "bfloat16", "float16": "float16",
               "float32": "float32", "float64": "float64", "double": "float64"}


def _dtype(value: Value) -> Optional[str]:
    """`torch.bfloat16`, `mstype.float16`, `ms.float32` -> the dtype's name, else None."""
    for name in value.names:
        module, _, last = name.rpartition(".")
        if last in DTYPE_NAMES and (module + ".").startswith(DTYPE_MODULES):
            return DTYPE_NAMES[last]
    return None


def _plain(value: Any) -> Any:
    """Lists as tuples (hashable, comparable); NOT_LITERAL as None."""
    if value is NOT_LITERAL:
        return None
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    return value


def _framework(modules: frozenset) -> Optional[str]:
    for module, name in FRAMEWORKS:
        if module in modules:
            return name
    return None
