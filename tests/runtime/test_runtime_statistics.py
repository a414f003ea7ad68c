"""Recorded statistics are the true ones: no cancellation when the mean is large against the spread.

A float32 E[x^2] - E[x]^2 recorded a module output of mean 3, std 0.029 with std 0.0286624
(true: 0.0286478) on the torch side and std 0.0 at mean 100, and compare then reported a false
`activation` mismatch against MindSpore, whose host-side sums were float64.
"""

from __future__ import annotations

import numpy as np
import pytest

from acclint.runtime import capture, compare, transfer_weights
from acclint.runtime_checks.adapters.records import summarize

IN, OUT, ROWS = 64, 96, 128


def large_mean_values(mean: float) -> np.ndarray:
    rng = np.random.default_rng(3)
    return (rng.standard_normal((ROWS, OUT)) * 0.029 + mean).astype(np.float32)


@pytest.mark.parametrize("mean", [3.0, 100.0])
def test_torch_and_host_summaries_record_the_true_std(torch, mean):
    values = large_mean_values(mean)
    true_std = float(np.std(values.astype(np.float64)))
    on_device, _ = summarize(torch.from_numpy(values))
    on_host, _ = summarize(values)
    for stats in (on_device, on_host):
        assert stats["std"] == pytest.approx(true_std, rel=1e-9)
        assert stats["mean"] == pytest.approx(float(values.astype(np.float64).mean()), rel=1e-12)
        assert stats["norm"] == pytest.approx(float(np.linalg.norm(values.astype(np.float64))), rel=1e-12)


def torch_shifted_layer(torch, bias: float):
    class Float64Linear(torch.nn.Linear):
        """Summed in float64, then rounded: outputs a few ulps from MindSpore's float32 matmul, as
        two frameworks' kernels are, so compare goes by the statistics, not by equal hashes."""

        def forward(self, x):
            return torch.nn.functional.linear(x.double(), self.weight.double(), self.bias.double()).float()

    torch.manual_seed(0)
    layer = Float64Linear(IN, OUT)
    with torch.no_grad():
        layer.weight.normal_(0.0, 0.029 / IN ** 0.5)
        layer.bias.fill_(bias)
    return layer


@pytest.mark.parametrize("bias", [3.0, 100.0])
def test_a_large_mean_output_records_its_true_std_in_capture(torch, bias):
    layer = torch_shifted_layer(torch, bias)
    x = torch.from_numpy(np.random.default_rng(1).standard_normal((ROWS, IN)).astype(np.float32))
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    fp = capture(layer, optimizer, lambda model, batch: model(batch).square().mean(), x)
    (output,) = [r for r in fp.forward if r.io == "output"]
    expected = layer(x).detach().double().numpy()
    assert expected.std() > 0.01  # the case at hand: a spread far below the mean
    assert output.values[0].stats["std"] == pytest.approx(float(expected.std()), rel=1e-6)


@pytest.mark.parametrize("bias", [3.0, 100.0])
def test_large_mean_outputs_compare_at_parity_across_frameworks(torch, ms, bias):
    torch_layer = torch_shifted_layer(torch, bias)
    ms_layer = ms.nn.Dense(IN, OUT)
    transfer_weights(torch_layer, ms_layer)
    ms_layer.set_train()
    x = np.random.default_rng(1).standard_normal((ROWS, IN)).astype(np.float32)
    left = capture(torch_layer, torch.optim.SGD(torch_layer.parameters(), lr=0.1),
                   lambda model, batch: model(batch).square().mean(), torch.from_numpy(x))
    right = capture(ms_layer, ms.nn.SGD(ms_layer.trainable_params(), learning_rate=0.1),
                    lambda model, batch: model(batch).square().mean(), ms.Tensor(x))
    result = compare(left, right)
    (left_output,), (right_output,) = ([r.values[0] for r in fp.forward if r.io == "output"] for fp in (left, right))
    assert left_output.sha256 != right_output.sha256  # not equal bit for bit: the statistics decide
    assert "activation" not in result.kinds(), result.verdict()
    assert result.ok, result.verdict()


@pytest.mark.parametrize("values", [[np.inf, 1.0, 2.0], [1.0, -np.inf, 2.0], [np.nan, 1.0], [4.0, 4.0, 4.0]],
                         ids=["inf-first", "minus-inf", "nan-first", "constant"])
def test_non_finite_and_constant_values_keep_their_statistics(torch, values):
    """The shift is the first value, unless it is not finite: an infinite value still gives an
    infinite norm and mean (not NaN), a NaN gives NaN, a constant tensor std 0."""
    array = np.array(values, dtype=np.float32)
    on_device, _ = summarize(torch.from_numpy(array))
    on_host, _ = summarize(array)
    with np.errstate(invalid="ignore", over="ignore"):
        wide = array.astype(np.float64)
        expected = {"mean": wide.mean(), "norm": np.sqrt(np.sum(wide * wide)), "min": wide.min(), "max": wide.max()}
    for stats in (on_device, on_host):
        for key, value in expected.items():
            assert stats[key] == pytest.approx(value, nan_ok=True), (key, stats)
    if values[0] == 4.0:
        assert on_device["std"] == on_host["std"] == 0.0
