"""Category `framework-default`: MindSpore APIs whose defaults differ from the PyTorch ones a model was
ported from (docs/knowledge/framework-defaults.md). The table is knowledge/framework_defaults.toml; each
message gives both frameworks' values. `mindspore.mint` follows torch's defaults and is not reported."""

from __future__ import annotations

from functools import lru_cache
from typing import ClassVar, Optional

from acclint.knowledge import table
from acclint.linter.context import FileContext, ProgramContext
from acclint.linter.facts import Call, FileFacts
from acclint.linter.rulebase import Example, Rule, RuleDoc
from acclint.rules.base import ProgramRule, absence, absence_premise
from acclint.rules.flow import calls_named, calls_with_method
from acclint.rules.program_facts import ProgramFacts


@lru_cache(maxsize=None)
def _entry(key: str) -> dict:
    return table("framework_defaults")[key]


def _given(call: Call, keyword: str, position: Optional[int]) -> bool:
    return call.arg(keyword, position) is not None or any(a.star for a in call.args)


class MindSporeDefault(Rule):
    """A MindSpore API called so that a default differing from PyTorch applies."""

    category = "framework-default"
    severity = "warning"
    key: ClassVar[str]

    def problem(self, call: Call, entry: dict) -> Optional[str]:
        """What the call leaves to the default, or None."""
        if _given(call, entry["keyword"], entry.get("position")):
            return None
        return f"no `{entry['keyword']}`"

    def check_file(self, ctx: FileContext) -> None:
        entry = _entry(self.key)
        for call in calls_named(ctx.facts, frozenset(entry["apis"])):
            problem = self.problem(call, entry)
            if problem:
                ctx.report(self, call.node, f"`{call.callee}` with {problem}: MindSpore uses {entry['mindspore']}; "
                           f"PyTorch uses {entry['torch']}.", fix=self.doc.fix)


def _doc(what: str, why: str, fix: str, key: str) -> RuleDoc:
    return RuleDoc(what, why, fix, references=(_entry(key)["source"],))


class LayerNormEpsilon(MindSporeDefault):
    code = "ACL701"
    name = "mindspore-layernorm-epsilon"
    key = "layernorm"
    summary = "mindspore.nn.LayerNorm without `epsilon` (1e-7; PyTorch 1e-5)"
    doc = _doc("Reports `mindspore.nn.LayerNorm(...)` without `epsilon`.",
               "MindSpore's default epsilon is **1e-7**, PyTorch's `nn.LayerNorm` eps is **1e-5** (100x larger). "
               "For rows with small variance the normalised values differ, and so does every layer after.",
               "Pass the PyTorch model's value: `nn.LayerNorm((hidden,), epsilon=1e-5)` (or use "
               "`mindspore.mint.nn.LayerNorm`, eps=1e-5).", "layernorm")
    invalid = (Example.script("""
        from mindspore import nn


        class Block(nn.Cell):
            def __init__(self, hidden):
                super().__init__()
                self.norm = nn.LayerNorm((hidden,))  # expect: ACL701
    """),)
    valid = (Example.script("""
        from mindspore import nn, mint


        class Block(nn.Cell):
            def __init__(self, hidden):
                super().__init__()
                self.norm = nn.LayerNorm((hidden,), epsilon=1e-5)
                self.norm2 = mint.nn.LayerNorm(hidden)
    """),)


class BatchNormMomentum(MindSporeDefault):
    code = "ACL702"
    name = "mindspore-batchnorm-momentum"
    key = "batchnorm"
    summary = "mindspore.nn.BatchNorm given a PyTorch-convention momentum (< 0.5)"
    doc = _doc("Reports `mindspore.nn.BatchNorm1d/2d/3d(momentum=m)` with a literal m below 0.5.",
               "MindSpore's momentum weights the **old** running statistic (default **0.9**); PyTorch's weights the "
               "**new** batch statistic (default **0.1**). The defaults agree; copying `momentum=0.1` from PyTorch "
               "makes MindSpore keep 10% of the history, so running mean/var track the last batch and evaluation "
               "diverges.", "Convert: MindSpore momentum = 1 - PyTorch momentum (0.1 -> 0.9).", "batchnorm")
    invalid = (Example.script("""
        import mindspore.nn as nn

        bn = nn.BatchNorm2d(64, momentum=0.1)  # expect: ACL702
    """),)
    valid = (Example.script("""
        import mindspore.nn as nn

        bn = nn.BatchNorm2d(64, momentum=0.9)
        bn2 = nn.BatchNorm2d(64)
    """),)

    def problem(self, call: Call, entry: dict) -> Optional[str]:
        arg = call.arg(entry["keyword"], entry["position"])
        value = arg.value.literal if arg is not None else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < entry["below"]:
            return f"momentum={value} (PyTorch convention; MindSpore's equivalent is {1 - value:g})"
        return None


