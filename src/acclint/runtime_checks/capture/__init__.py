"""Recording step 0: capture(), the manual Probe, and the forward recorder.

Imports `model`, `adapters` and `distributed`.
"""
