"""`acclint diff` for people: an aligned table (key, left value and line, right value and line,
note), then one sentence per mismatch saying what to change."""

from __future__ import annotations

from acclint.reports.common import plural
from acclint.setups import DiffResult, Setting
from acclint.setups.values import show

_BOLD = "\x1b[1m"
_YELLOW = "\x1b[33m"
_RESET = "\x1b[0m"
MAX_CELL = 48


def _cell(setting: Setting) -> str:
    value = show(setting.value) if setting.known else (setting.written or show(setting.value))
    if setting.value is None and setting.known:
        value = "not set"
    if len(value) > MAX_CELL:
        value = value[: MAX_CELL - 3] + "..."
    if setting.where is not None:
        place = f"{setting.where.path}:{setting.where.line}" + (" (default)" if setting.is_default else "")
    else:
        place = "-" if setting.written == "not set" else "default"
    return f"{value}  {place}"


def _note(setting_pair: tuple, category: str) -> str:
    left, right = setting_pair
    notes = [category]
    if left.origin == "derived" or right.origin == "derived":
        notes.append("converted")
    if not (left.known and right.known):
        notes.append("unknown value")
    return ", ".join(notes)


def render_diff_text(result: DiffResult, *, color: bool = False) -> str:
    lines: list[str] = []
    if result.mismatches:
        rows = [("key", f"left: {result.left.path}", f"right: {result.right.path}", "note")]
        rows += [(m.key, _cell(m.left), _cell(m.right), _note((m.left, m.right), m.category)) for m in result.mismatches]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        for index, row in enumerate(rows):
            text = "  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3]
            lines.append(_paint(text.rstrip(), _BOLD, color and index == 0))
        lines.append("")
        for number, mismatch in enumerate(result.mismatches, 1):
            lines.append(f"{number}. [{mismatch.category}] {_paint(mismatch.message, _YELLOW, color)}")
        lines.append("")
    for problem in result.problems:
        lines.append(f"note: {problem}")
    not_compared = [f"{k} (left only)" for k in result.only_left] + [f"{k} (right only)" for k in result.only_right]
    if not_compared:
        lines.append("not compared (set on one side only): " + ", ".join(not_compared))
    lines.append(_paint(summary_line(result), _BOLD, color))
    return "\n".join(lines)


def summary_line(result: DiffResult) -> str:
    same = _same(result)
    if not result.mismatches:
        return f"No differences: {same} the same ({len(result.ignored)} ignored)."
    return (f"Found {plural(len(result.mismatches), 'difference')}; {same} the same "
            f"({len(result.ignored)} ignored).")


def _same(result: DiffResult) -> str:
    """`3 settings`, `2 model-code items`, or both: what was compared and found equal."""
    model = sum(1 for key in result.same if key in result.model_keys)
    settings = len(result.same) - model
    parts = [plural(settings, "setting")] if settings or not model else []
    if model:
        parts.append(plural(model, "model-code item"))
    return " and ".join(parts)


def _paint(text: str, code: str, enabled: bool) -> str:
    return f"{code}{text}{_RESET}" if enabled else text