class GeluApproximate(MindSporeDefault):
    code = "ACL703"
    name = "mindspore-gelu-approximate"
    key = "gelu"
    summary = "mindspore.nn.GELU() defaults to the tanh approximation (PyTorch: exact erf)"
    doc = _doc("Reports `mindspore.nn.GELU()` without `approximate`.",
               "MindSpore's `nn.GELU` defaults to `approximate=True` (tanh form); PyTorch's `nn.GELU` computes the exact "
               "erf form (`approximate='none'`). The two differ by up to ~1e-3 per activation, enough to move a "
               "loss curve in fp32 comparisons.",
               "`nn.GELU(approximate=False)` (or `mindspore.mint.nn.GELU()`) to match PyTorch's default.", "gelu")
    invalid = (Example.script("""
        from mindspore import nn

        act = nn.GELU()  # expect: ACL703
    """),)
    valid = (Example.script("""
        from mindspore import nn

        act = nn.GELU(approximate=False)
    """),)


class DropoutKeepProb(MindSporeDefault):
    code = "ACL704"
    name = "mindspore-dropout-positional"
    key = "dropout"
    summary = "mindspore.nn.Dropout(x) positional: x is keep_prob, not PyTorch's drop probability"
    doc = _doc("Reports `mindspore.nn.Dropout(x)` with a positional argument that reads as a drop probability "
               "(a literal below 0.5, or a name containing `drop` / `p`), or `keep_prob=` below 0.5.",
               "The first parameter of `mindspore.nn.Dropout` is still `keep_prob` (the probability to **keep**; "
               "deprecated, `p` is the drop probability). `nn.Dropout(0.1)` copied from PyTorch keeps **10%** of "
               "activations and scales them by 10, where PyTorch drops 10%.",
               "Pass the drop probability by keyword: `nn.Dropout(p=0.1)`.", "dropout")
    invalid = (Example.script("""
        from mindspore import nn

        drop = nn.Dropout(0.1)  # expect: ACL704


        class Head(nn.Cell):
            def __init__(self, dropout_rate):
                super().__init__()
                self.drop = nn.Dropout(dropout_rate)  # expect: ACL704
    """),)
    valid = (Example.script("""
        from mindspore import nn

        drop = nn.Dropout(p=0.1)
        legacy = nn.Dropout(keep_prob=0.9)
    """),)

    def problem(self, call: Call, entry: dict) -> Optional[str]:
        arg = call.arg("keep_prob", 0)
        if arg is None:
            return None
        literal = arg.value.literal
        if isinstance(literal, (int, float)) and not isinstance(literal, bool):
            if literal < 0.5:
                return f"keep_prob={literal} (keeps {literal:.0%} of activations)"
            return None
        name = (arg.value.dotted or "").rsplit(".", 1)[-1].lower()
        if arg.keyword is None and name and ("drop" in name or name == "p" or name.endswith("_p")) and "keep" not in name:
            return f"`{arg.value.dotted}` as its first argument, which is keep_prob"
        return None


class EmbeddingInit(MindSporeDefault):
    code = "ACL705"
    name = "mindspore-embedding-init"
    key = "embedding"
    summary = "mindspore.nn.Embedding without `embedding_table` initialises with N(0, 0.01) (PyTorch N(0, 1))"
    doc = _doc("Reports `mindspore.nn.Embedding(...)` without `embedding_table`.",
               "MindSpore's default `embedding_table='normal'` draws from N(0, **0.01**); PyTorch's `nn.Embedding` "
               "from N(0, **1**): 100x smaller initial embeddings, so a from-scratch run starts from another "
               "function (irrelevant only when a checkpoint is loaded over it).",
               "Pass the initialiser explicitly, e.g. `embedding_table=Normal(sigma=1.0)`, or load the same "
               "initial checkpoint on both sides.", "embedding")
    invalid = (Example.script("""
        from mindspore import nn

        emb = nn.Embedding(32000, 4096)  # expect: ACL705
    """),)
    valid = (Example.script("""
        from mindspore import nn
        from mindspore.common.initializer import Normal

        emb = nn.Embedding(32000, 4096, embedding_table=Normal(sigma=1.0))
    """),)


