"""One adapter per framework on one base, the registry, and the tensor statistics both adapters record.

Imports only `model`; no framework is imported until a model of it is handed over.
"""
