"""What a program seeds, switches on and uses, computed once per program and shared by the rules."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Optional

from acclint.findings import Premise
from acclint.knowledge import table
from acclint.knowledge.library import seeders as library_seeders
from acclint.linter.context import ProgramContext
from acclint.linter.facts import Assignment, Call, EnvWrite, FlagGuard
from acclint.linter.models import builds_weights
from acclint.linter.frameworks import file_frameworks
from acclint.linter.project import Program, Step, is_training_marker
from acclint.linter.runconfig import TAKEN, UNKNOWN, flow_guards, off_in_every_run, run_config
from acclint.rules.flags import OffByDefault, opt_in_guard, passed_by_launch
from acclint.rules.memo import per_flow, per_program


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


@dataclass(frozen=True)
class OptionalSeed:
    """A seeding call that runs only when a flag or config field, off by default, is given."""

    source: Source
    covers: frozenset
    guard: FlagGuard
    default: OffByDefault


@dataclass(frozen=True)
class OptInSetting:
    """A setting that switches an effect on only when a flag or config field, off by default and
    passed by no launch script, is given (`if args.deterministic:` with `--deterministic` store_true)."""

    source: Source
    guard: FlagGuard
    default: OffByDefault


@dataclass
class ProgramFacts:
    seeded: dict = field(default_factory=dict)  # generator -> Source (first seeding)
    effects: dict = field(default_factory=dict)  # effect -> Source
    effects_off: dict = field(default_factory=dict)  # effect -> Source that switches it off
    uses: dict = field(default_factory=dict)  # usage -> Step showing it
    # usage -> (Step, its flag guards as ((FlagGuard, FileFacts), ...); () = unconditional) of each place showing it
    use_guards: dict = field(default_factory=dict)
    imports: set = field(default_factory=set)  # top-level packages imported by reached files
    # The tensor frameworks it trains with: those its entry script and the files holding its training
    # steps import (a MindSpore script that reaches a library written against torch trains with MindSpore).
    frameworks: frozenset = frozenset()
    first_model: Optional[Step] = None
    # The first weighted layer that construction builds (the construction itself for a layer or a library
    # model): a seed its own constructor sets before this still comes before the first initial weight.
    first_weights: Optional[Step] = None
    # Seeding that the default run skips (`if args.seed is not None:` with --seed defaulting to None),
    # and the generators some seeding call covers whatever the flags.
    optional_seeds: list = field(default_factory=list)
    always_seeded: set = field(default_factory=set)
    # Effects switched on only behind such a flag: effect -> OptInSetting (the default run lacks them).
    optional_effects: dict = field(default_factory=dict)
    # Calls in its set-up whose target is chosen at run time (a config's build(), a registry, a
    # subscripted dict or getattr of functions, methods of what those built): code acclint did not read.
    open_calls: list = field(default_factory=list)


def program_facts(ctx: ProgramContext) -> ProgramFacts:
    return per_program(ctx, "program_facts", _compute)


def _compute(ctx: ProgramContext) -> ProgramFacts:
    """What the entry's flow does (shared by its runs), then what its launches add."""
    flow = per_flow(ctx, "flow_facts", _flow_facts)
    out = replace(flow, seeded=dict(flow.seeded), effects=dict(flow.effects), effects_off=dict(flow.effects_off),
                  uses=dict(flow.uses), imports=set(flow.imports), optional_seeds=list(flow.optional_seeds),
                  always_seeded=set(flow.always_seeded), optional_effects=dict(flow.optional_effects))
    config = run_config(ctx.project, ctx.program, [(f"{shell.path}:{launch.span.line}", launch,
                                                     ctx.project.launch_folders(shell.abspath))
                                                    for shell, launch in ctx.program.launches])
    for name, places in flow.use_guards.items():  # a branch every run of this program switches off
        if all(placed and off_in_every_run(config, placed) for _, placed in places):
            del out.uses[name]
    seeding = table("seeding")
    for effect, opt_in in flow.optional_effects.items():  # opted in by this run's launch: on after all
        if passed_by_launch(ctx, opt_in.guard, opt_in.default):
            out.effects.setdefault(effect, opt_in.source)
            del out.optional_effects[effect]
    for shell, launch in ctx.program.launches:
        for name, assignment in launch.effective_env().items():  # exports in force when it launches
            _env(name, assignment.value, Source(shell_span=assignment.span, what=f"export {name}={assignment.raw}"),
                 seeding["env"], out)
        for flag, value in launch.flags().items():
            known = seeding["launcher_flags"].get(flag)
            if known:
                for effect in known["effects"]:
                    out.effects.setdefault(effect, Source(shell_span=value.span, what=f"--{flag}"))
    return out


