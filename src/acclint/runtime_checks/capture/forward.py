"""The forward stage: what every module produced (and every leaf module received) during step 0.

Hooks exist only inside `ForwardRecorder.hooks()`, around the captured forward; they are
removed when it ends, also when the forward raises. They only read: statistics and hashes are
computed on the side (on the device for torch), so the step itself runs exactly as without them. A tensor seen twice
(a container's output that is its last child's output, a leaf's input that is the previous
leaf's output) is summarised once.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from acclint.runtime_checks.model.fingerprint import ActivationRecord, ValueRecord
from acclint.runtime_checks.adapters.records import named_tensors, value_record

# Tensors recorded per module call at most (a module returning a long list of tensors).
MAX_VALUES_PER_CALL = 16
# Values kept per tensor at evenly spaced positions (about 1 KB of JSON per tensor).
SPACED_VALUES = 64


class ForwardRecorder:
    """`on_error`: where a failure of the recording goes, instead of into the forward it watches
    (the hooks of `acclint capture` and the callbacks: the user's run must go on); the recording
    stops there. Without it (capture()) the error is raised."""

    def __init__(self, adapter: Any, on_error: "Callable[[BaseException], None] | None" = None) -> None:
        self.adapter = adapter
        self.on_error = on_error
        self.broken = False
        self.records: list[ActivationRecord] = []
        self._calls: dict[str, int] = {}
        self._open: list[tuple[str, str, int]] = []  # module calls entered and not yet left
        self._seen: dict[int, tuple[Any, Any, ValueRecord]] = {}  # id -> (tensor, version, record)

    @contextlib.contextmanager
    def hooks(self) -> Iterator["ForwardRecorder"]:
        """Hooks on every module for the duration of the block; removed on any exit."""
        handles: list[Any] = []
        try:
            for name, module, leaf in self.adapter.modules():
                cls = type(module).__name__
                handles += self.adapter.add_forward_hooks(
                    module, self._enter_hook(name, cls, leaf), self._leave_hook(name, cls, leaf)
                )
            yield self
        except Exception as error:
            if self._open and hasattr(error, "add_note"):
                name, cls, _ = self._open[-1]
                error.add_note(
                    f"acclint.runtime.capture: raised inside the captured step-0 forward, in module "
                    f"{_shown(name)} ({cls}); the forward hooks were removed and the step rolled back"
                )
            raise
        finally:
            for handle in handles:
                handle.remove()
            self._seen.clear()  # drops the references to the step's tensors

    # ------------------------------------------------------------------ hooks
    def _guard(self, hook: Callable[..., None]) -> Callable[..., None]:
        if self.on_error is None:
            return hook

        def guarded(*args: Any) -> None:
            if self.broken:
                return
            try:
                hook(*args)
            except Exception as error:
                self.broken = True
                self.on_error(error)

        return guarded

    def _enter_hook(self, name: str, cls: str, leaf: bool) -> Any:
        @self._guard
        def enter(args: Any, kwargs: Any) -> None:
            call = self._calls.get(name, 0)
            self._calls[name] = call + 1
            self._open.append((name, cls, call))
            if leaf:
                inputs = list(args) + ([kwargs] if kwargs else [])
                self._record(name, cls, call, "input", leaf, inputs if len(inputs) != 1 else inputs[0])

        return enter

    def _leave_hook(self, name: str, cls: str, leaf: bool) -> Any:
        @self._guard
        def leave(output: Any) -> None:
            call = self._calls.get(name, 1) - 1
            if self._open and self._open[-1][0] == name:
                call = self._open.pop()[2]
            self._record(name, cls, call, "output", leaf, output)

        return leave

    # ------------------------------------------------------------------ records
    def _record(self, name: str, cls: str, call: int, io: str, leaf: bool, value: Any) -> None:
        values = []
        for path, tensor in named_tensors(value, self.adapter.is_tensor):
            if len(values) == MAX_VALUES_PER_CALL:
                break
            values.append(self._summary(path, tensor))
        if values:
            self.records.append(ActivationRecord(name=name, module=cls, call=call, io=io, leaf=leaf, values=values))

    def _summary(self, path: str, tensor: Any) -> ValueRecord:
        key, version = id(tensor), self.adapter.version(tensor)
        seen = self._seen.get(key)
        if seen is not None and seen[0] is tensor and seen[1] == version:
            record = seen[2]
        else:
            record = value_record("", self.adapter.summary_input(tensor), self.adapter.dtype_name(tensor),
                                  spaced=SPACED_VALUES)
            self._seen[key] = (tensor, version, record)
        return ValueRecord(path=path, shape=record.shape, dtype=record.dtype, stats=record.stats, sha256=record.sha256,
                           sample=record.sample)


def _shown(name: str) -> str:
    return "<model>" if name == "" else repr(name)