class ConvDefaults(MindSporeDefault):
    code = "ACL706"
    name = "mindspore-conv-defaults"
    key = "conv"
    summary = "mindspore.nn.Conv1d/2d/3d without `pad_mode` / `has_bias` ('same' padding, no bias)"
    doc = _doc("Reports `mindspore.nn.Conv1d/Conv2d/Conv3d(...)` without `pad_mode` (warning; info for stride 1 and "
               "an odd kernel, where 'same' equals PyTorch's padding=k//2; not reported for 1x1 kernels and "
               "kernel == stride, which pad nothing either way) or without `has_bias` (info: a conv before "
               "BatchNorm is bias-free in PyTorch code too).",
               "MindSpore pads with `pad_mode='same'` by default and has **no bias**; PyTorch's `nn.Conv2d` pads "
               "**0** (padding='valid' semantics) and has a bias. The output size changes for kernels above 1, and "
               "with 'same' and an odd total padding MindSpore puts the extra element bottom/right where PyTorch "
               "puts it top/left. A ported checkpoint's conv bias has nowhere to go.",
               "Write both: `nn.Conv2d(cin, cout, 3, pad_mode='pad', padding=1, has_bias=True)`.", "conv")
    invalid = (Example.script("""
        from mindspore import nn

        conv = nn.Conv2d(3, 64, 3, stride=2)  # expect: ACL706
        conv2 = nn.Conv1d(64, 64, 4, has_bias=True)  # expect: ACL706
        conv3 = nn.Conv2d(64, 64, kernel_size=k, stride=s, has_bias=True)  # expect: ACL706
    """),)
    valid = (Example.script("""
        from mindspore import nn

        conv = nn.Conv2d(3, 64, 3, stride=2, pad_mode="pad", padding=1, has_bias=True)
        conv2 = nn.Conv1d(64, 64, 1, pad_mode="valid", has_bias=False)
        pointwise = nn.Conv2d(64, 128, kernel_size=1, has_bias=False)
        patchify = nn.Conv2d(3, 96, kernel_size=4, stride=4, has_bias=True)
    """, "explicit arguments; a 1x1 kernel and a patchify conv pad nothing either way"),)

    def problem(self, call: Call, entry: dict) -> Optional[str]:
        pad = not _given(call, entry["pad_keyword"], entry["pad_position"])
        bias = not _given(call, entry["bias_keyword"], entry["bias_position"])
        if pad and _padding_irrelevant(call):
            pad = False
        missing = [name for name, absent in ((f"`{entry['pad_keyword']}`", pad), (f"`{entry['bias_keyword']}`", bias))
                   if absent]
        return f"no {' and no '.join(missing)}" if missing else None

    def check_file(self, ctx: FileContext) -> None:
        entry = _entry(self.key)
        for call in calls_named(ctx.facts, frozenset(entry["apis"])):
            problem = self.problem(call, entry)
            if not problem:
                continue
            if "pad_mode" not in problem:
                severity, detail = "info", ""  # a conv before BatchNorm is bias-free in PyTorch code too
            elif _same_as_torch_half_padding(call):
                severity, detail = "info", (" With stride 1 and an odd kernel, 'same' equals PyTorch's "
                                            "padding=kernel_size//2, not its default padding=0.")
            else:
                severity, detail = None, ""
            ctx.report(self, call.node, f"`{call.callee}` with {problem}: MindSpore uses {entry['mindspore']}; "
                       f"PyTorch uses {entry['torch']}.{detail}", fix=self.doc.fix, severity=severity)


def _literal_ints(call: Call, keyword: str, position: int, default=None) -> Optional[tuple]:
    arg = call.arg(keyword, position)
    value = arg.value.literal if arg is not None else default
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) for v in value):
        return tuple(value)
    return None


def _padding_irrelevant(call: Call) -> bool:
    """A 1x1 kernel, or a kernel equal to its stride (patchify): 'same' pads nothing either way."""
    kernel = _literal_ints(call, "kernel_size", 2)
    if kernel is not None and set(kernel) == {1}:
        return True
    kernel_arg, stride_arg = call.arg("kernel_size", 2), call.arg("stride", 3)
    if kernel_arg is None or stride_arg is None:
        return False
    same_literal = kernel is not None and kernel == _literal_ints(call, "stride", 3)
    same_name = kernel_arg.value.dotted is not None and kernel_arg.value.dotted == stride_arg.value.dotted
    return same_literal or same_name


def _same_as_torch_half_padding(call: Call) -> bool:
    kernel, stride = _literal_ints(call, "kernel_size", 2), _literal_ints(call, "stride", 3, default=1)
    return kernel is not None and stride is not None and set(stride) == {1} and all(k % 2 for k in kernel)


