"""Source ranges of the few nodes facts point at, from one code generation pass.

libcst's PositionProvider costs about three parses per file; regenerating the code, and
recording only the wanted nodes, costs a fraction of one parse. The pass itself is the cost, so
it does as little per token and per node as it can: a token is appended to a list by the list's
own (C) `append`, the per-node hooks are a C builtin that does nothing useful, and a wanted node
records token counts. Lines and columns are worked out once at the end, from the text.
"""

from __future__ import annotations

from itertools import accumulate

import libcst as cst
from libcst._nodes.internal import CodegenState

from acclint.findings import Location


class _Unwanted:
    """A shared do-nothing context: most nodes are not wanted, and must cost almost nothing."""

    __slots__ = ()

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_UNWANTED = _Unwanted()


class _Recording:
    """The tokens emitted while a wanted node generates its code: its range, in token counts."""

    __slots__ = ("tokens", "key", "ranges", "start")

    def __init__(self, tokens: list, key: int, ranges: dict):
        self.tokens, self.key, self.ranges = tokens, key, ranges

    def __enter__(self):
        self.start = len(self.tokens)

    def __exit__(self, *exc):
        self.ranges[self.key] = (self.start, len(self.tokens))
        return False


class _RangeRecordingState(CodegenState):
    # Instance slots shadow CodegenState's methods of the same names: a slot holding a C callable
    # is called without a Python frame, and these run once per token or per node of the module.
    __slots__ = ("wanted", "ranges", "add_token", "before_codegen", "after_codegen")

    def __init__(self, module: cst.Module, wanted: set):
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.wanted = wanted
        self.ranges: dict = {}  # id(node) -> (tokens before it, tokens up to its end)
        self.add_token = self.tokens.append
        # libcst calls these with the node; nothing is to be done, and `id` does that in C.
        self.before_codegen = self.after_codegen = id

    def pop_trailing_newline(self) -> None:
        pass  # called after every node has generated its code: the ranges are known already

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        if id(node) not in self.wanted:
            return _UNWANTED
        return _Recording(self.tokens, id(node), self.ranges)


def node_locations(module: cst.Module, nodes: list) -> list:
    """Location of each node in `nodes` (same order); columns 1-based, ends exclusive."""
    if not nodes:
        return []
    state = _RangeRecordingState(module, {id(n) for n in nodes})
    module._codegen(state)
    tokens = state.tokens
    offsets = [0, *accumulate(map(len, tokens))]  # token count -> characters before
    where = _line_columns("".join(tokens), {offsets[t] for bounds in state.ranges.values() for t in bounds})
    out = []
    for node in nodes:
        bounds = state.ranges.get(id(node))
        if bounds is None:
            out.append(Location(1, 1, 1, 1))
            continue
        (line, col), (end_line, end_col) = where[offsets[bounds[0]]], where[offsets[bounds[1]]]
        out.append(Location(line, col + 1, end_line, end_col + 1))
    return out


def _line_columns(text: str, offsets: set) -> dict:
    """offset -> (1-based line, 0-based column): the column counts characters since the last "\n".
    One sweep over the text, in offset order."""
    out = {}
    line, counted = 1, 0
    for offset in sorted(offsets):
        line += text.count("\n", counted, offset)
        counted = offset
        out[offset] = (line, offset - text.rfind("\n", 0, offset) - 1)
    return out
