"""torch.compile and the dtypes beyond float32, under the zero-edit observer (real torch, CPU).

* A compiled model and its eager twin compare at parity: wrapper attributes (`_orig_mod.`,
  FSDP's) and a whole-model `module.` prefix are not part of a parameter's name; statistics are
  taken before an in-place ReLU changes the tensor; acclint's hooks run outside Dynamo's graphs.
* float64 and bfloat16 models are recorded and compared like float32 ones.
"""

from __future__ import annotations

import pytest
from test_runtime_capture_hooks import observe

from acclint.runtime import compare


def network(torch, dtype=None, compiled_block=False):
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(inplace=True))
    if compiled_block:
        block = torch.compile(block, backend="eager")  # a compiled submodule: names carry `_orig_mod.`
    model = torch.nn.Sequential(block, torch.nn.Linear(16, 1))
    return model if dtype is None else model.to(dtype)


def loop(torch, model, dtype=None, steps=2, compiled=False):
    dtype = dtype or torch.float32
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    called = torch.compile(model, backend="aot_eager") if compiled else model
    generator = torch.Generator().manual_seed(1)
    inputs = torch.randn(4, 8, generator=generator).to(dtype)
    targets = torch.randn(4, 1, generator=generator).to(dtype)

    def run():
        for _ in range(steps):
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(called(inputs), targets).backward()
            optimizer.step()

    return run


def test_compiled_and_eager_are_at_parity(torch):
    eager = observe(loop(torch, network(torch)))["fingerprint"]
    got = observe(loop(torch, network(torch), compiled=True))
    assert "error" not in got, got.get("error")
    compiled = got["fingerprint"]
    result = compare(eager, compiled)
    assert result.ok, result.verdict()
    forward = next(o for o in result.stages if o.stage == "forward")
    assert not forward.skipped and "module output(s)" in forward.summary
    # the in-place ReLU: the Linear before it had negative outputs when recorded
    linear = next(r for r in compiled.forward if r.name == "0.0" and r.io == "output")
    assert linear.values[0].stats["min"] < 0


def test_a_compiled_submodule_keeps_the_plain_names(torch):
    plain = observe(loop(torch, network(torch)))["fingerprint"]
    nested = observe(loop(torch, network(torch, compiled_block=True)))["fingerprint"]
    assert any("_orig_mod" in p.name for p in nested.params)  # recorded as the module holds them
    result = compare(plain, nested)
    assert result.ok, result.verdict()


def test_a_ddp_style_module_prefix_is_not_part_of_the_name(torch):
    class Wrapper(torch.nn.Module):  # holds the model as DDP does, under `module`
        def __init__(self, module):
            super().__init__()
            self.module = module

        def forward(self, *args):
            return self.module(*args)

    plain = observe(loop(torch, network(torch)))["fingerprint"]
    wrapped = observe(loop(torch, Wrapper(network(torch))))["fingerprint"]
    assert all(p.name.startswith("module.") for p in wrapped.params)
    result = compare(plain, wrapped)
    assert result.ok, result.verdict()


@pytest.mark.parametrize("dtype_name", ["float64", "bfloat16"])
def test_float64_and_bfloat16_models(torch, dtype_name):
    dtype = getattr(torch, dtype_name)
    got = observe(loop(torch, network(torch, dtype), dtype=dtype))
    assert "error" not in got, got.get("error")
    fingerprint = got["fingerprint"]
    assert {p.dtype for p in fingerprint.params} == {dtype_name}
    assert fingerprint.step.grad_norm > 0 and all(n > 0 for n in fingerprint.step.update_norms.values())
    again = observe(loop(torch, network(torch, dtype), dtype=dtype))["fingerprint"]
    assert compare(fingerprint, again).ok
    other = observe(loop(torch, network(torch, torch.float32)))["fingerprint"]
    result = compare(other, fingerprint)
    assert "param-shape" in {m.kind for m in result.causes}  # the dtype is named as such
    # the parameter is named in the text
    assert f"[param-shape] parameter 0.0.weight: dtype float32 on the left, {dtype_name} on the right" in result.verdict()
