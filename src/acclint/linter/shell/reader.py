"""A reader for training launch shell scripts (Megatron / MindSpeed / torchrun / msrun style).

One tree-sitter-bash parse per file; statements are visited in order with no control-flow
evaluation (assignments and launches inside if/for/while/case/functions count as happening).
The result says which variables and exports the script sets, which files it sources, and
which training launches it runs with which arguments, each with the place it was written.
"""

from __future__ import annotations

import os
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Optional, Union

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from acclint.linter.shell.launch import is_relevant_name, parse_launch
from acclint.linter.shell.model import (
    Argument,
    EnvAssignment,
    LaunchCommand,
    ShellReadError,
    ShellScript,
    Span,
)
from acclint.linter.shell.words import Expander, Fragment, Piece, SourceText, Value, Variable, to_piece

MAX_SOURCE_DEPTH = 4
# How far above the main script a relative `source` path is looked for: scripts are often
# run from the repository root (`bash examples/llama/pretrain.sh` sourcing `examples/env.sh`).
SOURCE_SEARCH_PARENTS = 3
# Nodes whose children are statements; everything else (words, $(...) bodies) is not walked.
CONTAINERS = frozenset(
    {
        "program", "ERROR", "list", "pipeline", "redirected_statement", "negated_command",
        "if_statement", "elif_clause", "else_clause", "for_statement", "c_style_for_statement",
        "while_statement", "do_group", "case_statement", "case_item", "subshell",
        "compound_statement", "function_definition",
        "heredoc_redirect",  # `cat <<EOF | python x.py` puts the pipeline inside the redirect
    }
)  # fmt: skip
SOURCE_COMMANDS = frozenset({"source", "."})


@lru_cache(maxsize=1)
def _language() -> Language:
    return Language(tree_sitter_bash.language())


def read_shell_script(path: Union[str, Path], text: Union[str, bytes, None] = None) -> ShellScript:
    """Read a launch script. `text` overrides the file's content (the path still names it and
    anchors relative `source`s). Raises ShellReadError for binary, non-UTF-8 or unreadable input."""
    path = str(path)
    if text is None:
        text = _read_bytes(path)
    reader = _Reader(ShellScript(path))
    reader.read(path, decode(text, path))
    return reader.finish()


def _read_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise ShellReadError(f"{path}: cannot read: {error.strerror or error}") from error


def decode(text: Union[str, bytes], path: str) -> str:
    """UTF-8 text with CRLF turned into LF (lines and columns stay the same)."""
    if isinstance(text, bytes):
        if b"\0" in text:
            raise ShellReadError(f"{path}: binary file, not a shell script")
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise ShellReadError(f"{path}: not UTF-8 text (byte {error.start})") from error
    if "\0" in text:
        raise ShellReadError(f"{path}: binary file, not a shell script")
    return text.lstrip("\ufeff").replace("\r\n", "\n")


