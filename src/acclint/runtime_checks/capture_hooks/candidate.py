"""A module called at the top of the stack during step 0: a candidate for the model being trained."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from acclint.runtime_checks.capture.forward import ForwardRecorder
from acclint.runtime_checks.adapters.frameworks import adapter_for
from acclint.runtime_checks.adapters.torch_adapter import unwrap


class Candidate:
    """A candidate model: its forward recorder and the inputs of its top-level calls."""

    def __init__(self, module: Any, on_error: "Callable[[BaseException], None]") -> None:
        self.module = module
        self.adapter = adapter_for(module, None)
        self.recorder = ForwardRecorder(self.adapter, on_error)
        self.initial_state: list[tuple[Any, Any]] | None = None  # (buffer, its value before the first forward)
        self.names = {id(m): name for name, m in unwrap(module).named_modules()}
        self.inputs: list[Any] = []
        self.hooks: contextlib.ExitStack | None = None

    def start_recording(self, called: Any, args: Any) -> None:
        """Hooks on every module from now until the backward pass. The module being called had
        its pre-hooks collected before these existed, so its entry is replayed here."""
        if self.hooks is not None:
            return
        if self.initial_state is None:  # running statistics move with every training forward
            self.initial_state = [(item.tensor, item.tensor.detach().clone()) for item in self.adapter.named_state()]
        self.hooks = contextlib.ExitStack()
        self.hooks.enter_context(self.recorder.hooks())
        name = self.names.get(id(called))
        if name is not None:
            leaf = next(called.children(), None) is None
            self.recorder._enter_hook(name, type(called).__name__, leaf)(args, {})

    def stop_recording(self) -> None:
        if self.hooks is not None:
            self.hooks.close()
            self.hooks = None

    @contextlib.contextmanager
    def state_before_forward(self) -> Iterator[None]:
        """The buffers as they were before step 0's first forward, for the duration of the block."""
        swapped = []
        try:
            for live, initial in self.initial_state or []:
                swapped.append((live, live.detach().clone()))
                live.data.copy_(initial)
            yield
        finally:
            for live, current in swapped:
                live.data.copy_(current)

    def batch(self) -> Any:
        return self.inputs[0] if len(self.inputs) == 1 else self.inputs
