"""The `trains` premise: whether a program's run is a training run the migration is about.

A program trains when its entry reaches an optimizer step or a framework training call (training.toml:
`optimizer.step()`, `Model.train(epoch, dataset)`, a one-step training cell or a local subclass, or
gradients applied by `optimizer(grads)`), and only when

- the optimizer steps a model's parameters: one over tensors made trainable by hand (`[image]` built with
  `requires_grad=True`) optimises an input against a fixed network;
- the one-step training cell it builds is run (called, or handed to local code that may call it), not
  only built and compiled (a precompile tool);
- it runs on a device the migration is about: a TPU-only script (torch_xla) is not;
- it is the code being migrated: an example of another project copied into this one is not
  (linter.roles.vendored_copy), nor an example a copied project ships that its launch scripts never
  start (linter.shipped_examples), nor the self-test in a library module's `__main__` block
  (linter.self_test).

A program that loads trained weights and builds nothing that trains evaluates or exports a model
(`only_evaluates`): findings written in its own file are noise, not advice (linter.proof drops them).
Everything is read from the program's flow (linter.project), once per program.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Optional

from acclint.findings import Premise
from acclint.knowledge import table
from acclint.linter.facts import Call
from acclint.linter.project import Program, Step, training_role
from acclint.linter.roles import vendored_copy
from acclint.linter.self_test import module_self_test
from acclint.linter.shipped_examples import shipped_example


def where(step: Step) -> str:
    return f"{step.file.path}:{step.file.spans[step.fact.node].line}"


@lru_cache(maxsize=1)
def _facts() -> tuple:
    training = table("training")
    return (training["run"], frozenset(training["loops"]), frozenset(training["optimizers"]["callees"]),
            tuple(training["optimizers"]["prefixes"]))


def training_proof(program: Program, project) -> Premise:
    """Proven by the first step that trains the model, with its line; else what the program lacks."""
    copied = vendored_copy(program.entry.path, program.entry.abspath)
    if copied is not None:
        return Premise("trains", False, f"{program.entry.path} is a program of another project copied into this "
                                        f"one, {copied}: its runs are not the code being migrated")
    shipped = shipped_example(program.entry.path, program.entry.abspath)
    if shipped is not None:
        return Premise("trains", False, shipped)
    self_test = module_self_test(program)
    if self_test is not None:
        return Premise("trains", False, self_test)
    run, loops, callees, _ = _facts()
    inputs = _input_optimizers(program)
    gradient = aside = None  # the first gradient; why a step seen so far did not count
    for step in program.flow:
        fact = step.fact
        if not isinstance(fact, Call):
            continue
        role = training_role(fact)
        cell = role == "step" and bool(fact.names & loops)
        if role is None and project.runs_loop(program, fact):
            role, cell = "step", True
        if role == "step":
            reason = _unrun_cell(program, step, project) if cell else inputs.get(_receiver(fact))
            if reason is None:
                return _on_device(program, Premise("trains", True, f"`{fact.callee}()` at {where(step)}, reached "
                                                                   f"from {program.entry.path}"))
            aside = aside or reason
        elif role == "gradient" and gradient is None:
            gradient = step
        elif gradient is not None and fact.method in callees and fact.callee.split(".")[-1] in callees:
            if fact.callee in inputs:
                aside = aside or inputs[fact.callee]
                continue
            idle = _idle_cell_method(program, step, project)
            if idle is not None:
                aside = aside or idle
                continue
            return _on_device(program, Premise("trains", True, f"gradients at {where(gradient)} applied by "
                                                               f"`{fact.callee}()` at {where(step)}, reached from "
                                                               f"{program.entry.path}"))
    if aside is not None:
        return Premise("trains", False, aside)
    loads = weight_load(program)
    if loads is not None:
        return Premise("trains", False, loads)
    if gradient is not None:
        return Premise("trains", False, f"{program.entry.path} computes gradients ({where(gradient)}) but reaches no "
                                        "optimizer step or training call")
    return Premise("trains", False, f"no optimizer step or training call is reached from {program.entry.path}")


def weight_load(program: Program) -> Optional[str]:
    """Evidence that `program` loads trained weights (for a program that reaches no training step)."""
    run = _facts()[0]
    names, methods = frozenset(run["weight_loads"]), frozenset(run["weight_load_methods"])
    for step in program.flow:
        fact = step.fact
        if isinstance(fact, Call) and (fact.names & names or ("." in fact.callee and fact.method in methods)):
            return (f"{program.entry.path} loads trained weights (`{fact.callee}()` at {where(step)}) and reaches no "
                    "optimizer step or training call: it evaluates or exports a trained model")
    return None


def only_evaluates(program: Program) -> bool:
    """Loads trained weights and builds nothing that trains (no optimizer, gradient or training call):
    findings written in its own file are noise, not advice. A program that builds an optimizer but whose
    step acclint does not see (a library's loop) may still train: it keeps its findings, unproven."""
    if weight_load(program) is None:
        return False
    return not any(training_role(step.fact) is not None for step in program.flow)


def _receiver(call: Call) -> str:
    return call.callee.rsplit(".", 1)[0] if "." in call.callee else ""


def _input_optimizers(program: Program) -> dict:
    """Optimizer name -> why it trains no model, for optimizers built over tensors made trainable by hand."""
    run, _, _, prefixes = _facts()
    trainable = _trainable_tensors(program, run)
    out = {}
    for step in program.flow:
        fact = step.fact
        if not isinstance(fact, Call) or not fact.assigned_to or not any(n.startswith(prefixes) for n in fact.names):
            continue
        steps = step.file.name_lists.get(fact.node)
        if steps and all(name in trainable for name in steps):
            shown = ", ".join(f"`{name}` ({trainable[name]})" for name in steps)
            out[fact.assigned_to] = (f"the optimizer built at {where(step)} steps {shown}, not a model's parameters: "
                                     f"{program.entry.path} optimises an input against a fixed network")
    return out


def _trainable_tensors(program: Program, run: dict) -> dict:
    """Names bound to tensors made trainable by hand -> where: `x = torch.zeros(..., requires_grad=True)`,
    `x = y.clone().requires_grad_()`, or `x.requires_grad_()` on its own."""
    methods, keyword = frozenset(run["trainable_methods"]), run["trainable_keyword"]
    out = {}
    for step in program.flow:
        fact = step.fact
        if not isinstance(fact, Call):
            continue
        flagged = fact.arg(keyword)
        if fact.assigned_to and flagged is not None and flagged.value.literal is True:
            out[fact.assigned_to] = f"`{keyword}=True` at {where(step)}"
        elif fact.method in methods:
            name = fact.assigned_to or _receiver(fact)
            if name and not name.startswith("?"):
                out[name] = f"`{fact.method}()` at {where(step)}"
    return out


def _unrun_cell(program: Program, built: Step, project) -> Optional[str]:
    """Why a one-step training cell bound to a name is never run, or None: it runs when called, handed
    to local code (which may call it), or when it is not bound to a name (returned, passed on)."""
    name = built.fact.assigned_to
    if not name or _cell_runs(program, built, project, through_wrappers=False):
        return None
    return (f"the training cell `{name}` built at {where(built)} is never run: {program.entry.path} neither calls "
            "it nor reaches a training call (it is only built or compiled)")


def _idle_cell_method(program: Program, step: Step, project) -> Optional[str]:
    """Why the method of a built class holding `step` (a cell's `construct` applying gradients) never runs,
    or None. Such a method runs when the program runs the object: calls it, hands it to local code, or hands it
    to a wrapper it then does more with than evaluate (`Model(cell).train(...)`)."""
    if not step.deferred:
        return None
    function = step.file.functions.get(step.fact.scope)
    owner = function.owner if function is not None else None
    if not owner:
        return None
    built = [s for s in program.flow if isinstance(s.fact, Call) and s.fact.assigned_to
             and _constructs(project, s, step.file, owner)]
    if not built or any(_cell_runs(program, s, project, through_wrappers=True) for s in built):
        return None
    return (f"the cell `{built[0].fact.assigned_to}` built at {where(built[0])} is never run: "
            f"{program.entry.path} neither calls it nor trains with what it hands it to, so its training step "
            f"({where(step)}) does not run")


def _constructs(project, step: Step, file, owner: str) -> bool:
    """Does `step` construct the local class `owner` of `file`, or a local subclass of it?"""
    target = project.local_target(step.file, step.fact.callee, step.fact.scope, {})
    if target is None or not hasattr(target[1], "bases"):
        return False
    chain = [target, *project.local_bases(*target)]
    return any(f.abspath == file.abspath and cls.qualname == owner for f, cls in chain)


def _cell_runs(program: Program, built: Step, project, through_wrappers: bool) -> bool:
    """Does the program run the cell bound at `built`: call it, or hand it to local code (which may call it)?
    `through_wrappers`: also when it hands it to a library wrapper it then uses for more than evaluating, or
    whose result it does not keep (a library training loop of its own)."""
    name = built.fact.assigned_to
    evaluating = frozenset(_facts()[0]["evaluation_methods"])
    for step in program.flow[built.index + 1:]:
        fact = step.fact
        if not isinstance(fact, Call):
            continue
        if fact.callee == name:
            return True
        if not any(arg.value.dotted == name for arg in fact.args):
            continue
        if project.local_target(step.file, fact.callee, fact.scope, {}) is not None:
            return True
        if not through_wrappers:
            continue
        if not fact.assigned_to:
            return True
        wrapper = fact.assigned_to + "."
        uses = [s.fact for s in program.flow[step.index + 1:] if isinstance(s.fact, Call)
                and s.fact.callee.startswith(wrapper)]
        if not uses or any(use.method not in evaluating for use in uses):
            return True
    return False


def _on_device(program: Program, proof: Premise) -> Premise:
    """`proof` unless the program runs on a device the migration is not about (training.toml [run]).
    Both the other device's package and a use of the migration's devices are read in the program's own
    code (its entry's folder): a library it reaches that probes every device it knows
    (`torch.cuda.is_available()`, an optional `torch_npu` kernel) does not choose the run's device."""
    run = _facts()[0]
    other = tuple(run["other_device_packages"])
    own = _own_files(program)
    package = next((f"{file.path} imports {imp.module or imp.name}" for file in own for imp in file.imports
                    if (imp.module or "").split(".")[0] in other), None)
    if package is None or _uses_migration_device(program, run, frozenset(id(file) for file in own)):
        return proof
    return Premise("trains", False, f"{proof.evidence}, but on another device: {package} and nothing in the run "
                                    "uses a GPU or an NPU")


def _own_files(program: Program) -> list:
    """The files of the program written with its entry: the entry's folder and below."""
    folder = os.path.dirname(program.entry.abspath) + os.sep
    return [file for file in program.files if file is program.entry or file.abspath.startswith(folder)]


def _uses_migration_device(program: Program, run: dict, own: frozenset) -> bool:
    prefixes, methods = tuple(run["device_prefixes"]), frozenset(run["device_methods"])
    strings = tuple(run["device_strings"])
    for step in program.flow:
        fact = step.fact
        if not isinstance(fact, Call) or id(step.file) not in own:
            continue
        if fact.method in methods or any(n.startswith(prefixes) for n in fact.names):
            return True
        if any(isinstance(a.value.literal, str) and a.value.literal.lower().startswith(strings) for a in fact.args):
            return True
    return False