class _Reader:
    """Walks the statements of a script and the files it sources, keeping the variables."""

    def __init__(self, script: ShellScript):
        self.script = script
        self.main_dir = os.path.dirname(script.path)
        self.variables: dict[str, Variable] = {}
        self.assignments: dict[str, EnvAssignment] = {}
        self.exported_names: set[str] = set()
        self.exported: dict[str, EnvAssignment] = {}  # the exported subset, for launches
        self._exported_snapshot: Optional[tuple[EnvAssignment, ...]] = ()  # None: changed since
        self.reading: list[str] = []  # real paths of the files being read, for loops

    def finish(self) -> ShellScript:
        self.script.variables = dict(self.assignments)
        return self.script

    # -- files

    def read(self, path: str, text: str) -> None:
        source = SourceText(path, text)
        tree = Parser(_language()).parse(source.data)
        self.reading.append(os.path.realpath(path))
        try:
            _FileWalk(self, source).walk(tree.root_node)
        finally:
            self.reading.pop()

    def source(self, written: str, path: Optional[str], from_path: str) -> None:
        """Follow `source FILE` (`written` as expanded; `path` the relative path to look for).

        Loops, deep nesting, system and unreadable files are recorded as unresolved, not read.
        """
        target = self._resolve(path, from_path) if path is not None else None
        too_deep = len(self.reading) > MAX_SOURCE_DEPTH
        if target is None or too_deep or os.path.realpath(target) in self.reading:
            self.script.unresolved_sources.append(target or written)
            return
        try:
            text = decode(Path(target).read_bytes(), target)
        except (OSError, ShellReadError):
            self.script.unresolved_sources.append(target)
            return
        self.script.sourced.append(target)
        self.read(target, text)

    def _resolve(self, path: str, from_path: str) -> Optional[str]:
        """The file a relative `source` path names: next to the sourcing file or the main script,
        or under a folder above the main script (scripts are often run from the repo root).
        Absolute paths are system files (the Ascend toolkit's set_env.sh): never followed."""
        if path.startswith(("/", "~")) or not path:
            return None
        for folder in self._source_folders(from_path):
            candidate = os.path.normpath(os.path.join(folder, path))
            self.script.source_lookups.append(candidate)
            if os.path.isfile(candidate):
                return candidate
        return None

    def _source_folders(self, from_path: str) -> list[str]:
        folders = [os.path.dirname(from_path), self.main_dir]
        folder = self.main_dir
        for _ in range(SOURCE_SEARCH_PARENTS):
            folder = os.path.dirname(os.path.abspath(folder))
            folders.append(folder)
        return list(dict.fromkeys(folders))

    # -- variables

    def lookup(self, name: str) -> Optional[Variable]:
        return self.variables.get(name)

    def assign(self, assignment: EnvAssignment, variable: Variable) -> None:
        self.variables[assignment.name] = variable
        self.record(assignment)

    def record(self, assignment: EnvAssignment) -> None:
        self.script.env.append(assignment)
        self.assignments.pop(assignment.name, None)  # keep `variables` in last-assignment order
        self.assignments[assignment.name] = assignment
        if self.exported.pop(assignment.name, None) is not None or assignment.exported:
            self._exported_snapshot = None
        if assignment.exported:
            self.exported[assignment.name] = assignment

    def exported_env(self) -> tuple[EnvAssignment, ...]:
        """The exports in effect now; shared between launches while it does not change."""
        if self._exported_snapshot is None:
            self._exported_snapshot = tuple(self.exported.values())
        return self._exported_snapshot

    def export(self, name: str) -> None:
        """`export X`: an earlier `X=1` now reaches child processes, and so will later ones."""
        self.exported_names.add(name)
        current = self.assignments.get(name)
        if current is not None and not current.exported:
            self.record(replace(current, exported=True))

    def unexport(self, name: str) -> None:
        self.exported_names.discard(name)
        current = self.assignments.get(name)
        if current is not None and current.exported:
            self.record(replace(current, exported=False))

    def unset(self, name: str) -> None:
        self.variables.pop(name, None)
        self.assignments.pop(name, None)
        if self.exported.pop(name, None) is not None:
            self._exported_snapshot = None
        self.exported_names.discard(name)


