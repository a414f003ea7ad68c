"""The cyclic garbage collector during a scan.

A scan keeps every file's facts until it ends: many long-lived objects, free of reference cycles.
Left to itself, the collector would walk all of them again and again as the scan allocates (a
quarter of the scan's CPU, and more the more files). So automatic collection is paused while files
are analysed, and a collection by hand every COLLECT_EVERY files frees whatever cycles the analysis
left (none are expected: tests/linter/test_collector.py checks it). Inside a scan, what survives a
collection by hand or a paused stretch is frozen (`gc.freeze`) until the scan ends: no later
collection, by hand or automatic, walks it again, so each object is examined at most once however
many files there are.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

COLLECT_EVERY = 256  # files analysed between collections by hand while automatic collection is paused

_freezing = False  # inside a scan that unfreezes, when it ends, what it froze


@contextmanager
def scan_heap():
    """Around a whole scan: survivors are frozen while it runs, unfrozen when it ends. Where objects
    were frozen already (an enclosing scan, or the caller's own), nothing is frozen or unfrozen here:
    those are not this scan's to unfreeze."""
    global _freezing
    if _freezing or gc.get_freeze_count():
        yield
        return
    _freezing = True
    try:
        yield
    finally:
        _freezing = False
        gc.unfreeze()


@contextmanager
def gc_paused():
    """No automatic collection inside; what survives it is frozen (inside a scan)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        _freeze_survivors()
        if enabled:
            gc.enable()


def collect() -> None:
    """A collection by hand of what is not frozen; what survives it is frozen (inside a scan)."""
    gc.collect()
    _freeze_survivors()


def _freeze_survivors() -> None:
    if _freezing:
        gc.freeze()