def _flow_facts(ctx: ProgramContext) -> ProgramFacts:
    program = ctx.program
    out = ProgramFacts()
    seeding = table("seeding")
    for file in program.files:
        for targets in file.bindings.values():
            out.imports.update(t.split(".", 1)[0] for t in targets)
    models = _ModelFinder(ctx)
    open_calls = _OpenCalls(ctx)
    for step, guards in zip(program.flow, flow_guards(program)):
        fact = step.fact
        if not isinstance(fact, (Call, Assignment, EnvWrite)):
            continue
        opt_in = opt_in_guard(ctx, guards) if guards else None
        if isinstance(fact, Call):
            _seeding_call(ctx, step, fact, opt_in, out)
            _record_setting(step, opt_in, out)
            _usage(step, fact, out, guards)
            models.see(step, fact)
            open_calls.see(step, fact)
        elif isinstance(fact, Assignment):
            _record_setting(step, opt_in, out)
        else:
            _env(fact.name, fact.value, Source(step=step, what=f"os.environ[{fact.name!r}]"), seeding["env"], out,
                 opt_in)
    out.first_model, out.first_weights = models.first, models.weights
    out.open_calls = open_calls.found
    out.frameworks = _training_frameworks(program)
    return out


class _OpenCalls:
    """The flow's calls that acclint cannot follow and that may run code it did not read."""

    def __init__(self, ctx: ProgramContext):
        graph = table("callgraph")
        self.builders = frozenset(graph["builders"])
        self.components = tuple(graph["components"])
        self.max_depth = graph["set_up_depth"]
        self.model_methods = frozenset(graph["model_methods"])
        self.project = ctx.project
        self.built: set = set()  # (file, scope, name) holding an object a builder returned
        self.found: list = []

    def see(self, step: Step, call: Call) -> None:
        # A run is set up by the entry's code and what it calls directly (`main()`, a trainer's
        # __init__); a dynamic call deeper down (a checkpoint utility's getattr) is a library's own.
        if step.importing or step.depth > self.max_depth or call.scope.rsplit(".", 1)[-1] in self.model_methods:
            return
        if not self._open(step, call):
            return
        self.found.append(step)
        if call.assigned_to:
            self.built.add((step.file.abspath, call.scope, call.assigned_to))

    def _open(self, step: Step, call: Call) -> bool:
        head = call.callee.split(".", 1)[0]
        if (step.file.abspath, call.scope, head) in self.built:
            return True  # `runner.train()` on what `Runner.from_cfg(cfg)` built, `cls()` on what locate() gave
        if call.method in self.builders:
            receiver = call.callee.rsplit(".", 1)[0] if "." in call.callee else ""
            if self._component(receiver) or self._builds_component(call):
                return False
            return self.project.local_target(step.file, call.callee, call.scope, {}) is None
        if call.callee != "?" or call.receiver is None:
            return False
        target = call.receiver
        if target.base_call:
            dynamic = target.base == "getattr"  # `getattr(module, name)(...)`
        else:  # `HANDLERS[name](...)`: open unless the dict's functions are known (a literal of references)
            dynamic = (bool(target.chain) and target.chain[-1] == "[]" and bool(target.base)
                       and not target.base.startswith("self.") and not _holds_references(step.file, target.base))
        return dynamic and not self._builds_component(call)

    def _builds_component(self, call: Call) -> bool:
        """`model = instantiate(cfg.model).to(device)`, `model = models.__dict__[arch]()`: whatever builds
        it, a result named for a component is a part of the run (the name is where the chain goes)."""
        held = call.assigned_to or next((s.split(":", 1)[1] for s in reversed(call.sinks)
                                         if s.startswith(("name:", "attr:"))), None)
        return self._component(held)

    def _component(self, name: Optional[str]) -> bool:
        text = (name or "").rsplit(".", 1)[-1].lower()
        return any(hint in text for hint in self.components)


def _holds_references(file, name: str) -> bool:
    return any(r.sink == "name:" + name for r in file.references)


