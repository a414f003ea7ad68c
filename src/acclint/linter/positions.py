"""Source ranges of the few nodes facts point at, from one code generation pass.

libcst's PositionProvider costs about three parses per file; regenerating the code while
counting lines, and recording only the wanted nodes, costs a fraction of one parse.
"""

from __future__ import annotations

from contextlib import contextmanager

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


class _RangeRecordingState(CodegenState):
    __slots__ = ("line", "column", "wanted", "ranges")

    def __init__(self, module: cst.Module, wanted: set):
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.line = 1
        self.column = 0
        self.wanted = wanted
        self.ranges: dict = {}

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        newline = value.rfind("\n")
        if newline < 0:
            self.column += len(value)
        else:
            self.line += value.count("\n")
            self.column = len(value) - newline - 1

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        if id(node) not in self.wanted:
            return _UNWANTED
        return self._record(node)

    @contextmanager
    def _record(self, node):
        start = (self.line, self.column)
        yield
        self.ranges[id(node)] = (start, (self.line, self.column))


def node_locations(module: cst.Module, nodes: list) -> list:
    """Location of each node in `nodes` (same order); columns 1-based, ends exclusive."""
    if not nodes:
        return []
    state = _RangeRecordingState(module, {id(n) for n in nodes})
    module._codegen(state)
    out = []
    for node in nodes:
        (line, col), (end_line, end_col) = state.ranges.get(id(node), ((1, 0), (1, 0)))
        out.append(Location(line, col + 1, end_line, end_col + 1))
    return out