class _FileWalk:
    """The statements of one file, in order."""

    def __init__(self, reader: _Reader, source: SourceText):
        self.reader = reader
        self.source = source
        self.words = Expander(source, reader.lookup)

    def walk(self, root: Node) -> None:
        stack = [root]  # iterative: long `a && b && ...` chains nest deeply
        while stack:
            node = stack.pop()
            handler = self.STATEMENTS.get(node.type)
            if handler is not None:
                try:
                    handler(self, node)
                except RecursionError:  # words nested thousands deep: skip the statement only
                    continue
            elif node.type in CONTAINERS:
                stack.extend(reversed(node.named_children))

    # -- assignments

    def assignment(self, node: Node, exported: bool = False) -> None:
        built = self._evaluate(node, exported)
        if built is None:
            return
        assignment, variable = built
        if exported:
            self.reader.exported_names.add(assignment.name)
        self.reader.assign(assignment, variable)

    def _evaluate(self, node: Node, exported: bool) -> Optional[tuple[EnvAssignment, Variable]]:
        """The record and the new value of a `NAME=value` / `NAME+=value` node."""
        name_node = node.child_by_field_name("name")
        if name_node is None or name_node.type != "variable_name":
            return None  # `A[2]=x` element assignments are rare in launch scripts; not tracked
        name = self.source.text(name_node)
        value_node = node.child_by_field_name("value")
        origin = self.source.span(value_node if value_node is not None else node)
        appending = any(child.type == "+=" for child in node.children)
        variable = self._new_variable(name, value_node, origin, appending, node)
        shown, known = _shown(variable)
        assignment = EnvAssignment(
            name=name,
            value=shown if known else None,
            raw=self.source.text(value_node) if value_node is not None else "",
            exported=exported or name in self.reader.exported_names,
            span=self.source.span(node),
        )
        return assignment, variable

    def _new_variable(
        self, name: str, value_node: Optional[Node], origin: Span, appending: bool, node: Node
    ) -> Variable:
        previous = self.reader.lookup(name) if appending else None
        if value_node is not None and value_node.type == "array":
            elements = tuple(
                Value((to_piece(field),))
                for child in value_node.named_children
                for field in self.words.fields(child, origin)
            )
            if previous is not None:
                elements = previous.all_elements() + elements
            return Variable(elements[0] if elements else Value(), elements)
        value = self.words.value(value_node, origin)
        if appending:
            # `PATH+=:x` on a variable the script never set appends to an unknown value.
            before = previous.scalar.items if previous is not None else (self._outside(name, node),)
            value = Value(before + value.items)
        return Variable(value)

    def _outside(self, name: str, node: Node) -> Piece:
        start = self.source.pos(node.start_point)
        return Piece(f"${name}", start, start, self.source.span(node), verbatim=False, known=False)

    def assignments(self, node: Node) -> None:
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assignment(child)

    def declaration(self, node: Node) -> None:
        """export / declare / typeset / local / readonly."""
        keyword = node.children[0].type if node.children else ""
        options = [self.source.text(child) for child in node.named_children if child.type == "word"]
        set_letters = "".join(option[1:] for option in options if option.startswith("-"))
        cleared_letters = "".join(option[1:] for option in options if option.startswith("+"))
        if keyword == "export":
            exports, unexports = "n" not in set_letters, "n" in set_letters
        else:
            exports, unexports = "x" in set_letters, "x" in cleared_letters
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assignment(child, exported=exports)
                name_node = child.child_by_field_name("name")
                if unexports and name_node is not None:
                    self.reader.unexport(self.source.text(name_node))
            elif child.type == "variable_name" and unexports:
                self.reader.unexport(self.source.text(child))
            elif child.type == "variable_name" and exports:
                self.reader.export(self.source.text(child))

    def unset(self, node: Node) -> None:
        for child in node.named_children:
            name = self.source.text(child)
            if child.type in ("variable_name", "word") and not name.startswith("-"):
                self.reader.unset(name)

    # -- commands

    def command(self, node: Node) -> None:
        prefix, name_node, arguments = self._command_parts(node)
        if name_node is None:
            for assignment in prefix:  # only assignments left: they set shell variables
                self.assignment(assignment)
            return
        origin = self.source.span(node)
        name_words = self.words.arguments([name_node], origin)
        if not name_words:
            return
        name = name_words[0].text
        if name in SOURCE_COMMANDS:
            self._source(arguments, origin)
        elif is_relevant_name(name):
            words = name_words + self.words.arguments(arguments, origin)
            self._launch(node, prefix[0] if prefix else name_node, prefix, words)

    def _command_parts(self, node: Node) -> tuple[list[Node], Optional[Node], list[Node]]:
        """(prefix assignments, name, arguments), with the tree-sitter-bash quirk undone where
        `A=1 B=2<newline>cmd` comes out as one command: assignments before a line break are
        standalone statements."""
        prefix: list[Node] = []
        name_node: Optional[Node] = None
        arguments: list[Node] = []
        for index, child in enumerate(node.children):
            field = node.field_name_for_child(index)
            if field == "name":
                name_node = child
            elif field == "argument":
                arguments.append(child)
            elif child.type == "variable_assignment" and name_node is None:
                prefix.append(child)
        standalone = self._standalone_assignments(prefix, name_node)
        for assignment in standalone:
            self.assignment(assignment)
        return prefix[len(standalone) :], name_node, arguments

    def _standalone_assignments(self, prefix: list[Node], name_node: Optional[Node]) -> list[Node]:
        if name_node is None:
            return []
        following = prefix[1:] + [name_node]
        last_break = -1
        for index, (before, after) in enumerate(zip(prefix, following)):
            gap = self.source.slice(before.end_byte, after.start_byte).replace("\\\n", "")
            if "\n" in gap:
                last_break = index
        return prefix[: last_break + 1]

    def _source(self, arguments: list[Node], origin: Span) -> None:
        fields = self.words.fields(arguments[0], origin) if arguments else []
        if not fields:
            return
        fragments = fields[0]
        written = "".join(fragment.text for fragment in fragments)
        self.reader.source(written, _source_path(fragments), self.source.path)

    def _launch(self, node: Node, first: Node, prefix: list[Node], words: list[Argument]) -> None:
        """Record the launch in `node`, which begins at `first` (its first prefix, or its name)."""
        parts = parse_launch(words)
        if parts is None:
            return
        # A prefix assignment is in the command's environment, and only there.
        env = tuple(built[0] for built in (self._evaluate(child, exported=True) for child in prefix) if built)
        env += tuple(_wrapper_assignment(word) for word in parts.wrapper_env)
        span = self.source.span_of(self.source.pos(first.start_point), self.source.pos(node.end_point))
        self.reader.script.launches.append(
            LaunchCommand(
                launcher=parts.launcher,
                script=parts.script,
                launcher_args=parts.launcher_args,
                script_args=parts.script_args,
                env=env,
                span=span,
                inherited_env=self.reader.exported_env(),
                repeated=_in_loop(node),
            )
        )

    STATEMENTS = {
        "variable_assignment": assignment,
        "variable_assignments": assignments,
        "declaration_command": declaration,
        "unset_command": unset,
        "command": command,
    }


