"""Where the order of a file listing goes (ACL211), read from the walker's sink records.

A listing in file-system order matters only where its order decides what a model trains on: a
dataset that reads the files in the order given, a shuffle/split/pick by position, a list a dataset
class keeps and reads by index, a loop that numbers entries, a manifest written in that order. This
module follows a listing through locals, loops that build lists, `self` attributes and one level of
`return` within the file, and answers with the first such sink it reaches, or None. What it cannot
follow (an unknown function, a dict keyed by name, a count) is None: precision first.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from acclint.knowledge import table
from acclint.knowledge.library import sorted_input
from acclint.linter.facts import Call, FileFacts


@lru_cache(maxsize=1)
def fo() -> dict:
    return {key: frozenset(value) for key, value in table("file_order").items()}


def last(callee: str) -> str:
    return callee.rsplit(".", 1)[-1]


def shown(callee: str) -> str:
    """A callee as the message names it: `?.from_list` (a method on an expression) as `from_list`."""
    return last(callee) if callee.startswith("?") else callee


# Sinks that end a flow without any order reaching training: a test, a membership test, a set or a
# dict keyed by name, one constant position (`[0]`: a checkpoint, a log), a read by a computed index
# of a local (a loop over positions, which is iteration).
_QUIET = frozenset({"test", "in", "set-comp", "[]", "[i]"})
_CUT = "it is cut by position (`[a:b]`), so which files fall on each side depends on storage"


class Reach:
    """One file's flows; `seen` keeps each local and attribute from being followed twice."""

    def __init__(self, facts: FileFacts):
        self.facts = facts
        self.seen: set = set()

    # -- a chain of sinks, innermost first ----------------------------------------------------
    def sinks(self, sinks: tuple, scope: str, order: int) -> Optional[str]:
        numbered = cut = False
        for sink in reversed(sinks):
            kind, _, detail = sink.partition(":")
            if sink == "comp":
                continue  # a comprehension keeps the order
            if kind == "arg":
                name = last(detail)
                if name in fo()["sorting"]:
                    return None
                if name == "enumerate":
                    numbered = True
                if name in fo()["order_keeping"]:
                    continue
                found = self.consumer(detail, scope, order)
                if found or name not in fo()["builders"] or "." not in detail:
                    return found  # a sink, or a call we do not know (counted, printed, passed on)
                return self.kept(detail.rsplit(".", 1)[0], scope, order)  # `found.extend(listing)`
            if sink == "[:]":
                if self._in_loop_body(scope, order):
                    return None  # `files[i:i + batch]` in a loop: batches that cover the list, iteration
                cut = True
                continue
            if sink in _QUIET:
                return None
            if cut and kind in ("name", "attr", "key"):
                return _CUT
            if sink == "iter":
                return self.loop(scope, order, numbered)
            if sink == "return":
                return self.returned(scope)
            if kind in ("name", "attr"):
                return self.kept(detail, scope, order)
            return None
        # A cut kept where no sink is recorded: unpacked into several names (`train, val = a[:n], a[n:]`).
        return _CUT if cut else None

    def _in_loop_body(self, scope: str, order: int) -> bool:
        return any(b.kind == "for" and b.scope == scope and b.head_end < order < b.end for b in self.facts.blocks)

    def kept(self, target: str, scope: str, order: int) -> Optional[str]:
        if target.startswith("self."):
            return self.attribute(target, scope)
        if "." in target:
            return None  # `args.files = ...`: where that goes is not recorded
        return self.local(target, scope, order)

    # -- what consumes it ---------------------------------------------------------------------
    def consumer(self, callee: str, scope: str, order: int, call: Optional[Call] = None) -> Optional[str]:
        """A reason when `callee` (taking the listing as an argument) is a sink."""
        name = last(callee)
        call = call or self._call_before(callee, scope, order)
        if call is not None and sorted_input(call.names) is not None:
            return None  # the reader sorts the files it is given (knowledge/library_behaviour.toml)
        table_ = fo()
        if name in table_["dataset_functions"] or name.endswith(tuple(table_["dataset_suffixes"])) \
                or name in self.facts.classes and self.dataset_class(name):
            return f"its order reaches `{shown(callee)}`, which reads the files in the order given"
        if name in table_["split_functions"]:
            return f"`{shown(callee)}` shuffles, picks or splits it by position, so the same seed gives different files"
        names = call.names if call is not None else frozenset()
        if name in table_["manifest_methods"] or names & table_["manifest_functions"]:
            return f"`{shown(callee)}` writes it out in that order"
        keyword = next((a.keyword for a in call.args if a.keyword in table_["dataset_keywords"]), None) \
            if call is not None else None
        if keyword:
            return f"it reaches `{shown(callee)}` as `{keyword}=`, which reads the files in the order given"
        return None

    def _call_before(self, callee: str, scope: str, order: int) -> Optional[Call]:
        """The call an argument recorded at `order` belongs to (calls are recorded before their arguments)."""
        found = None
        for call in self.facts.calls:
            if call.order >= order:
                break
            if call.callee == callee and call.scope == scope:
                found = call
        return found

    # -- locals --------------------------------------------------------------------------------
    def local(self, name: str, scope: str, order: int) -> Optional[str]:
        if (scope, name) in self.seen or sorted_later(self.facts, name, scope, order):
            return None
        self.seen.add((scope, name))
        for use in self.facts.name_uses:
            if use.name == name and use.scope == scope and use.order > order:
                found = self.sinks(use.sinks, scope, use.order)
                if found:
                    return found
        # A name the walker did not track (`data = convert(root)`): arguments it is passed as directly.
        for call in self.facts.calls:
            if call.scope == scope and call.order > order and any(a.value.dotted == name for a in call.args):
                found = self.consumer(call.callee, scope, call.order, call)
                if found:
                    return found
        return None

    def returned(self, scope: str) -> Optional[str]:
        """A function returning the list: where its callers in this file put the result."""
        function = self.facts.functions.get(scope)
        if function is None or ("<return>", scope) in self.seen:
            return None
        self.seen.add(("<return>", scope))
        name = last(scope)
        callees = {f"self.{name}", f"cls.{name}"} if function.owner else {name}
        for call in self.facts.calls:
            if call.callee in callees:
                found = self.sinks(call.sinks, call.scope, call.order)
                if found:
                    return found
        return None

    # -- loops ---------------------------------------------------------------------------------
    def loop(self, scope: str, order: int, numbered: bool) -> Optional[str]:
        """A `for` over the listing (or over a name holding it): what its body builds or writes."""
        facts = self.facts
        loop = next((b for b in facts.blocks if b.kind == "for" and b.scope == scope
                     and b.start < order < b.head_end), None)
        if loop is None:
            return None
        body = [c for c in facts.calls if c.scope == scope and loop.head_end < c.order < loop.end]
        targets = set(loop.targets)
        for inner in body:  # os.walk loops that sort dirs/files in place, or iterate sorted(files)
            if inner.method == "sort" and inner.callee.rsplit(".", 1)[0] in targets:
                return None
            if last(inner.callee) in fo()["sorting"] and any(a.value.dotted in targets for a in inner.args):
                return None
        if numbered and loop.targets and self._numbers(loop, loop.targets[0]):
            return (f"the loop numbers entries by their position (`{loop.targets[0]}`), "
                    "so the same file gets a different number on each storage")
        for inner in body:
            receiver = inner.callee.rsplit(".", 1)[0]
            if inner.method in fo()["builders"] and "." in inner.callee:
                found = self.kept(receiver, scope, loop.head_end)
                if found:
                    return found
            elif inner.method in fo()["manifest_methods"] and self._opened_before(receiver, loop):
                return f"the loop writes it to `{receiver}` line by line, a manifest in file-system order"
        return None

    def _numbers(self, loop, index: str) -> bool:
        """The enumerate index is stored (appended, written, a dict value, an attribute) in the body."""
        for use in self.facts.name_uses:
            if use.name != index or use.scope != loop.scope or not loop.head_end < use.order < loop.end:
                continue
            for sink in reversed(use.sinks):
                kind, _, detail = sink.partition(":")
                if kind == "arg" and last(detail) in fo()["order_keeping"]:
                    continue
                if kind in ("key", "attr") or kind == "arg" and (
                        last(detail) in fo()["builders"] | fo()["manifest_methods"]
                        or self.consumer(detail, use.scope, use.order)):
                    return True
                break
        return False

    def _opened_before(self, receiver: str, loop) -> bool:
        """`receiver` is a file or csv writer opened before the loop (one manifest), not one per file."""
        openers = fo()["openers"]
        for block in self.facts.blocks:
            if block.kind == "with" and block.scope == loop.scope and receiver in block.targets \
                    and block.start < loop.start and block.end > loop.end \
                    and any(item.base_call and last(item.base or "") in openers for item in block.items):
                return True
        return any(c.assigned_to == receiver and c.scope == loop.scope and c.order < loop.start
                   and last(c.callee) in openers for c in self.facts.calls)

    # -- attributes ----------------------------------------------------------------------------
    def attribute(self, target: str, scope: str) -> Optional[str]:
        """`self.files = listing`: reported where the class reads it in sample order."""
        cls = self.class_of(scope)
        if cls is None or (cls, target) in self.seen or sorted_later(self.facts, target, scope, 0):
            return None
        self.seen.add((cls, target))
        if self.dataset_class(cls):
            return f"`{target}` keeps it in the dataset class `{cls}`"
        inside = cls + "."
        for use in self.facts.name_uses:
            if use.name == target and use.scope.startswith(inside) and use.sinks[-1] in ("[i]", "[:]"):
                return f"`{target}` keeps it and `{last(use.scope)}` reads it by position"
        for block in self.facts.blocks:
            if block.scope.startswith(inside) and last(block.scope) in fo()["sample_methods"] \
                    and any(item.dotted == target for item in block.items):
                return f"`{target}` keeps it and `{last(block.scope)}` iterates it in that order"
        for call in self.facts.calls:
            if call.scope.startswith(inside) and any(a.value.dotted == target for a in call.args):
                found = self.consumer(call.callee, call.scope, call.order, call)
                if found:
                    return found
        return None

    def class_of(self, scope: str) -> Optional[str]:
        parts = scope.split(".")
        for end in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:end])
            if prefix in self.facts.classes:
                return prefix
        return None

    def dataset_class(self, name: str) -> bool:
        """A class of this file deriving from a dataset base, or handed to a dataset as its source
        (`GeneratorDataset(Source(root))`)."""
        key = ("<dataset>", name)
        if key in self.seen:
            return False
        self.seen.add(key)
        table_ = fo()
        for base in self.facts.classes[name].bases:
            dotted = base.dotted or ""
            if base.names & table_["dataset_bases"] or last(dotted).endswith(tuple(table_["dataset_suffixes"])) \
                    or dotted in self.facts.classes and self.dataset_class(dotted):
                return True
        return any(self._source_of(call) for call in self.facts.calls if call.callee == name)

    def _source_of(self, made: Call) -> bool:
        """`made` (an instance) is what a dataset reads its samples from: the first positional argument
        or `source=` of a dataset constructor, not a helper handed over by another keyword
        (`preprocess_func=`)."""
        if not made.sinks or not made.sinks[-1].startswith("arg:"):
            return False
        callee = made.sinks[-1][4:]
        dataset = self._call_before(callee, made.scope, made.order)
        if dataset is None or not self.consumer(callee, made.scope, made.order, dataset):
            return False
        positional = [a for a in dataset.args if a.keyword is None and not a.star]
        first = positional[0] if positional else None
        return any(a.value.base == made.callee and a.value.base_call and (a is first or a.keyword == "source")
                   for a in dataset.args)


def sorted_later(facts: FileFacts, target: str, scope: str, order: int) -> bool:
    """`target.sort()` or `sorted(target)` after `order` in `scope` (attributes: anywhere in the file)."""
    same_scope = "." not in target
    for call in facts.calls:
        if same_scope and (call.scope != scope or call.order < order):
            continue
        if call.callee == f"{target}.sort":
            return True
        if last(call.callee) in fo()["sorting"] and any(a.value.dotted == target for a in call.args):
            return True
    return False
