"""Category `model-config`: values a model's config defines that a layer built from it does not take.

ACL301: a norm layer built with its framework's default epsilon inside a module whose config (or the
module itself) carries the model's norm epsilon. The norms and their defaults are data
(knowledge/model_config.toml; MindSpore's LayerNorm default is read from framework_defaults.toml).
Evidence is required, never assumed: the config class the module declares defines an epsilon, or the
same file reads one from a config, or a config class of the file or its imported modules defines it,
or the module takes an epsilon of its own. Modules are judged one by one with the project at hand
(the config class may live in another module), so a model file scanned alone is judged the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

from acclint.knowledge import table
from acclint.linter.context import ProgramContext
from acclint.linter.edits import SetArgument, unsafe_fix
from acclint.linter.facts import NOT_LITERAL, Call, ClassDef, FileFacts, FunctionDef
from acclint.linter.rulebase import Example, Rule, RuleDoc
from acclint.rules.flow import cached
from acclint.rules.values import (class_attribute, config_attribute, config_params, declared_config_class,
                                  is_config_param, number)


@dataclass(frozen=True)
class Norm:
    """A norm layer or function and the argument that sets its epsilon."""

    label: str
    kind: str  # "layer" (LayerNorm, RMSNorm) or "batch"
    keyword: str
    position: Optional[int]
    default: Any  # a number, or text when the default depends on the input
    functional: bool = False  # a function: judged only in a norm class's own code

    def given(self, call: Call) -> bool:
        return call.arg(self.keyword, self.position) is not None or any(a.star for a in call.args)


@dataclass(frozen=True)
class Evidence:
    """Where the model's epsilon is: what to say, its value when known, and the expression to pass."""

    what: str
    value: Any
    where: Optional[str]
    expression: str
    own: bool = False  # the module's own parameter: its value is whatever a caller passes


def _eps_names() -> dict:
    return table("model_config")["eps_names"]


def _shown(value: Any) -> str:
    return f"{value:g}" if number(value) else str(value)


@lru_cache(maxsize=1)
def library_norms() -> dict:
    """Qualified name -> Norm, for the norms of the frameworks."""
    out = {}
    for entry in table("model_config")["norms"]:
        if "framework_default" in entry:  # the MindSpore table already states this API's default
            shared = table("framework_defaults")[entry["framework_default"]]
            entry = {**shared, **entry, "default": stated_default(shared)}
        for api in entry["apis"]:
            out[api] = Norm(api, entry["kind"], entry["keyword"], entry.get("position"), entry["default"],
                            entry.get("functional", False))
    return out


def stated_default(entry: dict) -> Any:
    """The default framework_defaults.toml states for an entry's keyword (`mindspore = "epsilon=1e-7"`)."""
    found = re.match(rf"\s*{re.escape(entry['keyword'])}\s*=\s*([-+0-9.eE]+)", entry["mindspore"])
    return float(found.group(1)) if found else entry["mindspore"]


def _init(project, file: FileFacts, cls: ClassDef) -> Optional[tuple]:
    """(file, FunctionDef) of the `__init__` a class runs: its own, else a local base's."""
    for owner_file, owner in ((file, cls), *project.local_bases(file, cls)):
        found = owner_file.functions.get(f"{owner.qualname}.__init__")
        if found is not None:
            return owner_file, found
    return None


def _epsilon_param(function: FunctionDef, kind: str) -> Optional[str]:
    names = _eps_names()
    return next((p for p in function.params if p in names[kind] or p in names["plain"]), None)


def local_norm(project, file: FileFacts, call: Call) -> Optional[Norm]:
    """A norm class of the project (`LlamaRMSNorm(hidden, eps=...)`): named as norms are, taking an epsilon."""
    if not call.callee.rsplit(".", 1)[-1].endswith(tuple(_eps_names()["class_suffixes"])):
        return None
    target = project.local_target(file, call.callee, call.scope, {})
    if target is None or not isinstance(target[1], ClassDef):
        return None
    init = _init(project, *target)
    if init is None:
        return None
    function = init[1]
    param = _epsilon_param(function, "layer")
    default = function.defaults.get(param) if param else None
    if default is None:  # no epsilon, or a required one: nothing is left to a default
        return None
    shown = default.literal if default.is_literal else (default.dotted or "an expression")
    return Norm(target[1].qualname, "layer", param, function.params.index(param) - 1, shown)


def norm_of(project, file: FileFacts, call: Call) -> Optional[Norm]:
    norms = library_norms()
    for name in call.names:
        if name in norms:
            return norms[name]
    return local_norm(project, file, call)


def _is_norm_class(qualname: str) -> bool:
    return qualname.endswith(tuple(_eps_names()["class_suffixes"]))


