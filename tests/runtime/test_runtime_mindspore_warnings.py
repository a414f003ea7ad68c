"""acclint's MindSpore adapter uses no deprecated MindSpore API and reads no setting that does not
apply (MindSpore logs both as warnings of its own, ~40 lines per capture before this test)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import acclint

MARK = "ACCLINT-CALLS-START"

# MindSpore itself logs while it is imported and while the user builds the network and the
# optimizer; only what is logged once acclint's calls start counts.
SCRIPT = textwrap.dedent(f"""
    import sys
    import warnings
    import numpy as np
    import mindspore as ms
    ms.set_context(mode=ms.PYNATIVE_MODE)
    from acclint.runtime import Probe, capture, transfer_weights

    def build():
        net = ms.nn.SequentialCell([ms.nn.Dense(4, 8), ms.nn.BatchNorm1d(8), ms.nn.ReLU(), ms.nn.Dense(8, 1)])
        net.set_train()
        return net, ms.nn.Adam(net.trainable_params(), learning_rate=1e-3)

    net, optimizer = build()
    other, other_optimizer = build()
    batch = (ms.Tensor(np.ones((6, 4), np.float32)), ms.Tensor(np.zeros((6, 1), np.float32)))
    loss_fn = lambda model, b: ms.ops.mse_loss(model(b[0]), b[1])
    print("{MARK}", file=sys.stderr, flush=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("error", DeprecationWarning)
        warnings.simplefilter("error", PendingDeprecationWarning)
        transfer_weights(net, other)
        capture(net, optimizer, loss_fn, batch)
        probe = Probe(other, other_optimizer)
        grad_fn = ms.value_and_grad(lambda: loss_fn(other, batch), None, other_optimizer.parameters)
        loss, grads = grad_fn()
        other_optimizer(grads)
        probe.record(0, loss, grads=grads, batch=batch)
        probe.fingerprint()
    print("python warnings:", len(caught), [str(w.message) for w in caught])
""")


def test_no_mindspore_warnings_from_acclint_calls(ms, tmp_path):
    script = tmp_path / "capture_ms.py"
    script.write_text(SCRIPT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(acclint.__file__).parents[1])}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "python warnings: 0 []" in run.stdout
    after = run.stderr.partition(MARK)[2]
    assert run.stderr.count(MARK) == 1
    assert "deprecated" not in after and "[WARNING]" not in after, after
