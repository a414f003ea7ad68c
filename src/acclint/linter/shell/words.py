"""Shell word expansion with source positions: parameter expansion, quoting and word splitting.

A variable's value is kept as a small tree of `Piece`s (text as written somewhere, with its
position) and `Expanded` nodes (`$X` written at a site, standing for X's value). Keeping the tree
rather than copying text lets a word that came out of `$GPT_ARGS` point back inside the
GPT_ARGS assignment, and lets `ARGS="$ARGS --x"` refer to the earlier value without copying it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from typing import Callable, Iterator, NamedTuple, Optional, Sequence, Union

from tree_sitter import Node

from acclint.linter.shell.model import Argument, Span

Pos = tuple[int, int]  # (line, column), 1-based, columns in characters

IFS_WORD = re.compile(r"[^ \t\n]+")
# Backslash escapes: outside quotes any character (a newline is a line continuation);
# inside double quotes only these five are special, other backslashes are kept.
UNQUOTED_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
DQ_ESCAPE = re.compile(r"\\([$`\"\\\n])")
ANSI_C_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "e": "\x1b", "0": "\0"}

DEFAULT_OPERATORS = (":-", "-", ":=", "=")
ALTERNATE_OPERATORS = (":+", "+")
ERROR_OPERATORS = (":?", "?")
EXPANSION_NODES = ("simple_expansion", "expansion", "command_substitution", "arithmetic_expansion")


def advance(pos: Pos, text: str) -> Pos:
    """The position just after `text` written at `pos`."""
    newlines = text.count("\n")
    if not newlines:
        return (pos[0], pos[1] + len(text))
    return (pos[0] + newlines, len(text) - text.rfind("\n"))


class SourceText:
    """One file's text and the conversion from tree-sitter byte points to character positions."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.data = text.encode("utf-8")
        self._ascii = text.isascii()
        self._lines: Optional[list[bytes]] = None

    def pos(self, point) -> Pos:
        row, column = point
        if self._ascii:
            return (row + 1, column + 1)
        if self._lines is None:
            self._lines = self.data.split(b"\n")
        line = self._lines[row] if row < len(self._lines) else b""
        return (row + 1, len(line[:column].decode("utf-8", "replace")) + 1)

    def span(self, node: Node) -> Span:
        return self.span_of(self.pos(node.start_point), self.pos(node.end_point))

    def span_of(self, start: Pos, end: Pos) -> Span:
        return Span(self.path, start[0], start[1], end[0], end[1])

    def text(self, node: Node) -> str:
        return self.slice(node.start_byte, node.end_byte)

    def slice(self, start_byte: int, end_byte: int) -> str:
        return self.data[start_byte:end_byte].decode("utf-8", "replace")


# ---------------------------------------------------------------- values


@dataclass(frozen=True)
class Piece:
    """Text written at one place. `verbatim`: equal to the source, so sub-positions can be walked."""

    text: str
    start: Pos
    end: Pos
    origin: Span  # the text node (assignment value, array, command) it was written in
    verbatim: bool = True
    known: bool = True

    @property
    def span(self) -> Span:
        return Span(self.origin.path, self.start[0], self.start[1], self.end[0], self.end[1])


class Value:
    """A variable's value: Pieces and Expanded nodes in order."""

    __slots__ = ("items", "text", "known")

    def __init__(self, items: Sequence[Union[Piece, "Expanded"]] = ()):
        self.items = tuple(items)
        self.text = "".join(item.text for item in self.items)
        self.known = all(item.known for item in self.items)


@dataclass(frozen=True)
class Expanded:
    """`$X` written at `site` (inside `origin`), standing for X's value."""

    site: Span
    origin: Span
    value: Value

    @property
    def text(self) -> str:
        return self.value.text

    @property
    def known(self) -> bool:
        return self.value.known


Item = Union[Piece, Expanded]


@dataclass(frozen=True)
class Variable:
    scalar: Value
    elements: Optional[tuple[Value, ...]] = None  # set for arrays

    def all_elements(self) -> tuple[Value, ...]:
        return self.elements if self.elements is not None else (self.scalar,)


Lookup = Callable[[str], Optional[Variable]]


