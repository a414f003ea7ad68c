"""Copied by `acclint capture` as `sitecustomize.py` into a temporary folder put first on the
command's PYTHONPATH, so every Python process the command starts runs it at start-up.

It must cost nothing in a process that never trains: it imports no part of acclint (nor numpy)
until torch or MindSpore has been imported, and then hands over to `capture_hooks.child`. It
also runs the `sitecustomize` that this file hides, if the interpreter has one.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_SETTINGS = "ACCLINT_CAPTURE"


def _run_hidden_sitecustomize():
    """The sitecustomize this file shadows (Debian's, a virtualenv's), run as it would have been."""
    path = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls `hook(module)` once a top-level package has finished importing."""

    def __init__(self, hooks):
        self.hooks = hooks
        self.busy = set()

    def find_spec(self, name, path=None, target=None):
        if name not in self.hooks or name in self.busy:
            return None
        self.busy.add(name)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy.discard(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, hook = spec.loader, self.hooks.pop(name)
        run = loader.exec_module

        def exec_module(module):
            run(module)
            hook(module)

        loader.exec_module = exec_module
        return spec


def _hand_over(framework):
    def hook(module):
        sys.path.append(os.environ.get(_SETTINGS + "_PATH", ""))  # acclint itself, last: it shadows nothing
        try:
            from acclint.runtime_checks.capture_hooks import child

            child.start(framework, module)
        except Exception as error:  # the user's `import torch` must succeed whatever happens here
            sys.stderr.write(f"acclint capture: warning: step 0 will not be recorded: {type(error).__name__}: {error}\n")

    return hook


def _install():
    if not os.environ.get(_SETTINGS):
        return
    hooks = {name: _hand_over(name) for name in ("torch", "mindspore")}
    sys.meta_path.insert(0, _AfterImport(hooks))
    from atexit import register  # the process's final word, read by `acclint capture`

    def at_exit():
        if "acclint.runtime_checks.capture_hooks.child" in sys.modules:
            sys.modules["acclint.runtime_checks.capture_hooks.child"].at_exit()

    register(at_exit)


try:
    _install()
finally:
    _run_hidden_sitecustomize()