class KeywordsDefault(MindSporeDefault):
    """Reported when any of `keywords` is left out (no positional form is common)."""

    def problem(self, call: Call, entry: dict) -> Optional[str]:
        if any(a.keyword is None or a.star for a in call.args[self.positional_skip:]):
            return None  # passed positionally or unpacked: not judged
        missing = [k for k in entry["keywords"] if call.arg(k) is None]
        return f"no {', '.join(f'`{k}`' for k in missing)}" if missing else None

    positional_skip: ClassVar[int] = 0


class SoftmaxCrossEntropyDefaults(KeywordsDefault):
    code = "ACL707"
    name = "mindspore-softmax-ce-defaults"
    key = "softmax_ce"
    summary = "SoftmaxCrossEntropyWithLogits defaults: sparse=False, reduction='none'"
    doc = _doc("Reports `mindspore.nn.SoftmaxCrossEntropyWithLogits(...)` without `sparse` or `reduction`.",
               "Its defaults are `sparse=False` (labels must be one-hot) and `reduction='none'` (a loss per "
               "sample). PyTorch's `nn.CrossEntropyLoss` takes class indices and averages (`reduction='mean'`). The "
               "unreduced loss's gradient is batch-size times larger, or the labels are read as the wrong shape.",
               "`nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean')` (or `nn.CrossEntropyLoss()`).",
               "softmax_ce")
    invalid = (Example.script("""
        from mindspore import nn

        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True)  # expect: ACL707
    """),)
    valid = (Example.script("""
        from mindspore import nn

        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    """),)


class AdamWeightDecayDefaults(KeywordsDefault):
    code = "ACL708"
    name = "mindspore-adamweightdecay"
    key = "adamweightdecay"
    positional_skip = 1
    summary = "mindspore.nn.AdamWeightDecay without eps / weight_decay (no bias correction, eps 1e-6, wd 0)"
    doc = _doc("Reports `mindspore.nn.AdamWeightDecay(params, ...)` without `eps` or `weight_decay`.",
               "It is not PyTorch's AdamW: it applies **no bias correction** (the first steps take much smaller "
               "updates), its eps is **1e-6** (torch 1e-8), its weight_decay **0.0** (torch AdamW 0.01), and with "
               "ungrouped parameters it skips decay for names containing 'beta'/'gamma'. Leaving eps and "
               "weight_decay out compounds the algorithmic difference.",
               "Pass `eps=1e-8, weight_decay=0.01` explicitly, or use `mindspore.mint.optim.AdamW` (bias-corrected, "
               "PyTorch defaults) for parity.", "adamweightdecay")
    invalid = (Example.script("""
        from mindspore import nn

        net = nn.Dense(4, 4)
        opt = nn.AdamWeightDecay(net.trainable_params(), learning_rate=1e-4)  # expect: ACL708
    """),)
    valid = (Example.script("""
        from mindspore import nn

        net = nn.Dense(4, 4)
        opt = nn.AdamWeightDecay(net.trainable_params(), learning_rate=1e-4, eps=1e-8, weight_decay=0.01)
    """),)


class SgdLearningRate(MindSporeDefault):
    code = "ACL709"
    name = "mindspore-sgd-default-lr"
    key = "sgd"
    summary = "mindspore.nn.SGD without `learning_rate` (0.1; torch.optim.SGD 0.001)"
    doc = _doc("Reports `mindspore.nn.SGD(params)` without `learning_rate`.",
               "MindSpore's default learning rate is **0.1**; `torch.optim.SGD`'s is **0.001** in torch 2.x. A port "
               "that relied on the default trains 100x faster.",
               "Pass `learning_rate=` with the PyTorch run's value.", "sgd")
    invalid = (Example.script("""
        from mindspore import nn

        net = nn.Dense(4, 4)
        opt = nn.SGD(net.trainable_params())  # expect: ACL709
    """),)
    valid = (Example.script("""
        from mindspore import nn

        net = nn.Dense(4, 4)
        opt = nn.SGD(net.trainable_params(), learning_rate=0.001)
    """),)


