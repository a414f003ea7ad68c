"""The engine's half of a finding's premises (findings.PREMISES), proven from the shared facts.

A rule proves what only it can tell (the value it resolved, whether it changes the numbers) and
leaves an open slot for the rest of what its claim rests on. Once every program of the scan is
known, the open slots are filled here, with the evidence either way:

- `trains`: a training program runs this: its entry reaches an optimizer step or a framework
  training call (training.toml). A program taken for training only because it computes gradients
  of a model is judged, but this premise stays unproven.
- `executes`: the line lies in a step of that program's flow (run from its entry, through the
  local calls the project follows). A line under a branch the run's configuration turns off is
  proven unrun by the rule that sees the branch (rules.base.report_written).
- `framework`: the file, or the program, is written against the framework the rule is about.

A line that several programs run is proven by any of them that trains.
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from typing import Optional

from acclint.findings import Finding, Premise
from acclint.knowledge import table
from acclint.linter.facts import Call
from acclint.linter.frameworks import file_frameworks
from acclint.linter.project import Program, launch_trains, training_role


def is_open(premise: Premise) -> bool:
    """A slot the rule left for the engine (linter.context.stated_premises)."""
    return not premise.proven and not premise.evidence


class Prover:
    def __init__(self, project, programs: list, rules: dict):
        """`programs`: the (Program, lands) pairs the scan judged; `rules`: code -> Rule."""
        self.project = project
        self.rules = rules
        self.files = {facts.path: facts for facts in project.files.values()}
        self.shells = {shell.path: shell for shell in project.shells.values()}
        self.by_entry: dict = {}  # entry display path -> Program
        self.by_file: dict = {}  # abspath -> [Program] whose flow has a step in that file
        for program, _ in programs:
            if program.entry.path in self.by_entry:
                continue  # a run of an entry shares the entry's flow
            self.by_entry[program.entry.path] = program
            for facts in program.files:
                self.by_file.setdefault(facts.abspath, []).append(program)
        self._lines: dict = {}  # (entry abspath, file abspath) -> (sorted starts, spans)
        self._training: dict = {}  # entry abspath -> Premise

    # -- completing a finding --------------------------------------------------------------
    def complete(self, finding: Finding, entry: Optional[str]) -> Finding:
        if not any(is_open(p) for p in finding.premises):
            return finding
        programs = self._programs(finding, entry)
        filled = tuple(self._prove(p.premise, finding, programs) if is_open(p) else p for p in finding.premises)
        return replace(finding, premises=filled)

    def _programs(self, finding: Finding, entry: Optional[str]) -> list:
        """The programs that may run the finding's line, the reporting program first."""
        own = self.by_entry.get(entry) if entry is not None else None
        facts = self.files.get(finding.path)
        others = self.by_file.get(facts.abspath, []) if facts is not None else []
        if finding.path in self.shells:  # a launch script: the programs it launches
            others = [p for p in self.by_entry.values() if any(s.path == finding.path for s, _ in p.launches)]
        return ([own] if own is not None else []) + [p for p in others if p is not own]

    def _prove(self, name: str, finding: Finding, programs: list) -> Premise:
        prove = _PROVERS.get(name)
        if prove is None:
            return Premise(name, False, "nothing in the scan shows it")
        return prove(self, finding, programs)

    # -- trains ----------------------------------------------------------------------------
    def trains(self, finding: Finding, programs: list) -> Premise:
        if not programs and finding.path in self.shells:
            return self._launched_training(finding, "trains")
        running = [p for p in programs if self.runs_line(p, finding)] or programs
        proofs = [self.training(p) for p in running]
        for proof in proofs:
            if proof.proven:
                return proof
        if proofs:
            return proofs[0]
        return Premise("trains", False, f"no training program found that runs {finding.path}")

    def training(self, program: Program) -> Premise:
        """The step that makes `program` train, or what it lacks."""
        key = program.entry.abspath
        if key not in self._training:
            self._training[key] = _training_proof(program, self.project)
        return self._training[key]

    # -- executes --------------------------------------------------------------------------
    def executes(self, finding: Finding, programs: list) -> Premise:
        if finding.path in self.shells:
            if programs:
                return Premise("executes", True, f"{finding.path}:{finding.line} launches "
                                                 f"{programs[0].entry.path}")
            return self._launched_training(finding, "executes")
        for program in programs:
            if self.runs_line(program, finding):
                return Premise("executes", True, f"{finding.path}:{finding.line} runs in the program started by "
                                                 f"{program.entry.path}")
        if programs:
            return Premise("executes", False, f"{finding.path}:{finding.line} is not reached from "
                                              f"{_entries(programs)}: the code around it is never called")
        return Premise("executes", False, f"no training program runs {finding.path}:{finding.line}")

    def runs_line(self, program: Program, finding: Finding) -> bool:
        facts = self.files.get(finding.path)
        if facts is None:
            return False
        starts, spans = self._line_index(program, facts)
        at = bisect.bisect_right(starts, finding.line)
        # Steps are few per line: look back over those starting at or before the line.
        return any(start <= finding.line <= end for start, end in spans[max(0, at - 64):at])

    def _line_index(self, program: Program, facts) -> tuple:
        key = (program.entry.abspath, facts.abspath)
        index = self._lines.get(key)
        if index is None:
            spans = sorted((facts.spans[s.fact.node].line, facts.spans[s.fact.node].end_line)
                           for s in program.flow if s.file is facts and s.fact.node < len(facts.spans))
            index = self._lines[key] = ([start for start, _ in spans], spans)
        return index

    def _launched_training(self, finding: Finding, name: str) -> Premise:
        """A launch script whose training script is not on disk: its launch lines say what they run
        (a training script's name, a flag only training reads: training.toml [launches])."""
        shell = self.shells[finding.path]
        for launch in shell.script.launches:
            if launch.span.line >= finding.line and launch_trains(launch):
                where = f"{finding.path}:{launch.span.line}"
                if name == "trains":
                    return Premise(name, True, f"{where} launches {launch.script}, a training script by its name or "
                                               "flags (not on disk)")
                return Premise(name, True, f"{finding.path}:{finding.line} is in force when {where} launches "
                                           f"{launch.script}")
        return Premise(name, False, f"no launch line at or after {finding.path}:{finding.line} shows it starts training")

    # -- framework -------------------------------------------------------------------------
    def framework(self, finding: Finding, programs: list) -> Premise:
        rule = self.rules.get(finding.rule)
        wanted = getattr(rule, "tensor_framework", None) or next(iter(getattr(rule, "frameworks", ()) or ()), None)
        facts = self.files.get(finding.path)
        found = file_frameworks(facts) if facts is not None else frozenset()
        if wanted is None:
            return Premise("framework", True, "the rule holds for every framework")
        if wanted in found:
            return Premise("framework", True, f"{finding.path} imports {wanted}")
        for program in programs:
            if any(wanted in file_frameworks(f) for f in program.files[:1]):
                return Premise("framework", True, f"the program started by {program.entry.path} imports {wanted}")
        return Premise("framework", False, f"{finding.path} is not shown to use {wanted}")