def _owner(scope: str) -> str:
    """The class whose method a scope is (`Block.__init__` -> `Block`), else ""."""
    return scope.rpartition(".")[0]


def _calls_by_class(file: FileFacts) -> dict:
    out: dict = {}
    for call in file.calls:
        owner = _owner(call.scope)
        if owner in file.classes:
            out.setdefault(owner, []).append(call)
    return out


def _config_reads(file: FileFacts) -> list:
    """(owner class, config name, path below the config, attribute, node) for each read of a norm epsilon from a
    config in this file (`config.rms_norm_eps`, `self.config.text_config.layer_norm_eps`)."""
    names = set(_eps_names()["layer"]) | set(_eps_names()["batch"])
    values = [(call.scope, arg.value, call.node) for call in file.calls for arg in call.args]
    values += [(a.scope, a.value, a.node) for a in file.assignments]
    out = []
    for scope, value, node in values:
        parts = (value.dotted or "").split(".")
        if parts[0] == "self":
            parts = parts[1:]
        if len(parts) >= 2 and parts[-1] in names and is_config_param(parts[0]):
            out.append((_owner(scope), parts[0], ".".join(parts[1:]), parts[-1], node))
    return out


def _declared_config(file: FileFacts, owner: str) -> Optional[str]:
    """The annotation of the config parameter of `owner.__init__`, as written (None: none declared)."""
    init = file.functions.get(f"{owner}.__init__")
    params = config_params(init) if init is not None else ()
    annotation = init.annotations.get(params[0]) if params else None
    return (annotation.dotted or repr(annotation.literal)) if annotation is not None else None


def _where(file: FileFacts, node: int) -> str:
    return f"{file.path}:{file.spans[node].line}" if 0 <= node < len(file.spans) else file.path


class _Module:
    """What one module class (a `torch.nn.Module`, a MindSpore `Cell`) shows of its model's epsilon."""

    def __init__(self, project, file: FileFacts, cls: ClassDef, init: FunctionDef, calls: list):
        self.project, self.file, self.cls, self.init, self.calls = project, file, cls, init, calls
        self.stored = {a.value.dotted: a.target for a in file.assignments
                       if a.scope == init.qualname and a.target.startswith("self.") and a.value.dotted}

    def evidence(self, norm: Norm, call: Call) -> Optional[Evidence]:
        return self._own(norm, call) or self._config(norm, call)

    def _expression(self, name: str, call: Call) -> str:
        """How code at `call` reaches the __init__ parameter `name`: itself in __init__, else what stores it."""
        return name if call.scope == self.init.qualname else self.stored.get(name, name)

    def _own(self, norm: Norm, call: Call) -> Optional[Evidence]:
        """An epsilon the module takes itself (`def __init__(self, dim, norm_eps=1e-6)`)."""
        names = _eps_names()
        for param in self.init.params:
            named = param in names[norm.kind]
            if not named and not (param in names["plain"] and self._plain_counts(param)):
                continue
            default = self.init.defaults.get(param)
            return Evidence(f"`{param}` of {self.init.qualname}", default.literal if default else NOT_LITERAL,
                            _where(self.file, self.init.node), self._expression(param, call), own=True)
        return None

    def _plain_counts(self, param: str) -> bool:
        """A plain `eps` is the model's norm epsilon in a norm class itself, or when another norm of the
        class is given it."""
        if _is_norm_class(self.cls.qualname):
            return True
        carriers = {param, self.stored.get(param)}
        for other in self.calls:
            norm = norm_of(self.project, self.file, other)
            arg = other.arg(norm.keyword, norm.position) if norm is not None else None
            if arg is not None and arg.value.dotted in carriers:
                return True
        return False

    def _config(self, norm: Norm, call: Call) -> Optional[Evidence]:
        names = _eps_names()[norm.kind]
        for param in config_params(self.init):
            declared = declared_config_class(self.project, self.file, self.init, param)
            if declared is not None:  # the declared class decides: an epsilon there, or none at all
                origin = next((o for name in names if (o := class_attribute(self.project, *declared, name))), None)
                if origin is not None:
                    attribute = origin.what.rsplit(".", 1)[-1]
                    return Evidence(f"`{param}.{attribute}` ({origin.what})", origin.value, origin.where,
                                    f"{param}.{attribute}")
                continue
            found = self._read(param, names) or self._defined(param, names)
            if found is not None:
                return found
        return None

    def _read(self, param: str, names) -> Optional[Evidence]:
        """An epsilon this file reads from a config, in this class first; its value from the config class."""
        # A class that declares another config class, or names its config otherwise (`quantizer_config`),
        # reads another config (an audio encoder's beside a text model's): only reads through the same name
        # in classes declaring the same class, or none alike, speak for this one's config.
        declared = _declared_config(self.file, self.cls.qualname)
        reads = [r for r in cached(self.file, "config-eps-reads", _config_reads)
                 if r[3] in names and r[1] == param and _declared_config(self.file, r[0]) == declared]
        reads.sort(key=lambda r: r[0] != self.cls.qualname)
        if not reads:
            return None
        _, _, path, attribute, node = reads[0]
        # A sub-config's attribute (`config.text_config.rms_norm_eps`) is not the top config class's.
        origin = config_attribute(self.project, self.file, self.init, param, attribute) if path == attribute else None
        value = origin.value if origin is not None else NOT_LITERAL
        defined = f"; {origin.what} = {_shown(value)} at {origin.where}" if origin is not None and number(value) else ""
        return Evidence(f"`{param}.{path}` (read at {_where(self.file, node)}{defined})", value, None,
                        f"{param}.{path}")

    def _defined(self, param: str, names) -> Optional[Evidence]:
        """An epsilon a config class of this file or of its imported modules defines."""
        for name in names:
            origin = config_attribute(self.project, self.file, self.init, param, name)
            if origin is not None:
                return Evidence(f"`{param}.{name}` ({origin.what})", origin.value, origin.where, f"{param}.{name}")
        return None