class TrainedWithoutSetTrain(ProgramRule):
    code = "ACL710"
    name = "mindspore-cell-without-set-train"
    category = "framework-default"
    severity = "warning"
    summary = "A MindSpore training cell or gradient function in a program that never calls set_train()"
    frameworks = ("mindspore",)
    tensor_framework = "mindspore"
    doc = _doc("Reports `nn.TrainOneStepCell(...)` (and the loss-scale variant) or `mindspore.value_and_grad` / "
               "`grad` / `GradOperation` in a training program none of whose files calls `.set_train()` / "
               "`.set_train(True)` (the entry script may switch the mode before building the cell in a helper "
               "module).",
               "MindSpore Cells start in **inference** mode (PyTorch modules start in **training** mode): without "
               "`set_train()` Dropout is a no-op and BatchNorm uses its moving statistics, so the NPU run trains "
               "another network than the GPU run. `Model.train` switches the mode itself; hand-written loops do not.",
               "Call `net.set_train()` (or `train_net.set_train()`) before the training loop.", "set_train")
    invalid = (Example.script("""
        import mindspore as ms
        from mindspore import nn

        net = nn.SequentialCell(nn.Dense(8, 8), nn.Dropout(p=0.1))
        loss_net = nn.WithLossCell(net, nn.MSELoss())
        opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
        train_net = nn.TrainOneStepCell(loss_net, opt)  # expect: ACL710
        for data, label in [(ms.ops.ones((4, 8)), ms.ops.ones((4, 8)))]:
            train_net(data, label)
    """, "a TrainOneStepCell pipeline"),)
    valid = (Example.script("""
        import mindspore as ms
        from mindspore import nn

        net = nn.SequentialCell(nn.Dense(8, 8), nn.Dropout(p=0.1))
        loss_net = nn.WithLossCell(net, nn.MSELoss())
        opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
        train_net = nn.TrainOneStepCell(loss_net, opt)
        train_net.set_train()
        for data, label in [(ms.ops.ones((4, 8)), ms.ops.ones((4, 8)))]:
            train_net(data, label)
    """), Example({
        "train.py": """
            import mindspore as ms
            from mindspore import nn

            from steps import build_step

            net = nn.SequentialCell(nn.Dense(8, 8), nn.Dropout(p=0.1))
            net.set_train()
            step = build_step(net)
            for data, label in [(ms.ops.ones((4, 8)), ms.ops.ones((4, 8)))]:
                step(data, label)
        """,
        "steps.py": """
            from mindspore import nn


            def build_step(net):
                loss_net = nn.WithLossCell(net, nn.MSELoss())
                opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
                return nn.TrainOneStepCell(loss_net, opt)
        """,
    }, "the entry script sets the mode; a helper module builds the step cell"), Example.script("""
        import mindspore as ms
        from mindspore import nn

        net = nn.SequentialCell(nn.Dense(8, 8), nn.Dropout(p=0.1))
        loss_net = nn.WithLossCell(net, nn.MSELoss())
        opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
        train_net = nn.TrainOneStepCell(loss_net, opt)
        model = ms.train.Model(train_net)
        model.train(1, [(ms.ops.ones((4, 8)), ms.ops.ones((4, 8)))])
    """, "handed to mindspore.train.Model, whose train() sets the mode"))

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        # Whether the mode is set is a fact of the whole program, not of the file building the cell.
        files = ctx.program.files
        model_api = frozenset(_entry("set_train")["sets_mode"])
        if any(_sets_train(file) or calls_named(file, model_api) for file in files):
            return  # set_train() somewhere in the program, or a mindspore.train.Model that sets it itself
        names = frozenset(_entry("set_train")["wrappers"])
        for file in files:
            # Built inside a Cell (a custom TrainOneStepCell's __init__): whoever runs that Cell sets the mode.
            wrappers = [c for c in calls_named(file, names)
                        if getattr(file.functions.get(c.scope), "owner", None) is None]
            if wrappers:
                first = wrappers[0]
                message, severity = absence(
                    facts, f"`{first.callee}` trains a Cell, but the program started by {ctx.program.entry.path} "
                    "never calls set_train(): MindSpore Cells start in inference mode (Dropout off, BatchNorm "
                    "frozen), PyTorch modules in training mode.")
                ctx.report(self, file, first.node, message, severity=severity,
                           fix="net.set_train() before the training loop",
                           premises=(absence_premise(ctx, facts),))
                return


def _sets_train(facts: FileFacts) -> bool:
    for call in calls_with_method(facts, ("set_train",)):
        mode = call.arg("mode", 0)
        if mode is None or mode.value.literal is not False:
            return True
    return False


RULES = [LayerNormEpsilon(), BatchNormMomentum(), GeluApproximate(), DropoutKeepProb(), EmbeddingInit(),
         ConvDefaults(), SoftmaxCrossEntropyDefaults(), AdamWeightDecayDefaults(), SgdLearningRate(),
         TrainedWithoutSetTrain()]