def _training_frameworks(program: Program) -> frozenset:
    files = {program.entry.abspath: program.entry}
    files.update((step.file.abspath, step.file) for step in program.flow if is_training_marker(step.fact))
    found: frozenset = frozenset()
    for file in files.values():
        found |= file_frameworks(file, libraries=True)
    return found


# -- seeding ---------------------------------------------------------------------------------


def _seeding_call(ctx: ProgramContext, step: Step, call: Call, opt_in: Optional[tuple], out: ProgramFacts) -> None:
    seeders = library_seeders()
    for name in (*call.names, *_local_class_seeders(ctx, step, call, seeders), *_method_seeders(step, call, seeders)):
        entry = seeders.get(name)
        if entry is not None:
            if _saves_state_first(step.file, call):
                return  # a temporary re-seed around weight initialisation, restored afterwards
            source = Source(step=step, what=name)
            _record_seeding(frozenset(entry.get("covers", ())), source, opt_in, out)
            for effect in entry.get("effects", []):
                _set(out, effect, True, source, opt_in)
            conditional = entry.get("when_true")
            if conditional:
                arg = call.arg(conditional["keyword"], conditional["position"])
                if arg is not None and arg.value.literal is not False and arg.value.literal is not None:
                    for effect in conditional["effects"]:
                        _set(out, effect, True, source, opt_in)
            return
    unseen = _unseen_helper(ctx, step, call)
    if unseen is not None:
        covers = frozenset(table("seeding")["unseen_helpers"]["covers"])
        what = f"{unseen} (assumed to seed every generator: acclint cannot read it)"
        _record_seeding(covers, Source(step=step, what=what), opt_in, out)


def _local_class_seeders(ctx: ProgramContext, step: Step, call: Call, seeders: dict) -> tuple:
    """The seeding classes a project's own class derives from (`LigerORPOTrainer(ORPOTrainer)`): building
    it runs the base's __init__, which seeds."""
    if not call.method[:1].isupper():
        return ()  # constructing a class, by convention
    return tuple(sorted(ctx.project.constructed_class_names(step.file, call) & seeders.keys()))


def _method_seeders(step: Step, call: Call, seeders: dict) -> tuple:
    """`model.fit(...)` on an object built in the same function (`model = SentenceTransformer(...)`): the
    seeding methods of the class it was built from (`sentence_transformers.SentenceTransformer.fit`)."""
    receiver, dot, method = call.callee.rpartition(".")
    if not dot or "." in receiver or not receiver.isidentifier() or not any(n.endswith(dot + method) for n in seeders):
        return ()
    built = max((c for c in step.file.calls_in(call.scope) if c.assigned_to == receiver and c.order < call.order),
                key=lambda c: c.order, default=None)
    if built is None:
        return ()
    return tuple(sorted(name for name in (f"{cls}.{method}" for cls in built.names) if name in seeders))


def _saves_state_first(file, call: Call) -> bool:
    savers = frozenset(table("seeding")["state_savers"])
    return any(other.order < call.order and other.names & savers for other in file.calls_in(call.scope))


def _record_seeding(covers: frozenset, source: Source, opt_in: Optional[tuple], out: ProgramFacts) -> None:
    for generator in covers:
        out.seeded.setdefault(generator, source)
    if opt_in is not None:  # seeds only when a flag off by default is given
        out.optional_seeds.append(OptionalSeed(source, covers, *opt_in))
    else:
        out.always_seeded |= covers


@lru_cache(maxsize=1)
def _unseen_pattern() -> re.Pattern:
    return re.compile(table("seeding")["unseen_helpers"]["pattern"])


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _unseen_helper(ctx: ProgramContext, step: Step, call: Call) -> Optional[str]:
    """The qualified name of an imported function named like a seeder that acclint cannot read."""
    method = _CAMEL.sub("_", call.method).lower()
    if not _unseen_pattern().fullmatch(method):
        return None
    names = call.names or _star_imported(ctx, step, call)
    if not names:
        return None  # not imported: a local name, a method on an object, or unknown
    frameworks = table("seeding")["unseen_helpers"]["framework_packages"]
    names = sorted(n for n in names if n.split(".", 1)[0] not in frameworks)
    if not names:
        return None
    if ctx.project.local_target(step.file, call.callee, call.scope, {}) is not None:
        return None  # a local definition: the flow follows it and sees what it really seeds
    return names[0]