# ---------------------------------------------------------------- fragments and fields


class _Link(NamedTuple):  # NamedTuples: these are made per word, and cheap to make
    """One `$X` site a fragment's text went through, innermost first via `parent`."""

    origin: Span
    span: Span
    parent: Optional["_Link"]
    depth: int


class Fragment(NamedTuple):
    """A run of a field's text, from one Piece, with the chain of sites it was expanded through."""

    text: str
    start: Pos
    end: Pos
    origin: Span
    parent: Optional[_Link]
    verbatim: bool
    known: bool

    @property
    def span(self) -> Span:
        return Span(self.origin.path, self.start[0], self.start[1], self.end[0], self.end[1])


def flatten(item: Item) -> Iterator[Fragment]:
    # Iterative: `A="$A x"` repeated builds deep trees.
    stack: list[tuple[Item, Optional[_Link]]] = [(item, None)]
    while stack:
        current, parent = stack.pop()
        if isinstance(current, Piece):
            yield Fragment(
                current.text, current.start, current.end, current.origin, parent, current.verbatim, current.known
            )
            continue
        link = _Link(current.origin, current.site, parent, parent.depth + 1 if parent else 1)
        stack.extend((child, link) for child in reversed(current.value.items))


class _Break:
    """Ends a field: between the elements of a quoted "${ARR[@]}"."""


BREAK = _Break()
Part = Union[tuple[Item, bool], _Break]  # (item, subject to word splitting)


def split_fields(parts: Sequence[Part]) -> list[list[Fragment]]:
    """Bash field splitting on default IFS; quoted text always makes a field, even empty."""
    fields: list[list[Fragment]] = []
    current: list[Fragment] = []
    has_field = False
    for part in parts:
        if isinstance(part, _Break):
            if has_field:
                fields.append(current)
            current, has_field = [], False
            continue
        item, split = part
        has_field = has_field or not split
        for fragment in flatten(item):
            if not (split and fragment.known):  # unknown text stays one word: we cannot split it
                current.append(fragment)
                has_field = True
                continue
            for sub in _split_fragment(fragment):
                if sub is None:
                    if has_field:
                        fields.append(current)
                    current, has_field = [], False
                else:
                    current.append(sub)
                    has_field = True
    if has_field:
        fields.append(current)
    return fields


def _split_fragment(fragment: Fragment) -> Iterator[Optional[Fragment]]:
    """Words of a fragment's text, with None for each run of IFS whitespace."""
    text = fragment.text
    cursor, pos = 0, fragment.start
    for match in IFS_WORD.finditer(text):
        if match.start() > cursor:
            yield None
        if fragment.verbatim:
            start = advance(pos, text[cursor : match.start()])
            pos = advance(start, match.group())
            cursor = match.end()
            yield Fragment(match.group(), start, pos, fragment.origin, fragment.parent, True, True)
        else:
            cursor = match.end()
            yield Fragment(match.group(), fragment.start, fragment.end, fragment.origin, fragment.parent, False, True)
    if cursor < len(text):
        yield None


def field_location(field: Sequence[Fragment]) -> tuple[Span, Span]:
    """(span, origin) of a field: where its text was written, as deep as it can be said.

    One fragment: where that text was written. Several: below the deepest `$X` site they all
    went through, if the next step down was written in one text node, the span covering them
    there; otherwise that site.
    """
    if len(field) == 1:
        return field[0].span, field[0].origin
    common = _common_site([fragment.parent for fragment in field])
    steps = [_step_below(fragment, common) for fragment in field]
    if len({origin for origin, _ in steps}) == 1:
        return steps[0][1].covers(steps[-1][1]), steps[0][0]
    if common is not None:
        return common.span, common.origin
    return steps[0][1], steps[0][0]


def _common_site(links: Sequence[Optional[_Link]]) -> Optional[_Link]:
    common = links[0]
    for link in links[1:]:
        common = _lowest_common(common, link)
    return common


def _lowest_common(a: Optional[_Link], b: Optional[_Link]) -> Optional[_Link]:
    while a is not None and b is not None and a is not b:
        if a.depth >= b.depth:
            a = a.parent
        else:
            b = b.parent
    return a if a is b else None