_PROVERS = {"trains": Prover.trains, "executes": Prover.executes, "framework": Prover.framework}


def _entries(programs: list, shown: int = 2) -> str:
    names = [p.entry.path for p in programs[:shown]]
    more = f" and {len(programs) - shown} more" if len(programs) > shown else ""
    return ", ".join(names) + more


def _where(step) -> str:
    return f"{step.file.path}:{step.file.spans[step.fact.node].line}"


def _training_proof(program: Program, project) -> Premise:
    """Proven by an optimizer step or a training loop or cell the entry reaches (a local subclass of
    one too), or by gradients followed by an optimizer applying them (MindSpore's `optimizer(grads)`)."""
    callees = frozenset(table("training")["optimizers"]["callees"])
    gradient = None
    for step in program.flow:
        if not isinstance(step.fact, Call):
            continue
        role = training_role(step.fact)
        if role is None and project.runs_loop(program, step.fact):
            role = "step"
        if role == "step":
            return Premise("trains", True, f"`{step.fact.callee}()` at {_where(step)}, reached from {program.entry.path}")
        if role == "gradient" and gradient is None:
            gradient = step
        elif gradient is not None and step.fact.method in callees and step.fact.callee.split(".")[-1] in callees:
            return Premise("trains", True, f"gradients at {_where(gradient)} applied by `{step.fact.callee}()` at "
                                           f"{_where(step)}, reached from {program.entry.path}")
    if gradient is not None:
        return Premise("trains", False, f"{program.entry.path} computes gradients ({_where(gradient)}) but reaches no "
                                        "optimizer step or training call")
    return Premise("trains", False, f"no optimizer step or training call is reached from {program.entry.path}")
