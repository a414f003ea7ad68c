"""What a program casts its model to, shared by the rules about values that drift with the model's dtype
(rules/dtype_drift.py, rules/master_weights.py, rules/cast_buffers.py): `model.half()`, `.to(torch.bfloat16)`,
`from_pretrained(torch_dtype=...)`, the mantissa width of the dtype it casts to, and the model class a method
belongs to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from acclint.knowledge import table
from acclint.linter.context import ProgramContext
from acclint.linter.facts import Call, FileFacts, Value
from acclint.rules.flow import calls_with_method, receiver
from acclint.rules.mixed_precision import mp_table

_MODEL_HINTS = ("model", "net", "module")
_LOADERS = ("from_pretrained", "from_config")  # class methods that build a model


@dataclass(frozen=True)
class ModelCast:
    """Where a program casts its model to a low dtype."""

    dtype: str  # "bfloat16" | "float16"
    written: str  # `.to(torch.bfloat16)`
    where: str  # path:line
    models: frozenset = frozenset()  # the names the cast model is reached by (`model`, `self.net`)
    method: str = "to"  # "half" | "bfloat16" | "to" | "from_pretrained"
    scope: str = ""  # the function the cast is written in (a local name there is not the same name elsewhere)
    path: str = ""

    @property
    def evidence(self) -> str:
        return f"the program casts its model to {self.dtype} (`{self.written}` at {self.where})"


def mantissa_bits(dtype: str) -> int:
    return mp_table()["mantissa_bits"][dtype]


def where(facts: FileFacts, node: int) -> str:
    return f"{facts.path}:{facts.spans[node].line}"


def _low_dtype(value: Value) -> Optional[str]:
    return next((mp_table()["low_dtypes"][n] for n in sorted(value.names) if n in mp_table()["low_dtypes"]), None)


def _built_module(value: Value) -> bool:
    """`Net(...)`, `nn.Sequential(...)`, `AutoencoderKL.from_pretrained(...)`: a class called or loaded, moved to a
    device or not."""
    if not (value.base_call and value.base):
        return False
    chain = value.chain
    if chain[:1] and chain[0] in _LOADERS:
        chain = chain[1:]
    elif value.base.rsplit(".", 1)[-1] in _LOADERS:
        value = Value(base=value.base.rsplit(".", 1)[0], base_call=True)
    return value.base.rsplit(".", 1)[-1][:1].isupper() and all(m in ("cuda", "npu", "cpu", "to") for m in chain)


def _model_like(facts: FileFacts, call: Call) -> bool:
    """A module, not a tensor: a module built in place, a name the same function assigned one to
    (`vae = AutoencoderKL.from_pretrained(...)`), or a name that says so (`model`, `self.net`, `module`)."""
    target = receiver(call)
    if target is None:
        return False
    if _built_module(target):
        return True
    if target.dotted and "." not in target.dotted and any(
            a.name == target.dotted and a.scope == call.scope and _built_module(a.value)
            for a in facts.name_assignments):
        return True
    names = ((target.dotted or target.base or "") + " " + (call.assigned_to or "")).lower()
    return any(hint in names for hint in _MODEL_HINTS)


def model_casts(facts: FileFacts) -> Iterator[ModelCast]:
    """The file's casts of a model to bfloat16/float16."""
    for call in calls_with_method(facts, ("half", "bfloat16", "to", "from_pretrained")):
        models = _cast_names(call)
        if call.method == "from_pretrained":
            arg = call.arg("torch_dtype") or call.arg("dtype")
            dtype = _low_dtype(arg.value) if arg is not None else None
            if dtype:
                yield ModelCast(dtype, f"from_pretrained(torch_dtype={arg.value.dotted})", where(facts, call.node),
                                models, call.method, call.scope, facts.path)
            continue
        if call.names or not _model_like(facts, call):
            continue
        if call.method in ("half", "bfloat16"):
            yield ModelCast(mp_table()["low_cast_methods"][call.method], f".{call.method}()", where(facts, call.node),
                            models, call.method, call.scope, facts.path)
            continue
        for arg in call.args:
            dtype = _low_dtype(arg.value) if arg.keyword in (None, "dtype") else None
            if dtype:
                yield ModelCast(dtype, f".{call.method}({arg.value.dotted})", where(facts, call.node), models,
                                call.method, call.scope, facts.path)


def casts_name_of(cast: ModelCast, name: str, facts: FileFacts, scope: str) -> bool:
    """Does `cast` cast the model that `name`, read in `scope` of `facts`, holds? An attribute (`self.net`) or a
    parameter may hold a model cast anywhere, but a plain name that `scope` assigns itself is that function's own
    variable: a validation helper's `controlnet = ...from_pretrained(torch_dtype=...)` is not the `controlnet`
    that `main` builds and trains."""
    if name not in cast.models:
        return False
    if "." in name or (cast.scope == scope and cast.path == facts.path):
        return True
    return not any(a.name == name and a.scope == scope for a in facts.name_assignments)


def _cast_names(call: Call) -> frozenset:
    """`model` for `model = Net().half()` and for `model.half()`."""
    target = receiver(call)
    written = target.dotted if target is not None and not target.base_call else None
    return frozenset(name for name in (call.assigned_to, written) if name)


def program_cast(files) -> Optional[ModelCast]:
    """The program's cast of its model to the lowest-precision dtype it uses (bfloat16 before float16, as
    `if fp16: model.half() elif bf16: model.bfloat16()` may run either), else None."""
    casts = [cast for facts in files for cast in model_casts(facts)]
    return min(casts, key=lambda cast: mantissa_bits(cast.dtype)) if casts else None


def module_class_of(ctx: ProgramContext, file: FileFacts, scope: str) -> Optional[str]:
    """The class of `scope` when it is a method of a model class (an nn.Module / Cell, through local bases)."""
    function = file.functions.get(scope)
    cls = file.classes.get(function.owner) if function is not None and function.owner else None
    if cls is None:
        return None
    bases = frozenset(table("training")["models"]["bases"])
    return cls.qualname if ctx.project.class_names(file, cls) & bases else None



def is_fp32_cast(call: Call) -> bool:
    return call.method in mp_table()["fp32_cast_methods"] or any(
        a.value.names & frozenset(mp_table()["fp32_dtypes"]) for a in call.args)


def cast_to_fp32_later(files, target: str) -> bool:
    """A float32 cast of `target` (or of a view of it: `self.shadow[0].float()`) somewhere in the
    program, also of the same attribute reached through another name (`self.shadow` is `ema.shadow` outside its
    class)."""
    attribute = "." + target.rsplit(".", 1)[-1] if target.startswith("self.") else None
    keeping = frozenset(mp_table()["dtype_keeping"])
    for facts in files:
        for call in calls_with_method(facts, ("float", "double", "to")):
            value = receiver(call)
            if value is None or not is_fp32_cast(call):
                continue
            name = value.dotted or (value.base if all(m in keeping for m in value.chain) else None) or ""
            if name == target or (attribute and name.endswith(attribute)):
                return True
    return False
