"""Comparing two fingerprints: stage-by-stage differences, notes, the readable verdict, expect_parity().

Imports `model` and `distributed` (to load rank files); never `capture` or a framework.
"""
