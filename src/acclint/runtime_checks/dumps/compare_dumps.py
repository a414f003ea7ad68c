"""compare_dumps(): two msprobe dumps (or a dump and an acclint fingerprint), read causally.

    from acclint.runtime_checks.dumps.compare_dumps import compare_dumps
    result = compare_dumps("gpu_dump/", "npu_dump/step0")    # result.ok, result.verdict(), result.to_dict()

Each side is a dump_path, a step folder, a rank / proc folder or a dump.json (layout), or an
acclint fingerprint file. Ranks pair in order (rank0 with rank0, the only process with the only
process); a side with more ranks than the other has the extra ones named as not compared.
No msprobe install is needed: dump.json is plain JSON.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from acclint.runtime_checks.distributed.rank_files import load as load_fingerprint
from acclint.runtime_checks.dumps.causal import read_pair
from acclint.runtime_checks.dumps.from_fingerprint import fingerprint_as_dump
from acclint.runtime_checks.dumps.layout import is_dump, locate
from acclint.runtime_checks.dumps.node_names import parse_node_name
from acclint.runtime_checks.dumps.matching import DumpMapping, NodeKeys, load_dump_mapping
from acclint.runtime_checks.dumps.reader import DumpError, DumpRank, read_dump
from acclint.runtime_checks.dumps.result import DumpComparison, DumpSide, build

__all__ = ["DumpError", "compare_dumps", "compare_paths", "is_dump", "load_side"]


def load_side(path: str | Path, step: int | None = None) -> tuple[DumpSide, list[DumpRank]]:
    """One side's ranks: a dump's, or a fingerprint's read as a one-rank dump."""
    if not is_dump(path):
        if Path(path).is_dir():
            locate(path, step)  # a folder is only ever a dump: say what a dump folder holds
        fingerprint = load_fingerprint(path)
        side = DumpSide(f"{path} (acclint fingerprint, {fingerprint.framework})", fingerprint.framework,
                        fingerprint.training)
        return side, [fingerprint_as_dump(fingerprint, path)]
    files = locate(path, step)
    ranks = [read_dump(file, rank) for rank, file in files.ranks.items()]
    frameworks = sorted({rank.framework for rank in ranks})
    if len(frameworks) > 1:
        raise DumpError(f"{path}: the ranks hold dumps of {' and '.join(frameworks)}")
    levels = "/".join(sorted({rank.level for rank in ranks}))
    where = f"{files.step}, " if files.step else ""
    more = f" (steps {', '.join(files.steps)}: {files.step} read)" if len(files.steps) > 1 else ""
    count = f"{len(ranks)} rank{'s' if len(ranks) != 1 else ''}" if len(ranks) != 1 else ranks[0].rank
    label = f"{path} (msprobe {frameworks[0]} dump, level {levels}, {where}{count}){more}"
    return DumpSide(label, frameworks[0]), ranks


@contextmanager
def _collector_paused() -> Iterator[None]:
    """A large dump becomes millions of small acyclic objects: the cyclic collector would rescan them
    all, again and again, while they are built (twice the reading time on a 100 MB dump)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def compare_dumps(left: str | Path, right: str | Path, *, mapping: "str | Path | DumpMapping | None" = None,
                  step: int | None = None) -> DumpComparison:
    """The causal verdict of two sides, at least one of them an msprobe dump. DumpError on bad input."""
    with _collector_paused():
        return _compare(left, right, mapping, step)


def _compare(left: str | Path, right: str | Path, mapping: "str | Path | DumpMapping | None",
             step: int | None) -> DumpComparison:
    rules = mapping if isinstance(mapping, DumpMapping) else load_dump_mapping(mapping)
    left_side, left_ranks = load_side(left, step)
    right_side, right_ranks = load_side(right, step)
    pairs = list(zip(left_ranks, right_ranks))
    readings = {}
    for a, b in pairs:
        label = a.rank if a.rank == b.rank else f"{a.rank} / {b.rank}"
        readings[label] = read_pair(a, b, NodeKeys(a.nodes, rules), NodeKeys(b.nodes, rules))
    extra = left_ranks[len(pairs):] or right_ranks[len(pairs):]
    note = ""
    if extra:
        side = "left" if len(left_ranks) > len(right_ranks) else "right"
        note = (f"{', '.join(rank.rank for rank in extra)} of the {side} side {'was' if len(extra) == 1 else 'were'} "
                f"not compared: the other side has {len(pairs)} rank{'s' if len(pairs) != 1 else ''}")
    parse_node_name.cache_clear()  # the names were shared by both sides; a long-lived process keeps none
    return build(left_side, right_side, readings, note)


def compare_paths(left: str | Path, right: str | Path, **options: Any):
    """`acclint compare` for any two sides: the dump reading when either is an msprobe dump, else
    the fingerprint comparison (options: mapping, and the fingerprint tolerances)."""
    if is_dump(left) or is_dump(right):
        return compare_dumps(left, right, mapping=options.get("mapping"), step=options.get("step"))
    from acclint.runtime_checks.compare.compare import compare

    for path in (left, right):
        if Path(path).is_dir():
            locate(path)  # a folder is only ever a dump: say what a dump folder holds
    options.pop("step", None)
    return compare(load_fingerprint(left), load_fingerprint(right), **options)