def _star_imported(ctx: ProgramContext, step: Step, call: Call) -> frozenset:
    """`init_seeds()` after `from utils.general import *` of a module acclint cannot read."""
    if "." in call.callee or call.callee in step.file.functions or call.callee in step.file.classes:
        return frozenset()
    return frozenset(f"{imp.module}.{call.callee}" for imp in step.file.imports
                     if imp.name == "*" and not imp.module.startswith(".")
                     and ctx.project.module_file(step.file, imp.module) is None)


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


def _record_setting(step: Step, opt_in: Optional[tuple], out: ProgramFacts) -> None:
    setting = determinism_setting(step.fact)
    if setting is not None:
        effect, on, what = setting
        _set(out, effect, on, Source(step=step, what=what), opt_in)


def _set(out: ProgramFacts, effect: str, on: Optional[bool], source: Source, opt_in: Optional[tuple] = None) -> None:
    """Record a setting. One that switches an effect on behind an opt-in flag does not make the
    default run have it: it is kept apart, for the rules to say so at its line."""
    if on is None:
        return
    # Switching one effect on may bring others along (MindSpore's switch sets HCCL_DETERMINISTIC); switched
    # off, the rule of the switch itself says so where it is written.
    implied = table("seeding")["implied_effects"].get(effect, ()) if on else ()
    for brought in (effect, *implied):
        if on and opt_in is not None:
            out.optional_effects.setdefault(brought, OptInSetting(source, *opt_in))
        else:
            (out.effects if on else out.effects_off).setdefault(brought, source)


def _env(name: str, value: Optional[str], source: Source, env_table: dict, out: ProgramFacts,
         opt_in: Optional[tuple] = None) -> None:
    known = env_table.get(name)
    if known is None:
        return
    accepted = known["on"]
    on = value is None or "*" in accepted and value.lower() != "random" or value.strip().lower() in accepted
    # A variable read only when the interpreter starts, written by the program itself: its children's effect.
    effect = known.get("in_process_effect", known["effect"]) if source.step is not None else known["effect"]
    _set(out, effect, on, source, opt_in)


# -- what the program uses -------------------------------------------------------------------


def global_draw(name: str) -> Optional[str]:
    """"numpy-random" / "python-random" when the qualified name draws from NumPy's or Python's
    module-level generator (the global state `np.random.seed` / `random.seed` fixes), else None."""
    rng = table("usage")["global_rng"]
    if name.startswith(rng["numpy_prefix"]) and name[len(rng["numpy_prefix"]):] not in rng["numpy_exempt"]:
        return "numpy-random"
    head, _, member = name.partition(".")
    if head + "." == rng["python_prefix"] and member and "." not in member and member not in rng["python_exempt"]:
        return "python-random"
    return None


def _usage(step: Step, call: Call, out: ProgramFacts, guards: tuple = ()) -> None:
    for name in _uses_of(call):
        out.uses.setdefault(name, step)
        out.use_guards.setdefault(name, []).append((step, guards))


def reached_use(ctx: ProgramContext, facts: ProgramFacts, name: str) -> tuple:
    """(Step, `executes` Premise) of the place showing usage `name` that the program's runs execute: the first
    one no configuration branch keeps from running, else the first whose branch is unknown, else the first
    of those every run skips (linter.runconfig: launch flags, loaded configs, code defaults, the values
    every call passes a parameter). (None, None) when the program shows no such usage."""
    if name not in facts.uses:
        return None, None
    config = run_config(ctx.project, ctx.program)
    entry = ctx.program.entry.path
    unknown = skipped = None
    skips = 0
    for step, placed in facts.use_guards.get(name, ()):
        branch = config.branch(placed) if placed else None
        if branch is None or branch.state == TAKEN:
            why = f"; {branch.evidence}" if branch is not None else ""
            return step, Premise("executes", True, f"{_at(step)} runs in the program started by {entry}{why}")
        if branch.state == UNKNOWN:
            unknown = unknown or (step, branch)
        else:
            skipped, skips = skipped or (step, branch), skips + 1
    step, branch = unknown or skipped
    others = f"; so are the {skips - 1} other such calls the program reaches" if not unknown and skips > 1 else ""
    return step, Premise("executes", False, f"{_at(step)} {branch.evidence}{others}")


