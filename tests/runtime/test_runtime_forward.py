"""The data stage and the forward stage, with real torch and real MindSpore.

Each case injects one difference into an otherwise exact port (weights moved by transfer_weights)
and checks that compare names it as the cause, at the right place, with everything downstream
marked as its consequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

from acclint.runtime import capture, compare, transfer_weights

WIDTH, IN, OUT, BATCH = 16, 8, 4, 32


@dataclass
class Side:
    model: Any
    optimizer: Any
    loss_fn: Callable
    batch: Any

    def capture(self, **options: Any) -> Any:
        return capture(self.model, self.optimizer, self.loss_fn, self.batch, **options)


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {
        "inputs": rng.standard_normal((BATCH, IN)).astype(np.float32),
        "targets": rng.standard_normal((BATCH, OUT)).astype(np.float32),
        "ids": np.arange(BATCH, dtype=np.int64),  # carried along, not used by the loss
    }


def torch_side(torch: Any, act: Callable | None = None, gelu: Any = None, data: dict | None = None) -> Side:
    """fc1 -> ln -> act (functional, relu by default) -> fc2 -> [gelu module] -> head."""
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(IN, WIDTH)
            self.ln = nn.LayerNorm(WIDTH)
            self.fc2 = nn.Linear(WIDTH, WIDTH)
            self.act = gelu if gelu is not None else nn.ReLU()
            self.head = nn.Linear(WIDTH, OUT)

        def forward(self, x: Any) -> Any:
            h = (act or torch.relu)(self.ln(self.fc1(x)))
            return self.head(self.act(self.fc2(h)))

    model = Net()
    data = data or inputs()
    batch = {key: torch.from_numpy(value.copy()) for key, value in data.items()}

    def loss_fn(model: Any, batch: Any) -> Any:
        return F.mse_loss(model(batch["inputs"]), batch["targets"])

    return Side(model, torch.optim.SGD(model.parameters(), lr=0.1), loss_fn, batch)


def ms_side(ms: Any, act: Callable | None = None, gelu: Any = None, data: dict | None = None) -> Side:
    nn, ops = ms.nn, ms.ops

    class Net(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Dense(IN, WIDTH)
            self.ln = nn.LayerNorm((WIDTH,), epsilon=1e-5)
            self.fc2 = nn.Dense(WIDTH, WIDTH)
            self.act = gelu if gelu is not None else nn.ReLU()
            self.head = nn.Dense(WIDTH, OUT)

        def construct(self, x: Any) -> Any:
            h = (act or ops.relu)(self.ln(self.fc1(x)))
            return self.head(self.act(self.fc2(h)))

    model = Net()
    model.set_train()
    data = data or inputs()
    # MindSpore ports commonly carry int32 labels and ids: compared by value, not by dtype.
    batch = {key: ms.Tensor(value.astype(np.int32) if value.dtype == np.int64 else value) for key, value in data.items()}

    def loss_fn(model: Any, batch: Any) -> Any:
        return ops.mse_loss(model(batch["inputs"]), batch["targets"])

    return Side(model, nn.SGD(model.trainable_params(), learning_rate=0.1), loss_fn, batch)


def ported(torch: Any, ms: Any, **options: Any) -> tuple[Side, Side]:
    torch_options = {k[6:]: v for k, v in options.items() if k.startswith("torch_")}
    ms_options = {k[3:]: v for k, v in options.items() if k.startswith("ms_")}
    left, right = torch_side(torch, **torch_options), ms_side(ms, **ms_options)
    transfer_weights(left.model, right.model)
    return left, right


def stage_line(result: Any, title: str) -> str:
    return next(line for line in result.verdict().splitlines() if f" {title} ...." in line)


# ---------------------------------------------------------------------------- an exact port
def test_exact_port_is_clean_with_activations_within_tolerance(torch, ms):
    left, right = ported(torch, ms)
    a, b = left.capture(), right.capture()
    result = compare(a, b)
    assert result.ok, result.verdict()
    # Both sides really recorded the forward pass: every module, leaf inputs, the model's output.
    outputs = [(r.name, r.call) for r in a.forward if r.io == "output"]
    assert outputs == [("fc1", 0), ("ln", 0), ("fc2", 0), ("act", 0), ("head", 0), ("", 0)]
    assert [(r.name, r.io) for r in b.forward] == [(r.name, r.io) for r in a.forward]
    assert stage_line(result, "forward").endswith("ok: 6 module output(s) of 6 module(s) within tolerance")
    # int64 ids on the torch side, int32 on the MindSpore side: the same values, so the same data.
    ids = {v.path: v.dtype for v in a.batch}, {v.path: v.dtype for v in b.batch}
    assert ids[0]["ids"] == "int64" and ids[1]["ids"] == "int32"
    assert "ids int64 vs int32: same values" in stage_line(result, "data")
    # Not a vacuous match: the activations are not bit-identical across frameworks, only close.
    assert any(x.values[0].sha256 != y.values[0].sha256 for x, y in zip(a.forward, b.forward))


# ---------------------------------------------------------------------------- data
def test_one_changed_value_in_one_sample_is_batch_and_nothing_upstream(torch, ms):
    changed = inputs()
    changed["inputs"][5, 3] += 0.5
    left, right = ported(torch, ms, ms_data=changed)
    result = compare(left.capture(), right.capture())
    assert [(m.kind, m.name) for m in result.causes] == [("batch", "inputs")], result.verdict()
    assert "in 1 of 32 samples (index 5)" in result.causes[0].message
    downstream = [m for m in result.mismatches if not m.is_cause]
    assert {m.kind for m in downstream} >= {"activation", "loss"}
    first_activation = next(m for m in downstream if m.kind == "activation")
    assert first_activation.name == "fc1" and first_activation.consequence_of == "batch"
    assert all(m.consequence_of in {"batch", "activation"} for m in downstream)
    assert result.verdict().splitlines()[4].startswith(" 1. data ...") and "fix 'data' first" in result.verdict()


# ---------------------------------------------------------------------------- forward
def test_functional_activation_changed_inside_forward_is_located(torch, ms):
    leaky = lambda h: torch.nn.functional.leaky_relu(h, 0.2)  # noqa: E731 - the port used relu
    left, right = ported(torch, ms, torch_act=leaky)
    result = compare(left.capture(), right.capture())
    assert [(m.kind, m.name) for m in result.causes] == [("activation", "fc2")], result.verdict()
    message = result.causes[0].message
    assert "inputs of fc2 already differ while the output of ln matched" in message
    assert "between ln and fc2" in message
    # Weights and settings are clean; the loss and what follows are consequences.
    assert not {"init-weights", "module-config", "batch"} & {m.kind for m in result.mismatches}
    assert {m.consequence_of for m in result.mismatches if not m.is_cause} == {"activation"}
    text = result.verdict()
    forward = text[text.index(" forward ...."):text.index(" step-0 loss")]
    assert "first diverging module: fc2" in forward and "left : norm" in forward and "right: norm" in forward
    assert "last that matched: ln" in forward


def test_difference_in_the_top_level_forward_after_the_last_module(torch, ms):
    left, right = ported(torch, ms)
    inner = left.model.forward
    left.model.forward = lambda x: inner(x) * 1.01  # a scaling the port lost, after the head
    result = compare(left.capture(), right.capture())
    assert [(m.kind, m.name) for m in result.causes] == [("activation", "<model>")], result.verdict()
    assert "every module inside it matched" in result.causes[0].message and "after head" in result.causes[0].message


def test_mindspore_gelu_tanh_default_is_module_config_with_the_activation_as_consequence(torch, ms):
    left, right = ported(torch, ms, torch_gelu=torch.nn.GELU(), ms_gelu=ms.nn.GELU())
    result = compare(left.capture(), right.capture())
    assert [(m.kind, m.name, m.left, m.right) for m in result.causes] == [
        ("module-config", "act.approximate", "none", "tanh")
    ], result.verdict()
    activations = [m for m in result.mismatches if m.kind == "activation"]
    assert activations[0].name == "act" and activations[0].consequence_of == "module-config"
    assert all(m.consequence_of == "activation" for m in activations[1:])
    assert "(follows from module settings)" in stage_line(result, "forward")
    # Passing approximate=False on the MindSpore side is the fix, and then everything matches.
    left, right = ported(torch, ms, torch_gelu=torch.nn.GELU(), ms_gelu=ms.nn.GELU(approximate=False))
    fixed = compare(left.capture(), right.capture())
    assert fixed.ok, fixed.verdict()


def test_a_setting_that_never_ran_before_the_diverging_module_does_not_explain_it(torch, ms):
    # GELU differs (module-config at act) but the forward already diverges earlier, at fc2.
    leaky = lambda h: torch.nn.functional.leaky_relu(h, 0.2)  # noqa: E731
    left, right = ported(torch, ms, torch_act=leaky, torch_gelu=torch.nn.GELU(), ms_gelu=ms.nn.GELU())
    result = compare(left.capture(), right.capture())
    assert [(m.kind, m.name) for m in result.causes] == [("module-config", "act.approximate"), ("activation", "fc2")]


# ---------------------------------------------------------------------------- hooks
def torch_hook_count(model: Any) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def ms_hook_count(model: Any) -> int:
    return sum(len(c._lazy_forward_hook or ()) + len(c._lazy_forward_pre_hook or ()) for _, c in model.cells_and_names())


class Broken(Exception):
    pass


def test_forward_that_raises_removes_the_hooks_and_says_where_torch(torch):
    side = torch_side(torch)
    fc2 = side.model.fc2
    before = {name: p.detach().clone() for name, p in side.model.named_parameters()}

    def fail(*_: Any) -> None:
        raise Broken("shape mismatch in the user's layer")

    handle = fc2.register_forward_hook(fail)
    assert torch_hook_count(side.model) == 1
    with pytest.raises(Broken) as raised:
        side.capture()
    handle.remove()
    assert torch_hook_count(side.model) == 0  # ours are gone too
    notes = "\n".join(getattr(raised.value, "__notes__", []))
    assert "in module 'fc2' (Linear)" in notes and "hooks were removed" in notes
    assert all(torch.equal(before[name], p) for name, p in side.model.named_parameters())
    assert side.capture().forward  # and the next capture works


def test_forward_that_raises_removes_the_hooks_and_says_where_mindspore(ms):
    side = ms_side(ms)
    handle = side.model.fc2.register_forward_hook(lambda *_: None)
    assert ms_hook_count(side.model) == 1  # the counter sees hooks
    handle.remove()

    def fail(*_: Any) -> None:
        raise Broken("the user's cell failed")

    handle = side.model.head.register_forward_hook(fail)
    with pytest.raises(Broken) as raised:
        side.capture()
    handle.remove()
    assert ms_hook_count(side.model) == 0
    assert "in module 'head' (Dense)" in "\n".join(getattr(raised.value, "__notes__", []))
    # The next capture works: the adapter clears the graph PyNative kept from the failed forward
    # (without that, every later value_and_grad in the process fails in MindSpore 2.10).
    assert side.capture().forward


def test_activations_can_be_switched_off(torch):
    fingerprint = torch_side(torch).capture(activations=False)
    assert fingerprint.forward is None and fingerprint.batch is not None
    assert "not recorded on the left" in stage_line(compare(fingerprint, torch_side(torch).capture()), "forward")


def test_shared_module_calls_are_matched_in_order(torch):
    # A module called twice is recorded per call, and each call is matched with the same call.
    def twice(side: Side, scale: float) -> Side:
        inner = side.model.forward
        side.model.forward = lambda x: inner(x) + side.model.head(side.model.fc2(x @ side.model.fc1.weight.T) * scale)
        return side

    a = twice(torch_side(torch), 1.0).capture()
    assert [r.call for r in a.forward if r.name == "head" and r.io == "output"] == [0, 1]
    assert compare(a, twice(torch_side(torch), 1.0).capture()).ok
    result = compare(a, twice(torch_side(torch), 1.5).capture())
    first = result.causes[0]
    assert (first.kind, first.name) == ("activation", "head"), result.verdict()
    assert "inputs of head already differ while the output of fc2 matched" in first.message
    # The first call of head matched: the one that differs is the second.
    assert [(r.name, r.call) for r in a.forward if r.io == "output"].count(("head", 1)) == 1
