"""Applies the fixes findings carry (`linter.edits`): libcst transformations for Python, so
formatting and comments stay; line inserts at the shell reader's spans for launch scripts.

One pass applies every change that does not collide with an earlier one on the same node; the
caller re-scans and may run another pass for what is left. A result that no longer parses is
never written.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from acclint.linter.atomic import write_atomic
from acclint.linter.discovery import kind_of
from acclint.linter.edits import ChainMethod, Change, InsertLine, InsertStatement, ReplaceValue, SetArgument


class FixError(ValueError):
    """A fix that cannot be applied to the file as it is now."""


@dataclass
class FixOutcome:
    files: dict = field(default_factory=dict)  # Path -> (old text, new text), changed files only
    fixed: list = field(default_factory=list)  # findings whose every change was applied
    errors: list = field(default_factory=list)  # (path, message)

    def diff(self, cwd: Path) -> str:
        return "".join(unified_diff(path, old, new, cwd) for path, (old, new) in sorted(self.files.items()))


def fixable(findings: Iterable, *, unsafe: bool) -> list:
    return [f for f in findings if f.autofix is not None and (unsafe or f.autofix.safe)]


def plan_fixes(findings: Iterable, *, unsafe: bool) -> FixOutcome:
    """The new text of every file the applicable fixes touch; nothing is written."""
    chosen = fixable(findings, unsafe=unsafe)
    by_path: dict = {}
    for finding in chosen:
        for change in finding.autofix.changes:
            by_path.setdefault(Path(change.path), []).append(change)
    outcome = FixOutcome()
    applied: set = set()
    for path, changes in sorted(by_path.items()):
        try:
            old = path.read_bytes().decode("utf-8")  # as is: keep its line endings
            new, done = apply_changes(path, old, _unique(changes))
        except (OSError, UnicodeDecodeError, FixError, cst.ParserSyntaxError) as exc:
            outcome.errors.append((path, f"cannot fix: {exc}"))
            continue
        applied.update(done)
        if new != old:
            outcome.files[path] = (old, new)
    outcome.fixed = [f for f in chosen if all(c in applied for c in f.autofix.changes)]
    return outcome


def write_fixes(outcome: FixOutcome) -> None:
    for path, (old, new) in outcome.files.items():
        write_atomic(path, new.encode("utf-8"), keep_mode=True)


def unified_diff(path: Path, old: str, new: str, cwd: Path) -> str:
    try:
        name = path.resolve().relative_to(cwd.resolve()).as_posix()
    except ValueError:
        name = path.as_posix()
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=f"a/{name}", tofile=f"b/{name}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _unique(changes: list) -> list:
    seen, out = set(), []
    for change in changes:
        if change not in seen:
            seen.add(change)
            out.append(change)
    return out


def apply_changes(path: Path, text: str, changes: list) -> tuple:
    """(new text, set of the changes applied). Raises FixError when the result would not parse."""
    if kind_of(path) == "shell":
        return _apply_shell(text, changes)
    return _apply_python(text, changes)


# --- shell ---------------------------------------------------------------------------------


def _apply_shell(text: str, changes: list) -> tuple:
    lines = text.splitlines(keepends=True)
    applied = set()
    inserts: dict = {}
    for change in changes:
        if not isinstance(change, InsertLine) or not 1 <= change.at.line <= len(lines):
            continue
        index = _logical_line_start(lines, change.at.line - 1)
        # Idempotent: the same line already written right above the launch line is not added again.
        if index > 0 and lines[index - 1].strip() == change.text.strip():
            applied.add(change)
            continue
        if change.text not in inserts.setdefault(index, []):
            inserts[index].append(change.text)
        applied.add(change)
    newline = "\r\n" if "\r\n" in text else "\n"
    for index in sorted(inserts, reverse=True):
        target = lines[index]
        indent = target[: len(target) - len(target.lstrip(" \t"))]
        lines[index:index] = [f"{indent}{line}{newline}" for line in inserts[index]]
    return "".join(lines), applied


def _logical_line_start(lines: list, index: int) -> int:
    """The first physical line of the command holding line `index`: a line inserted between
    `A=1 \\` and `torchrun ...` would cut the command in two."""
    while index > 0 and lines[index - 1].rstrip("\r\n").endswith("\\"):
        index -= 1
    return index


# --- Python --------------------------------------------------------------------------------


def _key(position) -> tuple:
    # The walker's Locations count columns from 1; libcst's CodeRange from 0.
    return (position.start.line, position.start.column + 1, position.end.line, position.end.column + 1)


def _at_key(change: Change) -> tuple:
    at = change.at
    return (at.line, at.column, at.end_line, at.end_column)


def _no_space() -> cst.AssignEqual:
    return cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


class _Transformer(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, changes: list):
        super().__init__()
        self.by_key: dict = {}
        self.before: list = []  # InsertStatement placed before the statement holding their node
        for change in changes:
            if isinstance(change, InsertStatement) and not change.into_body:
                self.before.append(change)
            else:
                self.by_key.setdefault(_at_key(change), []).append(change)
        self.applied: set = set()
        self.touched: set = set()  # nodes already changed: a second change there would collide
        self.imports: list = []

    def _position(self, node) -> Optional[tuple]:
        position = self.get_metadata(PositionProvider, node, None)
        return _key(position) if position is not None else None

    def on_leave(self, original, updated):
        updated = super().on_leave(original, updated)
        key = self._position(original)
        if key in self.by_key:
            for change in self.by_key[key]:
                result = self._apply_here(change, original, updated)
                if result is not None:
                    updated = result
                    self._done(change)
        if isinstance(updated, cst.If):
            test_key = self._position(original.test)
            first = [c for c in self.by_key.get(test_key, ()) if isinstance(c, InsertStatement) and c not in self.applied]
            # In the findings' order; a block written on one line (`if ...: main()`) is left alone.
            if first and isinstance(updated.body, cst.IndentedBlock):
                updated = updated.with_changes(body=_prepend(updated.body, [c.code for c in first]))
                for change in first:
                    self._done(change)
        if isinstance(updated, (cst.Module, cst.IndentedBlock)):
            updated = self._insert_before(original, updated)
        return updated

    def _done(self, change: Change) -> None:
        self.applied.add(change)
        self.imports.extend(change.imports)

    def _apply_here(self, change: Change, original, updated):
        ident = (id(original), type(change).__name__)
        if change in self.applied or ident in self.touched:
            return None
        result = None
        if isinstance(change, ReplaceValue):
            value = cst.parse_expression(change.code)
            if isinstance(updated, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                result = updated.with_changes(value=value)
            elif isinstance(updated, cst.BaseExpression):
                result = value
        elif isinstance(change, SetArgument) and isinstance(updated, cst.Call):
            result = updated.with_changes(args=_set_argument(updated.args, change))
        elif isinstance(change, ChainMethod) and isinstance(updated, cst.Call) and \
                isinstance(updated.func, cst.Attribute):
            inserted = cst.Call(func=cst.Attribute(value=updated.func.value, attr=cst.Name(change.method)))
            result = updated.with_changes(func=updated.func.with_changes(value=inserted))
        if result is not None:
            self.touched.add(ident)
        return result

    def _insert_before(self, original, updated):
        pending = [c for c in self.before if c not in self.applied]
        if not pending:
            return updated
        body = list(updated.body)
        for index in range(len(original.body) - 1, -1, -1):
            key = self._position(original.body[index])
            if key is None:
                continue
            for change in pending:
                if change not in self.applied and _contains(key, _at_key(change)):
                    body.insert(index, _statement(change.code))
                    self._done(change)
        return updated.with_changes(body=body)


def _contains(outer: tuple, inner: tuple) -> bool:
    return (outer[0], outer[1]) <= (inner[0], inner[1]) and (inner[2], inner[3]) <= (outer[2], outer[3])


def _statement(code: str) -> cst.BaseStatement:
    return cst.parse_statement(code.rstrip("\n") + "\n")


def _prepend(body: cst.IndentedBlock, codes: list):
    return body.with_changes(body=[*(_statement(code) for code in codes), *body.body])


def _set_argument(args, change: SetArgument) -> list:
    value = cst.parse_expression(change.code)
    args = list(args)
    for index, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == change.keyword:
            args[index] = arg.with_changes(value=value)
            return args
    positional = [i for i, a in enumerate(args) if a.keyword is None and not a.star]
    if change.position is not None and change.position < len(positional):
        index = positional[change.position]
        args[index] = args[index].with_changes(value=value)
        return args
    if args and args[-1].star == "**":
        raise FixError(f"cannot add {change.keyword}= after **kwargs")
    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    args.append(cst.Arg(value=value, keyword=cst.Name(change.keyword), equal=_no_space()))
    return args


def _apply_python(text: str, changes: list) -> tuple:
    wrapper = MetadataWrapper(cst.parse_module(text))
    transformer = _Transformer(changes)
    module = wrapper.visit(transformer)
    module = _add_imports(module, transformer.imports)
    new = module.code
    try:
        cst.parse_module(new)  # the fixed file must still parse
    except cst.ParserSyntaxError as exc:
        raise FixError(f"the fixed file would not parse ({exc.message})") from None
    return new, transformer.applied


def _imported(module: cst.Module) -> set:
    names = set()
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        if alias.asname is None:
                            names.add(cst.Module([]).code_for_node(alias.name).split(".")[0])
    return names


def _add_imports(module: cst.Module, wanted: list) -> cst.Module:
    missing = [name for name in dict.fromkeys(wanted) if name not in _imported(module)]
    if not missing:
        return module
    body = list(module.body)
    index = 0
    # After the docstring and `from __future__` imports, which must stay first.
    while index < len(body) and _stays_first(body[index], index):
        index += 1
    body[index:index] = [_statement(f"import {name}") for name in missing]
    return module.with_changes(body=body)


def _stays_first(statement, index: int) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if index == 0 and isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
        return True
    return isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and small.module.value == "__future__"


@dataclass
class FixRun:
    result: object  # the ScanResult after the last pass: what remains
    fixed: int = 0
    errors: list = field(default_factory=list)  # (path, message)


# A fix may make room for another (two fixes on one node): a few passes, like ruff, then stop.
_MAX_PASSES = 4


def fix_and_rescan(scan, *, unsafe: bool) -> FixRun:
    """Scan, write the fixes, re-scan, until nothing more applies. `scan()` returns a ScanResult."""
    run = FixRun(scan())
    for _ in range(_MAX_PASSES):
        outcome = plan_fixes(run.result.findings, unsafe=unsafe)
        run.errors.extend(outcome.errors)
        if not outcome.files:
            break
        write_fixes(outcome)
        run.fixed += len(outcome.fixed)
        run.result = scan()
    return run
