"""Multi-process runs: rank consistency, per-rank parts, and one logical fingerprint from them.

Imports `model` and `adapters`.
"""
