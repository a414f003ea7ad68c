"""One side of a model-code diff: the Python files at a path, each parsed once, with the engine's
facts (calls with qualified names and literal arguments, for row sources that look at calls) and
the operations the fused-op table recognises in it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator, Optional

import libcst as cst

from acclint.linter.discovery import PYTHON_SUFFIXES
from acclint.linter.facts import Call, FileFacts
from acclint.linter.positions import node_locations
from acclint.linter.source import read_source
from acclint.linter.walker import FileWalker
from acclint.setups.model.forms import Form, find_forms
from acclint.setups.record import Where


@dataclass(frozen=True)
class Occurrence:
    """Where one side computes an operation, and in which form."""

    form: Form
    where: Where
    scope: str  # the enclosing class, else function: pairs occurrences across sides
    upcast: Optional[bool] = None  # composed forms of model_values.toml `[casts]`: input upcast first
    paired: str = ""  # the side's own class name, when `scope` is the other side's (paired by position)


@dataclass
class ModelFile:
    facts: FileFacts
    occurrences: list[Occurrence]

    def where(self, call: Call) -> Where:
        spans = self.facts.spans
        return Where(self.facts.path, spans[call.node].line if 0 <= call.node < len(spans) else 1)


@dataclass
class ModelSide:
    path: str
    files: list[ModelFile] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Own class name -> the other side's, for classes paired by position (setups.model.scopes).
    renamed: dict = field(default_factory=dict)

    @property
    def occurrences(self) -> list[Occurrence]:
        return [self.renamed_occurrence(o) for file in self.files for o in file.occurrences]

    def renamed_occurrence(self, occurrence):
        """Any record with `scope` and `paired` fields, under the other side's name for its class."""
        other = self.renamed.get(occurrence.scope)
        return replace(occurrence, scope=other, paired=occurrence.scope) if other else occurrence

    def calls(self) -> Iterator[tuple[ModelFile, Call]]:
        for file in self.files:
            for call in file.facts.calls:
                yield file, call

    @staticmethod
    def scope_of(file: ModelFile, call: Call) -> str:
        """The class a call is written in (its innermost name), else its outermost function, as
        the operations' `scope` (setups.model.forms)."""
        function = file.facts.functions.get(call.scope)
        if function is not None and function.owner:
            return function.owner.rsplit(".", 1)[-1]
        return call.scope.split(".", 1)[0]


def read_model(path: str) -> ModelSide:
    """The Python files at `path` (a file, or a folder's files). What cannot be read becomes a
    problem of the side; the setup extraction already refuses a path that is not there."""
    side = ModelSide(path)
    target = Path(path)
    if target.is_dir():
        from acclint.setups.extract import folder_files

        found = [(f, os.path.join(path, os.path.relpath(f, target))) for f in folder_files(target)
                 if f.suffix.lower() in PYTHON_SUFFIXES]
    elif target.suffix.lower() in PYTHON_SUFFIXES:
        found = [(target, path)]
    else:
        found = []
    for file, display in found:
        read = _read_file(file, display, side.problems)
        if read is not None:
            side.files.append(read)
    return side


def _read_file(path: Path, display: str, problems: list) -> Optional[ModelFile]:
    source = read_source(path, python=True)
    if source.text is None:
        problems.append(f"{display}: {source.error or source.skip}")
        return None
    try:
        module = cst.parse_module(source.text)
    except cst.ParserSyntaxError as exc:
        problems.append(f"{display}: syntax error at line {exc.raw_line}: {exc.message}")
        return None
    except RecursionError:
        problems.append(f"{display}: too deeply nested to analyse")
        return None
    facts = FileFacts(path=display, abspath=os.path.abspath(path), line_count=source.text.count("\n") + 1)
    walker = FileWalker(module, facts)
    try:
        walker.run()
        anchors = find_forms(module, facts.bindings)
    except RecursionError:
        problems.append(f"{display}: too deeply nested to analyse")
        return None
    # One code-generation pass gives the lines of the engine's nodes and of the anchors together.
    spans = node_locations(module, walker.nodes + [anchor.node for anchor in anchors])
    facts.spans = spans[: len(walker.nodes)]
    lines = spans[len(walker.nodes):]
    occurrences = [Occurrence(anchor.form, Where(display, span.line), anchor.scope, anchor.upcast)
                   for anchor, span in zip(anchors, lines)]
    return ModelFile(facts, occurrences)
