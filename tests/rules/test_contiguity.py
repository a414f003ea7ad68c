"""ACL501 (`.view()` on a transposed tensor): which views are proved to raise, checked against real
torch, and the `.contiguous()` autofix applied end to end by `acclint scan --fix` / `--diff`."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from acclint.cli import main
from acclint.config import Config
from acclint.linter.facts import Arg, Call, Value
from acclint.linter.engine import scan
from acclint.rules.contiguity import TransposedView
from acclint.rules.view_merge import view_must_raise

RULE = TransposedView()


def _findings(tmp_path: Path, source: str) -> list:
    (tmp_path / "model.py").write_text(textwrap.dedent(source), encoding="utf-8")
    # The rule's own severity: a model file alone proves no training run (tests/linter/test_premises.py).
    result = scan([tmp_path], [RULE], Config(preview=True), jobs=1, cwd=tmp_path)
    assert result.errors == [], result.errors
    return [(f.line, f.severity) for f in result.findings]


def test_head_merge_forms_are_warnings(tmp_path):
    found = _findings(tmp_path, """
        import torch


        class Attention(torch.nn.Module):
            def forward(self, x):
                b, t, c = x.shape
                q = self.q(x).view(b, t, 4, c // 4).transpose(1, 2)
                out = torch.matmul(torch.softmax(q @ q.transpose(-2, -1), -1), q)
                out = out.transpose(1, 2).float().view(b, t, c)
                early = out.contiguous().transpose(1, 2).view(b, t, -1)
                heads = torch.matmul(q, q)
                swapped = heads.swapaxes(2, 1)
                merged = swapped.view(b * t, c)
                return out, early, merged, heads.permute((0, 2, 1, 3)).view(b, t, c)
    """)
    assert found == [(10, "warning"), (11, "warning"), (14, "warning"), (15, "warning")]


def test_views_that_may_only_split_or_whose_dims_are_unknown_stay_info(tmp_path):
    found = _findings(tmp_path, """
        def split(x, b, s, n, d, frames, dim0, dim1, shape):
            sbh = x.transpose(0, 1).view(b, s, n, d)  # (s, b, h) -> (b, s, n, d): splits only
            nhwc = frames.permute(0, 2, 3, 1).view(b, s, 7, 7, d)  # a leading B*T split back into (B, T)
            unknown = x.transpose(dim0, dim1).view(b, s)
            last = x.transpose(-2, -1).view(b, s, d)  # a rank-4 tensor could merge its two leading dims
            return sbh, nhwc, unknown, last, x.mT.view(*shape)
    """)
    assert found == [(3, "info"), (4, "info"), (5, "info"), (6, "info"), (7, "info")]


def test_a_tensor_the_function_did_not_make_may_arrive_transposed_so_its_view_is_info(tmp_path):
    found = _findings(tmp_path, """
        import torch


        def merge(attn_out, model, b, t, c):
            lprobs = model.get_normalized_probs(attn_out)  # another function's result: its strides are unknown
            merged = attn_out.transpose(1, 2).view(b, t, c)  # a parameter: the caller chose its strides
            lprobs = lprobs.transpose(0, 1)
            flat = lprobs.view(-1, c)
            scores = torch.matmul(attn_out, attn_out).transpose(0, 2)
            scores = scores.masked_fill(scores < 0, 0)  # keeps the transposed strides
            scores = scores.transpose(0, 2)  # back to the layout attn_out had
            return merged, flat, scores.view(b * 4, t, c), attn_out.view(attn_out.shape)
    """)
    assert found == [(7, "info"), (9, "info"), (13, "info")]


def test_contiguous_after_the_transpose_or_a_layout_chosen_on_purpose_is_quiet(tmp_path):
    assert _findings(tmp_path, """
        def f(x, b, t, c):
            y = x.transpose(1, 2).contiguous().view(b, t, c)
            column_major = x.t().contiguous().t()
            return y, x.transpose(1, 2).reshape(b, t, c), column_major.view(-1)
    """) == []


def _call(method: str, *dims) -> Call:
    args = tuple(Arg(None, Value(literal=d)) for d in dims)
    return Call(node=0, callee=f"x.{method}", args=args, scope="f", order=0, in_main=False)


TRANSPOSITIONS = [("transpose", 1, 2), ("transpose", 0, 1), ("transpose", -2, -1), ("swapaxes", 0, 2),
                  ("permute", 0, 2, 1, 3), ("permute", 0, 2, 3, 1), ("permute", 2, 0, 1)]


@pytest.mark.parametrize("transposition", TRANSPOSITIONS, ids=lambda t: "-".join(map(str, t)))
def test_a_view_proved_to_raise_raises_in_torch(transposition):
    """Every regrouping of the transposed tensor's dims into fewer or as many (other) sizes that
    `view_must_raise` claims raises does raise in torch, for each rank the dims allow."""
    method, *dims = transposition
    call = _call(method, *dims)
    ranks = [len(dims)] if method == "permute" else range(max(d + 1 if d >= 0 else -d for d in dims), 6)
    proved = 0
    for rank in ranks:
        shape = [2, 3, 5, 7, 11][:rank]
        x = torch.zeros(shape)
        x = x.permute(*dims) if method == "permute" else getattr(x, method)(*dims)
        for view_dims in range(1, rank + 1):
            if not view_must_raise(call, view_dims):
                continue
            for cuts in itertools.combinations(range(1, rank), view_dims - 1):
                bounds = [0, *cuts, rank]
                sizes = [int(torch.tensor(x.shape[a:b]).prod()) for a, b in zip(bounds, bounds[1:])]
                if sizes == list(x.shape):
                    continue  # the identity view, which the proof sets aside
                proved += 1
                with pytest.raises(RuntimeError, match="view size is not compatible"):
                    x.view(*sizes)
    assert proved > 0


def test_views_that_can_work_are_not_proved_to_raise():
    assert not view_must_raise(_call("transpose", 0, 1), 4)  # splits only
    assert not view_must_raise(_call("permute", 0, 2, 3, 1), 5)
    assert not view_must_raise(_call("permute", 0, 1, 3, 2), 3)  # merges dims 0 and 1, which stay in order
    assert torch.zeros(2, 3, 5, 7).permute(0, 1, 3, 2).view(6, 7, 5).shape == (6, 7, 5)
    assert not view_must_raise(_call("transpose", -2, -1), 3)  # a rank-4 tensor may merge dims 0 and 1
    assert not view_must_raise(_call("transpose", 1, -1), 2)  # mixed signs: the dims are unknown
    assert not view_must_raise(_call("permute", 0, 0, 1), 2)  # not a permutation


SOURCE = '''\
import torch


def merge(probs, value_states, bsz, q_len, hidden):
    attn_out = torch.matmul(probs, value_states)
    # heads back into the hidden size
    attn_out = attn_out.transpose(1, 2).view(bsz, q_len, hidden)
    return attn_out, attn_out.transpose(0, 1).view(q_len, bsz, 4, -1)
'''


def _cli(root: Path, monkeypatch, *args: str):
    monkeypatch.chdir(root)
    return CliRunner().invoke(main, ["scan", ".", "--select", "ACL501", *args])


def test_fix_inserts_contiguous_before_the_raising_view_only(tmp_path, monkeypatch):
    (tmp_path / "model.py").write_text(SOURCE, encoding="utf-8")
    done = _cli(tmp_path, monkeypatch, "--fix")
    fixed = (tmp_path / "model.py").read_text(encoding="utf-8")
    assert "attn_out = attn_out.transpose(1, 2).contiguous().view(bsz, q_len, hidden)" in fixed
    assert "attn_out.transpose(0, 1).view(q_len, bsz, 4, -1)" in fixed  # info: a split may work and alias
    assert "# heads back into the hidden size" in fixed
    assert "1 more with --unsafe-fixes" in done.output

    _cli(tmp_path, monkeypatch, "--fix", "--unsafe-fixes")
    fixed = (tmp_path / "model.py").read_text(encoding="utf-8")
    assert "attn_out.transpose(0, 1).contiguous().view(q_len, bsz, 4, -1)" in fixed
    assert _cli(tmp_path, monkeypatch).exit_code == 0
    assert "ACL501" not in _cli(tmp_path, monkeypatch, "--fail-on", "info").output

    # The fixed code runs where the original raised, with the same values.
    namespace: dict = {}
    exec(compile(fixed, "model.py", "exec"), namespace)
    probs = torch.softmax(torch.arange(2 * 4 * 3 * 3, dtype=torch.float32).view(2, 4, 3, 3), dim=-1)
    value_states = torch.arange(2 * 4 * 3 * 5, dtype=torch.float32).view(2, 4, 3, 5)
    merged, _ = namespace["merge"](probs, value_states, 2, 3, 20)
    assert torch.equal(merged, torch.matmul(probs, value_states).transpose(1, 2).reshape(2, 3, 20))
    exec(compile(SOURCE, "model.py", "exec"), namespace)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        namespace["merge"](probs, value_states, 2, 3, 20)


def test_diff_shows_the_fix_and_writes_nothing(tmp_path, monkeypatch):
    (tmp_path / "model.py").write_text(SOURCE, encoding="utf-8")
    done = _cli(tmp_path, monkeypatch, "--diff")
    assert done.exit_code == 1
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == SOURCE
    assert "-    attn_out = attn_out.transpose(1, 2).view(bsz, q_len, hidden)\n" in done.stdout
    assert "+    attn_out = attn_out.transpose(1, 2).contiguous().view(bsz, q_len, hidden)\n" in done.stdout
    assert ".contiguous().view(q_len" not in done.stdout


def test_a_contiguous_before_the_transpose_does_not_hide_a_transposed_gradient(tmp_path):
    """The layout fix for ACL501 is shared: ACL502 sees `grad.contiguous().t()` as the transposed view it is,
    and still leaves the deliberate round trip `w.t().contiguous().t()` alone."""
    from acclint.rules.contiguity import TransposedMatmulInBackward

    (tmp_path / "layer.py").write_text(textwrap.dedent("""
        import torch


        class Linear(torch.autograd.Function):
            @staticmethod
            def backward(ctx, grad_output):
                total_input, weight = ctx.saved_tensors
                grad_weight = grad_output.contiguous().t().matmul(total_input)
                column_major = grad_output.t().contiguous().t()
                return column_major.matmul(weight), grad_weight
    """), encoding="utf-8")
    result = scan([tmp_path], [TransposedMatmulInBackward()], Config(), jobs=1, cwd=tmp_path)
    assert [(f.rule, f.line) for f in result.findings] == [("ACL502", 9)]
