"""Options dicts passed to a settings call (`torch.npu.set_option(option)`,
`set_context(ascend_config=cfg)`), read from the file's facts however the dict was written."""

from __future__ import annotations

from acclint.linter.facts import MODULE_SCOPE, Call, FileFacts, Value


def option_dicts(facts: FileFacts, call: Call, value: Value) -> list:
    """(node, dict) pairs the argument `value` of `call` may hold: the dict written inline; the
    dicts assigned to the name before the call in its function or at module level (a constant),
    each placed at the call that applies it; and `name["KEY"] = value` writes, each at its own line.
    Every assignment counts, not only the last: `option = {...}` under an `if` may or may not run.
    A dict built at run time (a call, a comprehension, `**kwargs`) gives nothing."""
    if isinstance(value.literal, dict):
        return [(call.node, value.literal)]
    name = value.dotted
    if not name:
        return []

    def before(scope: str, order: int) -> bool:
        return scope == MODULE_SCOPE and call.scope != MODULE_SCOPE or scope == call.scope and order < call.order

    out = [(call.node, a.value.literal) for a in facts.name_assignments
           if a.name == name and isinstance(a.value.literal, dict) and before(a.scope, a.order)]
    out.extend((w.node, {w.key: w.value.literal}) for w in facts.key_writes
               if w.base == name and before(w.scope, w.order))
    return out