def _at(step: Step) -> str:
    return f"{step.file.path}:{step.file.spans[step.fact.node].line}"


def _uses_of(call: Call) -> set:
    """What this call shows the program uses (usage.toml)."""
    usage = table("usage")
    seen = set()
    names_only = any(sink in usage["global_rng"]["naming_sinks"] for sink in call.sinks)
    for name in call.names:
        generator = global_draw(name)
        if generator is not None and not names_only:  # a draw joined into a name changes no number
            seen.add(generator)
        if name in usage["cudnn_layers"] or any(name.startswith(p) for p in usage["cudnn_layers"] if p.endswith(".")):
            seen.add("cudnn-layers")
        if name in usage["dataloaders"]:
            seen.add("dataloader")
        if name in usage["dropouts"]:
            seen.add("dropout")
        if name in usage["hccl"]["mindspore_init"]:
            hccl = usage["hccl"]
            where = hccl["mindspore_init_backend"]
            backend = call.arg(where["keyword"], where["position"])
            if backend is None or backend.value.literal not in hccl["mindspore_other_backends"]:
                seen.add("hccl")
            elif backend.value.literal in hccl["cuda_backends"]:
                seen.add("nccl")
        if name in usage["hccl"]["process_group_calls"]:
            seen.add("distributed")
            backend = call.arg("backend", 0)
            if backend is not None and backend.value.literal in usage["hccl"]["backends"]:
                seen.add("hccl")
            elif backend is not None and backend.value.literal in usage["hccl"]["cuda_backends"]:
                seen.add("nccl")
    for device, hints in usage["devices"].items():
        if _places_on(call, hints, usage["hccl"]["process_group_calls"]):
            seen.add(device)
    return seen


def _places_on(call: Call, hints: dict, process_group_calls: list) -> bool:
    """Real placement on a device: `.cuda()`, `.to("cuda")`, `torch.device("cuda")`, `device="cuda"`,
    `set_device`, a device kernel, a device-only collective back end. Not seeding or probes."""
    names = call.names
    if names & frozenset(hints["calls"]) or any(n.startswith(p) for n in names for p in hints["call_prefixes"]):
        return True
    if call.method in hints["methods"] and "." in call.callee and not names:
        return True  # `model.cuda()`: a method on a value, not a module function such as `torch.cuda`
    strings = hints["strings"]
    for arg in call.args:
        for value in (arg.value.literal, *arg.value.choices):
            if isinstance(value, str) and any(value == s or value.startswith(s + ":") for s in strings):
                return True
    if names & frozenset(process_group_calls):
        backend = call.arg("backend", 0)
        return backend is not None and backend.value.literal in hints["backends"]
    return False


class _ModelFinder:
    """The first model construction: a weighted layer, a library factory, or a local Module/Cell
    subclass whose construction reaches one (reported at the outermost construction)."""

    def __init__(self, ctx: ProgramContext):
        self.ctx = ctx
        self.first: Optional[Step] = None
        self.weights: Optional[Step] = None  # the weighted layer that made `first` a model
        self.open: list = []  # local Module constructions whose __init__ is being followed
        models = table("usage")["models"]
        self.bases = frozenset(models["base_classes"])
        self.weighted_bases = frozenset(models["weighted_bases"])

    def see(self, step: Step, call: Call) -> None:
        if self.first is not None or step.deferred:
            return  # a class in a registry, a worker handed to spawn: built at a time acclint cannot place
        while self.open and self.open[-1].depth >= step.depth:
            self.open.pop()  # returned from that constructor
        kind = self._kind(step, call)
        if kind == "weights":
            self.first = self.open[0] if self.open else step
            self.weights = step
        elif kind == "module":
            self.open.append(step)

    def _kind(self, step: Step, call: Call) -> Optional[str]:
        names = call.names
        if builds_weights(names):
            return "weights"
        bases = self.ctx.project.constructed_class_names(step.file, call)
        if bases & self.weighted_bases:
            return "weights"
        return "module" if bases & self.bases else None


def first_model_label(step: Step) -> str:
    """How a message names a model construction."""
    callee = step.fact.callee
    return f"{callee}() (from_pretrained initialises new heads at random)" if callee.endswith("from_pretrained") \
        else f"{callee}()"


__all__ = ["OptionalSeed", "global_draw", "Program", "ProgramFacts", "Source", "first_model_label", "program_facts"]