def _step_below(fragment: Fragment, common: Optional[_Link]) -> tuple[Span, Span]:
    """(origin, span) of the step of the fragment's chain just below `common`."""
    if fragment.parent is common:
        return fragment.origin, fragment.span
    link = fragment.parent
    while link is not None and link.parent is not common:
        link = link.parent
    assert link is not None  # common is an ancestor of every fragment's chain
    return link.origin, link.span


def to_argument(field: Sequence[Fragment]) -> Argument:
    span, origin = field_location(field)
    text = "".join(fragment.text for fragment in field)
    return Argument(text, span, all(fragment.known for fragment in field), origin)


def to_piece(field: Sequence[Fragment]) -> Piece:
    """A field kept as one array element, remembering where it was written."""
    span, origin = field_location(field)
    argument_text = "".join(fragment.text for fragment in field)
    verbatim = len(field) == 1 and field[0].verbatim
    known = all(fragment.known for fragment in field)
    return Piece(argument_text, (span.line, span.column), (span.end_line, span.end_column), origin, verbatim, known)


# ---------------------------------------------------------------- expansion of tree-sitter nodes


class Expander:
    """Expands the word nodes of one file against the variables known at that point."""

    def __init__(self, source: SourceText, lookup: Lookup):
        self.source = source
        self.lookup = lookup

    def arguments(self, nodes: Sequence[Node], origin: Span) -> list[Argument]:
        parts: list[Part] = []
        for node in nodes:
            parts.extend(self._parts(node, _Context(origin)))
            parts.append(BREAK)
        return [to_argument(field) for field in split_fields(parts)]

    def fields(self, node: Node, origin: Span) -> list[list[Fragment]]:
        return split_fields(self._parts(node, _Context(origin)))

    def value(self, node: Optional[Node], origin: Span) -> Value:
        """An assignment's value: expanded but not split; "${A[@]}" joins with spaces."""
        if node is None:
            return Value()
        joiner = Piece(" ", (origin.line, origin.column), (origin.line, origin.column), origin, verbatim=False)
        parts = self._parts(node, _Context(origin))
        return Value([joiner if isinstance(part, _Break) else part[0] for part in parts])

    # -- dispatch

    def _parts(self, node: Node, ctx: "_Context") -> list[Part]:
        kind = node.type
        if kind in ("word", "number"):
            return self._unquoted_literal(self.source.text(node), self.source.pos(node.start_point), ctx)
        if kind == "string":
            return self._string(node, ctx)
        if kind == "string_content":
            return self._literal(self.source.text(node), self.source.pos(node.start_point), ctx)
        if kind == "raw_string":
            return self._raw_string(node, ctx)
        if kind == "ansi_c_string":
            return [(self._ansi_c(node, ctx), ctx.literal_split)]
        if kind == "translated_string":
            return [part for child in node.named_children for part in self._parts(child, ctx)]
        if kind in ("concatenation", "command_name"):
            return self._sequence(node.children, node, node.end_byte, ctx)
        if kind in EXPANSION_NODES:
            return self._expansion(node, ctx)
        if kind in ("ERROR", "comment"):
            return []
        return [(self._unknown(node, ctx), False)]  # globs, brace expressions: kept as written

    def _sequence(
        self, children: Sequence[Node], start: Node, end_byte: int, ctx: "_Context", from_end: bool = False
    ) -> list[Part]:
        """Children in order, with the text between them (tree-sitter leaves some out) as literal.

        The sequence begins at the start of `start` (or at its end with `from_end`).
        """
        parts: list[Part] = []
        cursor = (start.end_byte, start.end_point) if from_end else (start.start_byte, start.start_point)
        for child in children:
            if child.start_byte > cursor[0]:
                parts.extend(self._gap(cursor, child.start_byte, ctx))
            if child.is_named:
                parts.extend(self._parts(child, ctx))
            if child.end_byte > cursor[0]:
                cursor = (child.end_byte, child.end_point)
        if end_byte > cursor[0]:
            parts.extend(self._gap(cursor, end_byte, ctx))
        return parts

    def _gap(self, cursor: tuple[int, object], end_byte: int, ctx: "_Context") -> list[Part]:
        start_byte, start_point = cursor
        return self._literal(self.source.slice(start_byte, end_byte), self.source.pos(start_point), ctx)

    # -- literals

    def _literal(self, text: str, start: Pos, ctx: "_Context") -> list[Part]:
        if ctx.quoted:
            return self._escaped(text, start, DQ_ESCAPE, ctx)
        return self._unquoted_literal(text, start, ctx)

    def _unquoted_literal(self, text: str, start: Pos, ctx: "_Context") -> list[Part]:
        return self._escaped(text, start, UNQUOTED_ESCAPE, ctx)

    def _escaped(self, text: str, start: Pos, escape: re.Pattern, ctx: "_Context") -> list[Part]:
        """Verbatim runs and escapes (`\\"` -> `"`; backslash-newline dropped) as pieces."""
        split = ctx.literal_split
        parts: list[Part] = []
        cursor, pos = 0, start
        for match in escape.finditer(text):
            if match.start() > cursor:
                run = text[cursor : match.start()]
                end = advance(pos, run)
                parts.append((Piece(run, pos, end, ctx.origin), split))
                pos = end
            end = advance(pos, match.group())
            if match.group(1) != "\n":
                parts.append((Piece(match.group(1), pos, end, ctx.origin, verbatim=False), split))
            cursor, pos = match.end(), end
        if cursor < len(text):
            parts.append((Piece(text[cursor:], pos, advance(pos, text[cursor:]), ctx.origin), split))
        return parts

    def _string(self, node: Node, ctx: "_Context") -> list[Part]:
        children = node.children
        inner = [child for child in children if child.type != '"']
        if not inner:  # "" is still one (empty) argument
            end = self.source.pos(node.end_point)
            return [(Piece("", end, end, ctx.origin), False)]
        opened = children[0].type == '"'
        # The closing quote's token may carry the whitespace before it: the text ends before `"`.
        end_byte = children[-1].end_byte - 1 if len(children) > 1 and children[-1].type == '"' else node.end_byte
        return self._sequence(inner, children[0] if opened else node, end_byte, ctx.inside_quotes(), from_end=opened)

    def _raw_string(self, node: Node, ctx: "_Context") -> list[Part]:
        text = self.source.text(node)
        content = text[1:-1] if len(text) >= 2 else ""
        start = advance(self.source.pos(node.start_point), text[:1])
        return [(Piece(content, start, advance(start, content), ctx.origin), ctx.literal_split)]

    def _ansi_c(self, node: Node, ctx: "_Context") -> Piece:
        text = self.source.text(node)
        body = text[2:-1] if len(text) >= 3 else ""
        decoded = re.sub(r"\\(.)", lambda m: ANSI_C_ESCAPES.get(m.group(1), m.group(0)), body)
        return Piece(decoded, self.source.pos(node.start_point), self.source.pos(node.end_point), ctx.origin, False)

    def _unknown(self, node: Node, ctx: "_Context", start: Optional[Pos] = None, text: Optional[str] = None) -> Piece:
        text = self.source.text(node) if text is None else text
        start = self.source.pos(node.start_point) if start is None else start
        return Piece(text, start, self.source.pos(node.end_point), ctx.origin, known=False)

    # -- parameter expansion

    def _expansion(self, node: Node, ctx: "_Context") -> list[Part]:
        """`$X`, `${...}`, `$(...)`, `$((...))`: resolved when statically known, else kept as written."""
        parts, start, raw = self._split_lead(node, ctx)
        site = self.source.span_of(start, self.source.pos(node.end_point))
        resolved: Optional[list[Part]] = None
        if node.type == "simple_expansion":
            resolved = self._variable(raw[1:], site, ctx)
        elif node.type == "expansion":
            resolved = self._braced(node, site, ctx)
        if resolved is None:
            resolved = [(self._unknown(node, ctx, start, raw), False)]
        return parts + resolved

    def _split_lead(self, node: Node, ctx: "_Context") -> tuple[list[Part], Pos, str]:
        """Inside strings tree-sitter folds the text before `$` into an expansion's first token;
        give that text back as literal parts. Returns (parts, real start, expansion text)."""
        text = self.source.text(node)
        start = self.source.pos(node.start_point)
        lead = min((i for i in (text.find("$"), text.find("`")) if i >= 0), default=0)
        if lead <= 0:
            return [], start, text
        return self._literal(text[:lead], start, ctx), advance(start, text[:lead]), text[lead:]

    def _variable(self, name: str, site: Span, ctx: "_Context") -> Optional[list[Part]]:
        variable = self.lookup(name)
        if variable is None:
            return None
        return [(Expanded(site, ctx.origin, variable.scalar), not ctx.quoted)]

    def _braced(self, node: Node, site: Span, ctx: "_Context") -> Optional[list[Part]]:
        """`${X}`, `${X:-d}` and friends, `${A[@]}`, `${A[i]}`; None when not statically known."""
        inner = [child for child in node.children if child.type not in ("${", "}")]
        if not inner or inner[0].type not in ("variable_name", "subscript"):
            return None  # ${#X}, ${!X}, ${1}, ${@}: not statically known
        subject = inner[0]
        if subject.type == "subscript":
            return self._subscript(subject, site, ctx) if len(inner) == 1 else None
        name = self.source.text(subject)
        if len(inner) == 1:
            return self._variable(name, site, ctx)
        operator = self.source.text(inner[1])
        operand_end = node.children[-1].start_byte if node.children[-1].type == "}" else node.end_byte
        operand = partial(self._sequence, inner[2:], inner[1], operand_end, ctx.operand(), True)
        return self._operator(name, operator, operand, site, ctx)

    def _operator(
        self, name: str, operator: str, operand: Callable[[], list[Part]], site: Span, ctx: "_Context"
    ) -> Optional[list[Part]]:
        """`:-`/`-` (`:=`/`=` alike, without assigning), `:+`/`+`, `:?`/`?`; others unknown."""
        if name.isdigit() and operator in DEFAULT_OPERATORS:
            return None  # the caller's argument, the default only when it gives none: not statically known
        variable = self.lookup(name)
        # A variable the script never sets is taken as unset: `${NNODES:-1}` means 1 here.
        empty = variable is not None and variable.scalar.known and variable.scalar.text == ""
        unset_or_null = variable is None or (operator.startswith(":") and empty)
        if operator in DEFAULT_OPERATORS:
            return operand() if unset_or_null else self._variable(name, site, ctx)
        if operator in ALTERNATE_OPERATORS:
            return [] if unset_or_null else operand()
        if operator in ERROR_OPERATORS:
            return self._variable(name, site, ctx)
        return None

    def _subscript(self, node: Node, site: Span, ctx: "_Context") -> Optional[list[Part]]:
        name_node, index_node = node.child_by_field_name("name"), node.child_by_field_name("index")
        variable = self.lookup(self.source.text(name_node)) if name_node is not None else None
        if variable is None or index_node is None:
            return None
        index = self.source.text(index_node)
        if index in ("@", "*"):
            return self._elements(variable.all_elements(), index, site, ctx)
        if index.isdigit():
            elements = variable.all_elements()
            value = elements[int(index)] if int(index) < len(elements) else Value()
            return [(Expanded(site, ctx.origin, value), not ctx.quoted)]
        return None

    def _elements(self, elements: tuple[Value, ...], index: str, site: Span, ctx: "_Context") -> list[Part]:
        separate = ctx.quoted and index == "@"  # only "${A[@]}" keeps elements as separate words
        parts: list[Part] = []
        for number, element in enumerate(elements):
            if number:
                joiner = Piece(" ", (site.line, site.column), (site.end_line, site.end_column), ctx.origin, False)
                parts.append(BREAK if separate else (joiner, not ctx.quoted))
            parts.append((Expanded(site, ctx.origin, element), not ctx.quoted))
        return parts


@dataclass(frozen=True)
class _Context:
    origin: Span
    quoted: bool = False
    split_literals: bool = False  # literal text of an unquoted ${X:-a b} operand is split

    @property
    def literal_split(self) -> bool:
        return self.split_literals and not self.quoted

    def inside_quotes(self) -> "_Context":
        return _Context(self.origin, True, False)

    def operand(self) -> "_Context":
        return _Context(self.origin, self.quoted, not self.quoted)
