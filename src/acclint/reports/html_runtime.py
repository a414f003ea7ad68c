"""The runtime verdict for the HTML report: stages, first cause, and per-parameter bar charts.

Built from the compare JSON dict (the contract: kind / name / left / right / message and, where a
mismatch follows from an earlier one, `consequence_of`) plus what a comparison result offers
beyond it when present (its stages; the two fingerprints' per-parameter norms for the charts).
Everything is read generically, so new stages and kinds render without a change here.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Optional

from acclint.reports.html_model import show_value

CHART_BARS = 30  # the largest differences shown; the rest are counted
CHART_FLOOR = 1e-8  # left end of the log axis: below it a difference is float32 noise
BAR_WIDTH = 360
LABEL_WIDTH = 250
ROW_HEIGHT = 18


def _stage_rows(result: Any, mismatches: list[dict]) -> list[dict]:
    stages = getattr(result, "stages", None)
    rows = []
    if stages:
        for outcome in stages:
            found = [m.to_dict() if hasattr(m, "to_dict") else dict(m) for m in getattr(outcome, "mismatches", [])]
            skipped = getattr(outcome, "skipped", None)
            partial = getattr(outcome, "partial", None)  # compared by statistics only: not "same"
            rows.append(_stage_row(getattr(outcome, "stage", ""), getattr(outcome, "title", "") or
                                   str(getattr(outcome, "stage", "")), found, getattr(outcome, "summary", ""), skipped,
                                   partial))
        return rows
    # Only the contract's mismatches: one row per kind, in the order they were reported.
    kinds: dict[str, list[dict]] = {}
    for m in mismatches:
        kinds.setdefault(m["kind"], []).append(m)
    return [_stage_row(kind, kind, found, "", None) for kind, found in kinds.items()]


def _stage_row(stage: str, title: str, found: list[dict], summary: str, skipped: Optional[str],
               partial: Optional[str] = None) -> dict:
    consequences = sum(1 for m in found if m.get("consequence_of"))
    if found:
        status = "differs"
    elif skipped:
        status = "not compared"
    elif partial:
        status = "partly compared"
    else:
        status = "same"
    note = skipped or (f"{summary} ({partial})" if partial else summary) or ""
    if consequences:
        note = (note + "; " if note else "") + f"{consequences} of {len(found)} follow from an earlier difference"
    return {"stage": stage, "title": title, "status": status, "count": len(found), "note": note}


def _short(value: Any) -> str:
    """Statistics dicts (norm, mean, std, ..., sha256) shortened to their first entries."""
    if isinstance(value, Mapping) and len(value) > 3:
        return show_value(dict(list(value.items())[:3])) + ", …"
    return show_value(value)


def _mismatch_row(m: Mapping[str, Any]) -> dict:
    return {"kind": m.get("kind", ""), "name": m.get("name", ""), "left": _short(m.get("left")),
            "right": _short(m.get("right")), "left_full": show_value(m.get("left")),
            "right_full": show_value(m.get("right")), "message": m.get("message", ""),
            "consequence_of": m.get("consequence_of") or ""}


def relative_difference(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
        return None
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale


def bar_chart(title: str, pairs: Iterable[tuple[str, Optional[float], Optional[float], bool]],
              threshold: Optional[float], what: str) -> Optional[dict]:
    """SVG geometry for |a-b|/max(|a|,|b|) per name on a log axis, largest first.

    `pairs` are (name, left value, right value, differs); None when no name differs at all,
    because a chart of identical values says less than the one-line summary.
    """
    values = []
    for name, a, b, differs in pairs:
        rel = relative_difference(a, b)
        values.append((name, rel, differs, a, b))
    if not any(differs for _, _, differs, _, _ in values):
        return None
    values.sort(key=lambda v: (-(v[1] if v[1] is not None else math.inf), v[0]))
    shown = values[:CHART_BARS]
    decades = int(-math.log10(CHART_FLOOR))

    def x(rel: float) -> float:
        clipped = min(max(rel, CHART_FLOOR), 1.0)
        return LABEL_WIDTH + BAR_WIDTH * (math.log10(clipped) + decades) / decades

    bars = []
    for index, (name, rel, differs, a, b) in enumerate(shown):
        y = 20 + index * ROW_HEIGHT
        label = name if len(name) <= 38 else "…" + name[-37:]
        if rel is None:
            width, text = BAR_WIDTH, "not finite"
        elif rel == 0:
            width, text = 0.0, "0 (norms equal)" if differs else "0"
        else:
            width, text = x(rel) - LABEL_WIDTH, f"{rel:.2e}"
        bars.append({"name": name, "label": label, "y": y, "width": round(width, 1), "text": text,
                     "differs": differs, "tip": f"{name}: {show_value(a)} vs {show_value(b)} ({what})"})
    ticks = [{"x": round(x(10.0 ** -d), 1), "label": f"1e-{d}" if d else "1"} for d in range(decades, -1, -2)]
    height = 20 + len(shown) * ROW_HEIGHT + 24
    line = round(x(threshold), 1) if threshold else None
    return {"title": title, "what": what, "bars": bars, "ticks": ticks, "height": height, "axis_y": height - 22,
            "width": LABEL_WIDTH + BAR_WIDTH + 90, "bar_x": LABEL_WIDTH, "threshold_x": line,
            "threshold": threshold, "more": len(values) - len(shown), "total": len(values)}


def _charts(result: Any) -> list[dict]:
    """Initial weights (norms; a hash difference is what makes a parameter differ) and gradient norms."""
    left, right = getattr(result, "left", None), getattr(result, "right", None)
    if left is None or right is None:
        return []
    charts = []
    try:
        lp = {p.name: p for p in left.params}
        rp = {p.name: p for p in right.params}
        names = [n for n in lp if n in rp]
        weights = bar_chart(
            "Initial weights: relative difference of each parameter's norm",
            ((n, lp[n].stats.get("norm"), rp[n].stats.get("norm"), lp[n].sha256 != rp[n].sha256) for n in names),
            None, "norm left vs right")
        if weights:
            charts.append(weights)
        if left.step is not None and right.step is not None:
            lg, rg = left.step.grad_norms or {}, right.step.grad_norms or {}
            rtol = getattr(result, "rtol", 1e-5)
            atol = getattr(result, "atol", 0.0)
            grads = [n for n in names if n in lg and n in rg]

            def beyond(a: Optional[float], b: Optional[float]) -> bool:
                a, b = a or 0.0, b or 0.0
                return not abs(a - b) <= atol + rtol * max(abs(a), abs(b))

            chart = bar_chart("Gradient norms at step 0: relative difference per parameter",
                              ((n, lg[n], rg[n], beyond(lg[n], rg[n])) for n in grads), rtol, "gradient norm left vs right")
            if chart:
                charts.append(chart)
    except (AttributeError, TypeError, KeyError):
        # A fingerprint shape this reporter does not know: the tables above still tell the verdict.
        return charts
    return charts


def runtime_view(result: Any, left_label: str, right_label: str) -> dict:
    """The report's runtime section from a comparison result (anything with `to_dict()` giving the
    compare JSON, optionally `stages`, `left` and `right` fingerprints)."""
    data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    mismatches = [dict(m) for m in data.get("mismatches", [])]
    cause = next((m for m in mismatches if not m.get("consequence_of")), mismatches[0] if mismatches else None)
    return {
        "ok": bool(data.get("ok", not mismatches)),
        "left": left_label,
        "right": right_label,
        "mismatches": [_mismatch_row(m) for m in mismatches],
        "first_cause": _mismatch_row(cause) if cause else None,
        "causes": sum(1 for m in mismatches if not m.get("consequence_of")),
        "stages": _stage_rows(result, mismatches),
        "charts": _charts(result),
    }