LOOPS = frozenset({"for_statement", "c_style_for_statement", "while_statement"})  # `until` parses as a while


def _in_loop(node: Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type in LOOPS:
            return True
        parent = parent.parent
    return False


def _source_path(fragments: list[Fragment]) -> Optional[str]:
    """The path to look for: the text itself when known; for `"$SCRIPT_DIR/env.sh"` with an
    unknown directory, the known part after it (`env.sh`), taken relative to the script."""
    if all(fragment.known for fragment in fragments):
        return "".join(fragment.text for fragment in fragments)
    last_unknown = max(i for i, fragment in enumerate(fragments) if not fragment.known)
    suffix = "".join(fragment.text for fragment in fragments[last_unknown + 1 :])
    if last_unknown == 0 and suffix.startswith("/"):
        return suffix.lstrip("/")
    return None


def _shown(variable: Variable) -> tuple[str, bool]:
    """(text, known) of a variable as one value; an array's elements are joined by spaces."""
    if variable.elements is None:
        return variable.scalar.text, variable.scalar.known
    return " ".join(e.text for e in variable.elements), all(e.known for e in variable.elements)


def _wrapper_assignment(word: Argument) -> EnvAssignment:
    name, _, value = word.text.partition("=")
    return EnvAssignment(name, value if word.known else None, word.text.partition("=")[2], True, word.span)