def _set_later(file: FileFacts, call: Call, keyword: str) -> bool:
    """`self.norm = LayerNorm(d)` followed by `self.norm.eps = ...`: the epsilon is set after all."""
    targets = {sink.split(":", 1)[1] for sink in call.sinks if sink.startswith(("attr:", "name:"))}
    return any(a.target.rsplit(".", 1)[0] in targets and a.target.rsplit(".", 1)[-1] in (keyword, "eps", "epsilon")
               for a in file.assignments if a.scope.rpartition(".")[0] == _owner(call.scope))


class NormEpsilonNotFromConfig(Rule):
    code = "ACL301"
    name = "norm-epsilon-not-from-config"
    category = "model-config"
    severity = "warning"
    maturity = "preview"
    summary = "A norm layer takes its default epsilon although the model's config (or module) defines one"
    doc = RuleDoc(
        what="Reports a norm (`nn.LayerNorm`, `nn.RMSNorm`, `nn.BatchNorm*`, a local `...RMSNorm`/`...LayerNorm` "
        "class, `torch_npu.npu_rms_norm`, MindSpore's `nn.LayerNorm`, `mint.nn.LayerNorm`, `nn.BatchNorm*`, "
        "`ops.rms_norm`) built without an epsilon inside a module whose config carries the model's norm epsilon "
        "(the config class it declares defines `layer_norm_eps`/`rms_norm_eps`/`norm_eps`/..., the same file "
        "reads one from a config, or a config class of the file or of its imported modules defines one), or "
        "whose `__init__` takes such an epsilon itself. The message gives both values: the config's and the "
        "layer's default (framework-specific: MindSpore's `nn.LayerNorm` defaults to 1e-7, PyTorch's to 1e-5, "
        "`npu_rms_norm` to 1e-6, `nn.RMSNorm` to float32's machine epsilon, 1.2e-7).",
        why="One norm of the model then normalises with another epsilon than the rest, and than the "
        "checkpoint's config says (BERT's 1e-12 against LayerNorm's 1e-5, Llama's 1e-6 or 1e-5 against "
        "`npu_rms_norm`'s 1e-6 or MindSpore's 1e-7). Rows with a small variance come out different, and so "
        "does every layer after; a port that matches the reference everywhere else still drifts. "
        "transformers fixed such layers model by model once the difference was found (a vision projector's "
        "RMSNorm that dropped `eps`, patch-embedding LayerNorms that never read `config.layer_norm_eps`).",
        fix="Pass the config's value where the layer is built (`nn.LayerNorm(d, eps=config.layer_norm_eps)`, "
        "`epsilon=self.variance_epsilon` for `npu_rms_norm`). When the default is meant, pass it explicitly so "
        "a reader (and acclint) sees the choice.",
        references=(
            "https://github.com/huggingface/transformers/issues/38025",
            "https://github.com/huggingface/transformers/pull/20699",
            "https://github.com/keras-team/keras-hub/issues/642",
            "https://github.com/mindspore-lab/mindone/pull/219",
        ),
    )
    invalid = (
        Example.script("""
            from torch import nn


            class TextConfig:
                def __init__(self, hidden_size=768, layer_norm_eps=1e-12):
                    self.hidden_size = hidden_size
                    self.layer_norm_eps = layer_norm_eps


            class Embeddings(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)


            class Projector(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.norm = nn.LayerNorm(config.hidden_size)  # expect: ACL301
        """, title="a config epsilon the model reads elsewhere", path="modeling.py"),
        Example({
            "model/modeling.py": """
                import torch
                import torch_npu
                from torch import nn

                from .configuration import TinyConfig


                class TinyRMSNorm(nn.Module):
                    def __init__(self, hidden, eps=1e-6):
                        super().__init__()
                        self.weight = nn.Parameter(torch.ones(hidden))
                        self.variance_epsilon = eps

                    def forward(self, x):
                        return torch_npu.npu_rms_norm(x, self.weight)[0]  # expect: ACL301


                class TinyModel(nn.Module):
                    def __init__(self, config: TinyConfig):
                        super().__init__()
                        self.norm = TinyRMSNorm(config.hidden_size)  # expect: ACL301
            """,
            "model/configuration.py": """
                class TinyConfig:
                    def __init__(self, hidden_size=64, rms_norm_eps=1e-5):
                        self.hidden_size = hidden_size
                        self.rms_norm_eps = rms_norm_eps
            """,
            "model/__init__.py": "",
        }, title="the config class in another module; a norm class that drops its own epsilon on NPU"),
        Example.script("""
            from mindspore import nn


            class Block(nn.Cell):
                def __init__(self, hidden, layer_norm_eps=1e-5):
                    super().__init__()
                    self.attention_norm = nn.LayerNorm((hidden,), epsilon=layer_norm_eps)
                    self.ffn_norm = nn.LayerNorm((hidden,))  # expect: ACL301
        """, title="MindSpore: the module's own epsilon, and LayerNorm's default of 1e-7", path="block.py"),
    )
    valid = (
        Example.script("""
            from torch import nn


            class Embeddings(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)


            class Projector(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        """, path="modeling.py"),
        Example({
            "vision.py": """
                from dataclasses import dataclass

                from torch import nn


                @dataclass
                class PatchConfig:
                    hidden_size: int = 64
                    patch_size: int = 16


                class PatchEmbed(nn.Module):
                    def __init__(self, config: PatchConfig):
                        super().__init__()
                        self.norm = nn.LayerNorm(config.hidden_size)
                        self.bn = nn.BatchNorm2d(3)
            """,
        }, title="the declared config defines no epsilon: the default is the model's"),
    )

    def check_module(self, ctx: ProgramContext, file: FileFacts) -> None:
        if file.role is not None:
            return
        project = ctx.project
        for owner, calls in cached(file, "calls-by-class", _calls_by_class).items():
            norm_class = _is_norm_class(owner)
            candidates = [(c, n) for c in calls if (n := norm_of(project, file, c)) is not None
                          and not n.given(c) and (norm_class or not n.functional)]
            init = file.functions.get(f"{owner}.__init__")
            if not candidates or init is None:
                continue
            module = _Module(project, file, file.classes[owner], init, calls)
            for call, norm in candidates:
                evidence = module.evidence(norm, call)
                if evidence is None or _set_later(file, call, norm.keyword):
                    continue
                self._report(ctx, file, call, norm, evidence)

    def _report(self, ctx: ProgramContext, file: FileFacts, call: Call, norm: Norm, evidence: Evidence) -> None:
        default = f"{norm.keyword}={_shown(norm.default)}"
        value = evidence.value
        known = number(value)
        equal = known and number(norm.default) and abs(value - norm.default) <= 1e-9 * abs(value)
        at = f" at {evidence.where}" if evidence.where else ""
        if evidence.own:  # a parameter: what matters is that no value passed for it reaches the layer
            stated = f" (default {_shown(value)})" if known else ""
            # Equal defaults: the model as built normalises alike; only a caller passing another value
            # would see the layer ignore it, so that is a hint.
            hint, consequence = equal, "a value passed for it never reaches this layer"
        elif not known:  # a config class outside the project (transformers'), or a value computed
            stated = ""
            hint, consequence = True, (f"wherever the config's value is not {_shown(norm.default)}, this layer "
                                       "normalises with another epsilon than the rest of the model")
        else:
            stated = f" = {_shown(value)}"
            hint = equal
            consequence = ("equal today, but a config that sets another value (a checkpoint's config.json) is "
                           "ignored by this layer" if hint else "this layer normalises with another epsilon than "
                           "the model's")
        ctx.report(self, file, call.node,
                   f"`{call.callee}(...)` takes its default {default}, while the model's epsilon is "
                   f"{evidence.what}{stated}{at}: {consequence}.",
                   fix=f"pass {norm.keyword}={evidence.expression}", severity="info" if hint else None,
                   autofix=unsafe_fix(f"pass {norm.keyword}={evidence.expression}",
                                      SetArgument(keyword=norm.keyword, code=evidence.expression)))


RULES = [NormEpsilonNotFromConfig()]
