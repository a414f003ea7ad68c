"""The engine's half of a finding's premises (findings.PREMISES), proven from the shared facts.

A rule proves what only it can tell (the value it resolved, whether it changes the numbers) and
leaves an open slot for the rest of what its claim rests on. Once every program of the scan is
known, the open slots are filled here, with the evidence either way:

- `trains`: a training program runs this: its entry reaches an optimizer step or a framework
  training call (training.toml). A program taken for training only because it computes gradients
  of a model is judged, but this premise stays unproven.
- `executes`: the line lies in a step of that program's flow (run from its entry, through the
  local calls the project follows), and the branches it sits under are taken by a run of the program,
  as its configuration resolves them (linter.runconfig: launch flags, the config files it loads, the
  defaults in the code). A line only an opt-in reaches (a key no config the run loads sets) is not
  proven, and the finding is advice; a key acclint could not resolve leaves it unproven, saying why.
- `framework`: the file, or the program, is written against the framework the rule is about.

A rule may prove an open slot itself from the programs that run its line (`prove_premise(name,
finding, facts, programs, project)`, `facts` the finding's file; None leaves it to the shared facts).

A line that several programs run is proven by any of them that trains.
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from typing import Optional

from acclint.findings import Finding, Premise
from acclint.linter.frameworks import file_frameworks
from acclint.linter.layers import unused_attribute_layer
from acclint.linter.project import Program, is_entry_candidate, launch_trains
from acclint.linter.runconfig import SKIPPED, TAKEN, file_config, flow_guards, run_config
from acclint.linter.training_run import only_evaluates, training_proof


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
        self._flow_guards: dict = {}  # entry abspath -> the guards of each step of its flow
        self._alone: dict = {}  # file abspath -> (node -> guards, its own RunConfig), for files no program runs
        self._calls_by_node: dict = {}  # file abspath -> {node: Call}
        self._own: dict = {}  # reported path -> the Program its entry script starts, or None

    # -- completing a finding --------------------------------------------------------------
    def complete(self, finding: Finding, entry: Optional[str]) -> Optional[Finding]:
        """`finding` with its open premises filled, or None when it is noise (`is_noise`)."""
        if not any(is_open(p) for p in finding.premises):
            return finding
        programs = self._programs(finding, entry)
        filled, opt_in = [], False
        for premise in finding.premises:
            if is_open(premise) and premise.premise == "executes":
                premise, opt_in = self.executes(finding, programs)
            elif is_open(premise):
                premise = self._prove(premise.premise, finding, programs)
            filled.append(premise)
        # A line only a configuration no run loads reaches is the user's opt-in: advice, whatever the mode.
        finding = replace(finding, premises=tuple(filled), severity="info" if opt_in else finding.severity)
        return None if self.is_noise(finding) else finding

    def _programs(self, finding: Finding, entry: Optional[str]) -> list:
        """The programs that may run the finding's line, the reporting program first."""
        own = self.by_entry.get(entry) if entry is not None else None
        if own is not None and _claims_about(finding, own):
            # A claim about the reporting program (it never seeds, never switches X on) holds or not
            # for that program's run alone: another program that imports the entry's module (a
            # training script reusing its classes) says nothing about what the entry's own run does.
            return [own]
        facts = self.files.get(finding.path)
        others = self.by_file.get(facts.abspath, []) if facts is not None else []
        if finding.path in self.shells:  # a launch script: the programs it launches
            others = [p for p in self.by_entry.values() if any(s.path == finding.path for s, _ in p.launches)]
        return ([own] if own is not None else []) + [p for p in others if p is not own]

    def _prove(self, name: str, finding: Finding, programs: list) -> Premise:
        # A rule that can tell a premise only from the programs running its line (labels built in
        # another module of the program) proves it itself, once every program is known.
        own = getattr(self.rules.get(finding.rule), "prove_premise", None)
        facts = self.files.get(finding.path)
        found = own(name, finding, facts, programs, self.project) if own is not None and facts is not None else None
        if found is not None:
            return found
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
        own = self._own_program(finding)
        if own is not None:  # an entry that no training program runs: what its own run lacks
            return self.training(own)
        return Premise("trains", False, f"no training program found that runs {finding.path}")

    def _own_program(self, finding: Finding) -> Optional[Program]:
        """The program the finding's file starts, if it is an entry script (built once per file)."""
        if finding.path not in self._own:
            facts = self.files.get(finding.path)
            self._own[finding.path] = None if facts is None or not is_entry_candidate(facts) else (
                self.by_entry.get(facts.path) or self.project.program(facts))
        return self._own[finding.path]

    def is_noise(self, finding: Finding) -> bool:
        """A finding written in an entry script that only evaluates or exports a trained model (loads
        weights, builds nothing that trains) and that no training program runs: certainly not about
        training, so not reported at all (linter.training_run.only_evaluates)."""
        trains = next((p for p in finding.premises if p.premise == "trains"), None)
        if trains is None or trains.proven:
            return False
        own = self._own_program(finding)
        return own is not None and not self.training(own).proven and only_evaluates(own)

    def training(self, program: Program) -> Premise:
        """The step that makes `program` train, or what it lacks."""
        key = program.entry.abspath
        if key not in self._training:
            self._training[key] = training_proof(program, self.project)
        return self._training[key]

    # -- executes ---------------------------------------------------------------------------
    def executes(self, finding: Finding, programs: list) -> tuple:
        """(premise, opt-in): whether a training run executes the finding's line. A line in a step of a
        program's flow runs unless the branches it sits under are not taken by that program's runs
        (linter.runconfig); opt-in is True when every run skips them (an unknown value is not an opt-in)."""
        unused = self._unused_layer(finding)
        if unused is not None:
            return Premise("executes", False, unused), False
        if finding.path in self.shells:
            if programs:
                return Premise("executes", True, f"{finding.path}:{finding.line} launches "
                                                 f"{programs[0].entry.path}"), False
            return self._launched_training(finding, "executes"), False
        blocked = []
        for program in programs:
            for guards in self.steps_at(program, finding):
                branch = run_config(self.project, program).branch(guards) if guards else None
                if branch is None or branch.state == TAKEN:
                    why = f"; {branch.evidence}" if branch is not None else ""
                    return Premise("executes", True, f"{finding.path}:{finding.line} runs in the program started by "
                                                     f"{program.entry.path}{why}"), False
                blocked.append(branch)
        if blocked:
            skipped = all(b.state == SKIPPED for b in blocked)
            return Premise("executes", False, f"{finding.path}:{finding.line} {blocked[0].evidence}"), skipped
        alone = self._opt_in_of_file(finding)
        if alone is not None:
            return Premise("executes", False, f"{finding.path}:{finding.line} {alone.evidence}"), True
        if programs:
            return Premise("executes", False, f"{finding.path}:{finding.line} is not reached from "
                                              f"{_entries(programs)}: the code around it is never called"), False
        return Premise("executes", False, f"no training program runs {finding.path}:{finding.line}"), False

    def _unused_layer(self, finding: Finding) -> Optional[str]:
        """A layer built into `self.<attr>` that nothing calls runs in no program (linter.layers)."""
        facts = self.files.get(finding.path)
        if facts is None or finding.node is None:
            return None
        calls = self._calls_by_node.get(facts.abspath)
        if calls is None:
            calls = self._calls_by_node[facts.abspath] = {call.node: call for call in facts.calls}
        call = calls.get(finding.node)
        return unused_attribute_layer(facts, call) if call is not None else None

    def runs_line(self, program: Program, finding: Finding) -> bool:
        return bool(self.steps_at(program, finding))

    def steps_at(self, program: Program, finding: Finding) -> list:
        """The guards of each step of `program` on the finding's line (one tuple per step)."""
        facts = self.files.get(finding.path)
        if facts is None:
            return []
        starts, spans = self._line_index(program, facts)
        at = bisect.bisect_right(starts, finding.line)
        # Steps are few per line: look back over those starting at or before the line.
        return [guards for start, end, guards in spans[max(0, at - 64):at] if start <= finding.line <= end]

    def _opt_in_of_file(self, finding: Finding):
        """For a line no program runs: the branch its own file's configuration skips, if any."""
        facts = self.files.get(finding.path)
        if facts is None or finding.node is None:
            return None
        if facts.abspath not in self._alone:
            self._alone[facts.abspath] = (_guards_at(facts), file_config(facts))
        guards_at, config = self._alone[facts.abspath]
        guards = guards_at.get(finding.node)
        if not guards:
            return None
        branch = config.branch(tuple((guard, facts) for guard in guards))
        return branch if branch is not None and branch.state == SKIPPED else None

    def _line_index(self, program: Program, facts) -> tuple:
        key = (program.entry.abspath, facts.abspath)
        index = self._lines.get(key)
        if index is None:
            guards = self._guards(program)
            spans = sorted(((facts.spans[s.fact.node].line, facts.spans[s.fact.node].end_line, guards[i])
                            for i, s in enumerate(program.flow)
                            if s.file is facts and s.fact.node < len(facts.spans)), key=lambda span: span[:2])
            index = self._lines[key] = ([start for start, _, _ in spans], spans)
        return index

    def _guards(self, program: Program) -> list:
        key = program.entry.abspath
        if key not in self._flow_guards:
            self._flow_guards[key] = flow_guards(program)
        return self._flow_guards[key]

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


_PROVERS = {"trains": Prover.trains, "framework": Prover.framework}


def _claims_about(finding: Finding, program: Program) -> bool:
    """A claim about the whole program (rules.base.report_program): shown at its entry, resting on the
    program's run rather than on one line of it executing."""
    return finding.path == program.entry.path and not any(p.premise == "executes" for p in finding.premises)


def _guards_at(facts) -> dict:
    """node -> the flag guards of the fact written there (its own function's `if`s)."""
    return {fact.node: fact.flag_guards for group in (facts.calls, facts.assignments, facts.env_writes)
            for fact in group if fact.flag_guards}


def _entries(programs: list, shown: int = 2) -> str:
    names = [p.entry.path for p in programs[:shown]]
    more = f" and {len(programs) - shown} more" if len(programs) > shown else ""
    return ", ".join(names) + more
