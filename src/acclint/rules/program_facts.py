"""What a program seeds, switches on and uses, computed once per program and shared by the rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from acclint.knowledge import table
from acclint.linter.context import ProgramContext
from acclint.linter.facts import Assignment, Call, ClassDef, EnvWrite
from acclint.linter.project import Program, Step


@dataclass(frozen=True)
class Source:
    """Where a seed or a setting comes from: a step in the flow, or a launch script."""

    step: Optional[Step] = None
    shell_span: object = None  # linter.shell.Span
    what: str = ""  # e.g. "torch.manual_seed", "export HCCL_DETERMINISTIC=true", "--npu-deterministic"

    def describe(self) -> str:
        if self.step is not None:
            location = self.step.file.spans[self.step.fact.node]
            return f"{self.what} at {self.step.file.path}:{location.line}"
        if self.shell_span is not None:
            return f"{self.what} at {self.shell_span.path}:{self.shell_span.line}"
        return self.what


@dataclass
class ProgramFacts:
    seeded: dict = field(default_factory=dict)  # generator -> Source (first seeding)
    effects: dict = field(default_factory=dict)  # effect -> Source
    effects_off: dict = field(default_factory=dict)  # effect -> Source that switches it off
    uses: dict = field(default_factory=dict)  # usage -> Step showing it
    imports: set = field(default_factory=set)  # top-level packages imported by reached files
    first_model: Optional[Step] = None


def program_facts(ctx: ProgramContext) -> ProgramFacts:
    cached = ctx.cache.get("program_facts")
    if cached is None:
        cached = ctx.cache["program_facts"] = _compute(ctx)
    return cached


def _compute(ctx: ProgramContext) -> ProgramFacts:
    program = ctx.program
    out = ProgramFacts()
    seeding = table("seeding")
    for file in program.files:
        for targets in file.bindings.values():
            out.imports.update(t.split(".", 1)[0] for t in targets)
    for step in program.flow:
        fact = step.fact
        if isinstance(fact, Call):
            _seeding_call(step, fact, seeding["seeders"], out)
            _determinism_call(step, fact, out)
            _usage(step, fact, ctx, out)
        elif isinstance(fact, Assignment):
            _determinism_assignment(step, fact, out)
        elif isinstance(fact, EnvWrite):
            _env(fact.name, fact.value, Source(step=step, what=f"os.environ[{fact.name!r}]"), seeding["env"], out)
    for shell, launch in program.launches:
        for name, assignment in launch.effective_env().items():  # exports in force when it launches
            _env(name, assignment.value, Source(shell_span=assignment.span, what=f"export {name}={assignment.raw}"),
                 seeding["env"], out)
        for flag, value in launch.flags().items():
            known = seeding["launcher_flags"].get(flag)
            if known:
                for effect in known["effects"]:
                    out.effects.setdefault(effect, Source(shell_span=value.span, what=f"--{flag}"))
    return out


def _seeding_call(step: Step, call: Call, seeders: dict, out: ProgramFacts) -> None:
    for name in call.names:
        entry = seeders.get(name)
        if entry is None:
            continue
        source = Source(step=step, what=name)
        for generator in entry.get("covers", []):
            out.seeded.setdefault(generator, source)
        for effect in entry.get("effects", []):
            out.effects.setdefault(effect, source)
        conditional = entry.get("when_true")
        if conditional:
            arg = call.arg(conditional["keyword"], conditional["position"])
            if arg is not None and arg.value.literal is not False and arg.value.literal is not None:
                for effect in conditional["effects"]:
                    out.effects.setdefault(effect, source)


_TRUTHY_STRINGS = {"on", "true", "1"}


def _switch(arg) -> Optional[bool]:
    """True/False for a literal switch; True when not a literal (assume the user meant it)."""
    if arg is None:
        return None
    value = arg.value.literal
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in _TRUTHY_STRINGS
    if isinstance(value, int):
        return bool(value)
    return True


def determinism_setting(fact) -> Optional[tuple]:
    """(effect, on, what) for a call or an assignment that switches a determinism setting, or None.
    One place for this knowledge: programs record it, and rules report an explicit switch-off
    wherever it is written."""
    names = fact.names
    if isinstance(fact, Assignment):
        if "torch.backends.cudnn.deterministic" in names:
            value = fact.value.literal
            return "cudnn-deterministic", value is not False and value != 0, "torch.backends.cudnn.deterministic"
        return None
    if "torch.use_deterministic_algorithms" in names:
        switch, what = _switch(fact.arg("mode", 0)), "torch.use_deterministic_algorithms"
        effect = "deterministic-algorithms"
    elif "mindspore.set_context" in names:
        switch, what = _switch(fact.arg("deterministic")), "mindspore.set_context(deterministic=...)"
        effect = "mindspore-deterministic"
    elif "mindspore.set_deterministic" in names:
        switch, what = _switch(fact.arg("deterministic", 0)), "mindspore.set_deterministic"
        effect = "mindspore-deterministic"
    else:
        return None
    return (effect, switch, what) if switch is not None else None


def _determinism_call(step: Step, call: Call, out: ProgramFacts) -> None:
    _record_setting(step, out)


def _determinism_assignment(step: Step, assignment: Assignment, out: ProgramFacts) -> None:
    _record_setting(step, out)


def _record_setting(step: Step, out: ProgramFacts) -> None:
    setting = determinism_setting(step.fact)
    if setting is not None:
        effect, on, what = setting
        _set(out, effect, on, Source(step=step, what=what))


def _set(out: ProgramFacts, effect: str, on: Optional[bool], source: Source) -> None:
    if on is None:
        return
    (out.effects if on else out.effects_off).setdefault(effect, source)


def _env(name: str, value: Optional[str], source: Source, env_table: dict, out: ProgramFacts) -> None:
    known = env_table.get(name)
    if known is None:
        return
    accepted = known["on"]
    if value is None or "*" in accepted and value.lower() != "random" or value.strip().lower() in accepted:
        out.effects.setdefault(known["effect"], source)
    else:
        out.effects_off.setdefault(known["effect"], source)


def _usage(step: Step, call: Call, ctx: ProgramContext, out: ProgramFacts) -> None:
    usage = table("usage")
    rng = usage["global_rng"]
    for name in call.names:
        if name.startswith(rng["numpy_prefix"]) and name[len(rng["numpy_prefix"]):] not in rng["numpy_exempt"]:
            out.uses.setdefault("numpy-random", step)
        head, _, member = name.partition(".")
        if head + "." == rng["python_prefix"] and member and "." not in member and member not in rng["python_exempt"]:
            out.uses.setdefault("python-random", step)
        if name in usage["cudnn_layers"] or any(name.startswith(p) for p in usage["cudnn_layers"] if p.endswith(".")):
            out.uses.setdefault("cudnn-layers", step)
        if name in usage["dataloaders"]:
            out.uses.setdefault("dataloader", step)
        if name in usage["dropouts"]:
            out.uses.setdefault("dropout", step)
        if name in usage["hccl"]["mindspore_init"]:
            out.uses.setdefault("hccl", step)
        if name in usage["hccl"]["process_group_calls"]:
            out.uses.setdefault("distributed", step)
            backend = call.arg("backend", 0)
            if backend is not None and backend.value.literal in usage["hccl"]["backends"]:
                out.uses.setdefault("hccl", step)
    for device, hints in usage["devices"].items():
        if _mentions_device(call, hints):
            out.uses.setdefault(device, step)
    if out.first_model is None and _constructs_model(call, step, ctx):
        out.first_model = step


def _mentions_device(call: Call, hints: dict) -> bool:
    if any(name.startswith(prefix) for name in call.names for prefix in hints["prefixes"]):
        return True
    if call.method in hints["methods"] and call.callee.startswith("?") or call.callee.endswith("." + call.method) and call.method in hints["methods"]:
        return True
    for arg in call.args:
        value = arg.value.literal
        if isinstance(value, str) and any(value == s or value.startswith(s + ":") for s in hints["strings"]):
            return True
    return False


def _constructs_model(call: Call, step: Step, ctx: ProgramContext) -> bool:
    models = table("usage")["models"]
    if any(name.startswith(prefix) for name in call.names for prefix in models["constructor_prefixes"]):
        return True
    target = ctx.project.local_target(step.file, call.callee, call.scope, {})
    if target is None or not isinstance(target[1], ClassDef):
        return False
    bases = ctx.project.class_names(target[0], target[1])
    return bool(bases & frozenset(models["base_classes"]))
