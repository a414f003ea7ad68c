"""acclint: accuracy-migration linter and step-0 parity checker for GPU -> Ascend NPU / MindSpore."""

__version__ = "0.1.0"
