"""Category `framework-default`: MindSpore APIs whose defaults differ from the PyTorch ones a model was
ported from (docs/knowledge/framework-defaults.md). The table is knowledge/framework_defaults.toml; each
message gives both frameworks' values. `mindspore.mint` follows torch's defaults and is not reported."""

from __future__ import annotations

from functools import lru_cache
from typing import ClassVar, Iterator, Optional

from acclint.findings import Premise
from acclint.knowledge import table
from acclint.knowledge.library import train_mode_setters
from acclint.linter.class_values import built_premises, built_through, imported_class_calls
from acclint.linter.context import FileContext, ProgramContext
from acclint.linter.facts import Call, FileFacts
from acclint.linter.rulebase import Example, Rule, RuleDoc
from acclint.rules.base import ProgramRule, absence, absence_premise
from acclint.rules.dropout_values import Resolved, in_file, keep_premises, noise, through_program
from acclint.rules.flow import calls_named, calls_with_method
from acclint.rules.loss_labels import on_purpose, one_hot_labels
from acclint.rules.param_groups import optimizer_parameters
from acclint.rules.program_facts import ProgramFacts
from acclint.rules.values import number
from acclint.rules.weights_replaced import initial_value_matters, reference_init, replaced


@lru_cache(maxsize=None)
def _entry(key: str) -> dict:
    return table("framework_defaults")[key]


def _given(call: Call, keyword: str, position: Optional[int]) -> bool:
    return call.arg(keyword, position) is not None or any(a.star for a in call.args)


def _group_defaults(facts: FileFacts, call: Call, missing: list) -> tuple:
    """Of the optimizer arguments `missing` from `call`, those whose default applies, those that may
    not (the parameters are not resolved), and the `value` premise: a parameter group's own `lr` /
    `weight_decay` replaces the argument for that group (rules.param_groups)."""
    group_keys = table("framework_defaults")["param_groups"]["group_keys"]
    params = optimizer_parameters(facts, call)
    certain, unknown, evidence = [], [], []
    for keyword in missing:
        key = group_keys.get(keyword)
        without = params.groups_without(key) if key is not None and params is not None else None
        if key is None:
            certain.append(keyword)
            evidence.append(f"no `{keyword}` at {params.where if params else facts.path}")
        elif without is None:
            unknown.append(keyword)
        elif without:
            certain.append(keyword)
            evidence.append(f"the parameters ({params.text}) are not grouped" if params.plain else
                            f"group{'s' if len(without) > 1 else ''} {', '.join(map(str, without))} of "
                            f"{params.text} ({params.where}) carr{'y' if len(without) > 1 else 'ies'} no `{key}`")
    if certain:
        premise = Premise("value", True, "; ".join(evidence) + ": the default applies")
    elif unknown:
        text = params.text if params is not None else "the parameters"
        premise = Premise("value", False, f"{text} at {params.where if params else facts.path} is not resolved: "
                                          f"parameter groups that carry their own "
                                          f"{' / '.join(f'`{group_keys[k]}`' for k in unknown)} replace the default")
    else:
        premise = None  # every group carries its own value: the default never applies
    return certain, unknown, premise


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

    def judge(self, facts: FileFacts, call: Call, entry: dict) -> Optional[tuple]:
        """(what the call leaves to the default, the premises the rule proves about it), or None.
        Rules that follow the value further than the call (groups, labels, a converted probability)
        override this and state a `value` or `material` premise."""
        problem = self.problem(call, entry)
        if problem and _chosen_beside(facts, call, entry):
            return None
        return (problem, ()) if problem else None

    def check_file(self, ctx: FileContext) -> None:
        entry = _entry(self.key)
        for call in calls_named(ctx.facts, frozenset(entry["apis"])):
            for message, premises in self._findings(ctx.facts, call, entry):
                ctx.report(self, call.node, message, fix=self.doc.fix, premises=premises)

    def check_module(self, ctx: ProgramContext, file: FileFacts) -> None:
        """Constructions whose class another module of the project holds (`norm_layer=NORM`, `from .config
        import NORM`): the file's facts cannot know them, the project can."""
        entry = _entry(self.key)
        apis = frozenset(entry["apis"])
        for call in imported_class_calls(ctx.project, file):
            if call.names & apis:
                for message, premises in self._findings(file, call, entry):
                    ctx.report(self, file, call.node, message, fix=self.doc.fix, premises=premises)

    def _findings(self, facts: FileFacts, call: Call, entry: dict) -> Iterator[tuple]:
        judged = self.judge(facts, call, entry)
        if judged:
            problem, premises = judged
            yield (f"`{call.callee}`{built_through(facts, call)} with {problem}: MindSpore uses {entry['mindspore']}; "
                   f"PyTorch uses {entry['torch']}.", built_premises(facts, call, premises))


def _chosen_beside(facts: FileFacts, call: Call, entry: dict) -> bool:
    """The default is one choice of a mapping that also holds the API with the argument written
    (`{"gelu": nn.GELU(False), "gelu_approximate": nn.GELU()}`), or the fallback of a lookup in such a
    mapping (`activation_map.get(name, nn.GELU())`): the author tells the forms apart on purpose."""
    mappings = {s.split(":", 1)[1] for s in call.sinks if s.startswith("name:")}
    lookups = {s.split(":", 1)[1].rsplit(".", 1)[0] for s in call.sinks if s.startswith("arg:") and s.endswith(".get")}
    if any(other is not call and any(f"name:{m}" in other.sinks for m in mappings | lookups)
           and _given(other, entry["keyword"], entry.get("position"))
           for other in calls_named(facts, frozenset(entry["apis"]))):
        return True
    # A lookup whose mapping holds the project's own implementation of the op (`{"gelu": GELU()}`): the
    # library default is only the fallback for names the mapping lacks.
    names = {api.rsplit(".", 1)[-1] for api in entry["apis"]}
    return any(other.callee in names and not other.names & frozenset(entry["apis"])
               and any(f"name:{m}" in other.sinks for m in lookups) for other in facts.calls)


def _doc(what: str, why: str, fix: str, key: str) -> RuleDoc:
    return RuleDoc(what, why, fix, references=(_entry(key)["source"],))


_NORM_LAYER_PROGRAM = """
    from functools import partial

    import mindspore as ms
    import numpy as np
    from mindspore import nn


    class Block(nn.Cell):
        def __init__(self, dim, norm_layer={norm_layer}):
            super().__init__()
            self.norm = norm_layer((dim,)){marker}
            self.fc = nn.Dense(dim, dim)

        def construct(self, x):
            return x + self.fc(self.norm(x))


    def main():
        net = nn.SequentialCell([Block(16), nn.Dense(16, 4)])
        loss_fn = nn.CrossEntropyLoss()
        optimizer = nn.Adam(net.trainable_params(), learning_rate=1e-3)
        grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, optimizer.parameters)
        x = ms.Tensor(np.ones((8, 16), np.float32))
        y = ms.Tensor(np.zeros((8,), np.int32))
        for step in range(4):
            loss, grads = grad_fn(x, y)
            optimizer(grads)


    if __name__ == "__main__":
        main()
"""


_NORM_LAYERS = """
    from functools import partial

    from mindspore import nn

    NORM_LAYER = partial(nn.LayerNorm, begin_norm_axis=-1{eps})
"""


def _imported_norm_layer(marker: str) -> str:
    """The norm-layer program whose default class comes from `layers.py`."""
    program = _NORM_LAYER_PROGRAM.format(norm_layer="NORM_LAYER", marker=marker)
    return program.replace("    from mindspore import nn\n", "    from mindspore import nn\n\n    from layers import NORM_LAYER\n", 1)


class LayerNormEpsilon(MindSporeDefault):
    code = "ACL701"
    name = "mindspore-layernorm-epsilon"
    key = "layernorm"
    summary = "mindspore.nn.LayerNorm without `epsilon` (1e-7; PyTorch 1e-5)"
    doc = _doc("Reports `mindspore.nn.LayerNorm(...)` without `epsilon`, also where the class reaches the call as "
               "a value (`norm_layer=nn.LayerNorm`, `functools.partial(nn.LayerNorm, ...)`, a dict of classes) and is "
               "built there (`self.norm = norm_layer((dim,))`), with the arguments it gets there and those the "
               "partial binds.",
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
    """), Example.script(_NORM_LAYER_PROGRAM.format(norm_layer="nn.LayerNorm", marker="  # expect: ACL701"),
                         "a port of a timm-style block: the class is a parameter's default, built in __init__"),
        Example({"train.py": _imported_norm_layer("  # expect: ACL701"), "layers.py": _NORM_LAYERS.format(eps="")},
                "the default is a class assigned in another module of the project"))
    valid = (Example.script("""
        from mindspore import nn, mint


        class Block(nn.Cell):
            def __init__(self, hidden):
                super().__init__()
                self.norm = nn.LayerNorm((hidden,), epsilon=1e-5)
                self.norm2 = mint.nn.LayerNorm(hidden)
    """), Example.script(_NORM_LAYER_PROGRAM.format(norm_layer="partial(nn.LayerNorm, epsilon=1e-5)", marker=""),
                         "the partial binds PyTorch's epsilon"),
        Example({"train.py": _imported_norm_layer(""), "layers.py": _NORM_LAYERS.format(eps=", epsilon=1e-5")},
                "the other module's partial binds PyTorch's epsilon"))


# A layer helper whose PyTorch-convention branch only a parameter turns on (`{built}`: how the net is built).
_BN_BEHIND_PARAMETER = """
    import mindspore as ms
    from mindspore import nn, ops


    def _bn(channel, res_base=False):
        if res_base:
            return nn.BatchNorm2d(channel, momentum=0.1)  # expect: ACL702
        return nn.BatchNorm2d(channel, momentum=0.9)


    class Net(nn.Cell):
        def __init__(self, res_base=False):
            super().__init__()
            self.res_base = res_base
            self.bn0 = _bn(4)
            self.bn1 = _bn(4, self.res_base)

        def construct(self, x):
            return self.bn1(self.bn0(x))


    if __name__ == "__main__":
        net = {built}
        opt = nn.SGD(net.trainable_params(), learning_rate=0.01)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
        step.set_train()
        step(ops.ones((2, 4, 3, 3)), ops.ones((2, 4, 3, 3)))
"""


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
    """), Example.script(_BN_BEHIND_PARAMETER.format(built="Net(res_base=True)"),
                         "the branch a construction turns on: proven"),
        Example.script(_BN_BEHIND_PARAMETER.format(built="Net()"),
                       "a branch under a parameter whose default no call changes runs in no run: advice (info), its "
                       "`executes` premise names the default and the calls"))
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
    """), Example.script("""
        from mindspore import nn

        ACTIVATIONS = {
            "gelu": nn.GELU(False),
            "gelu_approximate": nn.GELU(),
        }


        def activation(name):
            return ACTIVATIONS.get(name, nn.GELU())
    """, "a mapping that offers both forms by name, and its fallback: the default is chosen on purpose"),
        Example.script("""
            from mindspore import nn, ops


            class GELU(nn.Cell):
                def construct(self, x):
                    return 0.5 * x * (1.0 + ops.erf(x / 1.41421))


            ACTIVATIONS = {"relu": nn.ReLU(), "gelu": GELU()}


            def activation(name):
                return ACTIVATIONS.get(name, nn.GELU())
        """, "the lookup's mapping holds the project's own exact GELU: the library default is only a fallback"))


class DropoutKeepProb(MindSporeDefault):
    code = "ACL704"
    name = "mindspore-dropout-positional"
    key = "dropout"
    premises = ("trains", "executes", "value", "material")
    summary = "mindspore.nn.Dropout(x) positional: x is keep_prob, not PyTorch's drop probability"
    doc = _doc("Reports `mindspore.nn.Dropout(x)` with a positional argument that reads as a drop probability "
               "(a literal below 0.5, or a name containing `drop` / `p`), or `keep_prob=` below 0.5. The name is "
               "followed: rebound before the call, a parameter's default, a constant, what the program's callers "
               "pass, a config class's default. Not reported where the code converted it itself (`1 - p`), where it "
               "resolves to 0.5 or more (keep_prob 0.5 keeps what p=0.5 drops: nothing changes), or to a keep "
               "probability.",
               "The first parameter of `mindspore.nn.Dropout` is still `keep_prob` (the probability to **keep**; "
               "deprecated, `p` is the drop probability). `nn.Dropout(0.1)` copied from PyTorch keeps **10%** of "
               "activations and scales them by 10, where PyTorch drops 10%.",
               "Pass the drop probability by keyword: `nn.Dropout(p=0.1)`.", "dropout")
    invalid = (Example.script("""
        from mindspore import nn, ops


        class Head(nn.Cell):
            def __init__(self, dropout_rate):
                super().__init__()
                self.dense = nn.Dense(4, 2)
                self.drop = nn.Dropout(dropout_rate)  # expect: ACL704
                self.drop_in = nn.Dropout(0.1)  # expect: ACL704

            def construct(self, x):
                return self.drop(self.dense(self.drop_in(x)))


        net = Head(dropout_rate=0.1)
        opt = nn.SGD(net.trainable_params(), learning_rate=0.01)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
        step.set_train()
        step(ops.ones((8, 4)), ops.ones((8, 2)))
    """, "a drop probability of 0.1 passed where keep_prob is read"),)
    valid = (Example.script("""
        from mindspore import nn, ops


        class Head(nn.Cell):
            def __init__(self, dropout_rate, drop_path=0.5, attn_drop=0.1):
                super().__init__()
                self.dense = nn.Dense(4, 2)
                self.drop = nn.Dropout(1 - dropout_rate)
                self.path = nn.Dropout(drop_path)
                attn_drop = 1.0 - attn_drop
                self.attn = nn.Dropout(attn_drop)
                self.legacy = nn.Dropout(keep_prob=0.9)
                self.new = nn.Dropout(p=0.1)
                self.proj_drop = 1 - dropout_rate
                self.proj = nn.Dropout(self.proj_drop)

            def construct(self, x):
                return self.proj(self.drop(self.dense(self.attn(self.path(self.legacy(self.new(x)))))))


        net = Head(dropout_rate=0.1)
        opt = nn.SGD(net.trainable_params(), learning_rate=0.01)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
        step.set_train()
        step(ops.ones((8, 4)), ops.ones((8, 2)))
    """, "converted by the code (`1 - p`), or 0.5 (keep and drop probability coincide)"),)

    def judge(self, facts: FileFacts, call: Call, entry: dict) -> Optional[tuple]:
        arg = call.arg("keep_prob", 0)
        if arg is None or arg.star or call.arg("p") is not None:
            return None
        if arg.value.is_literal:
            found = Resolved(arg.value.literal if number(arg.value.literal) else None,
                             f"written at {facts.path}:{facts.spans[call.node].line}")
            if noise(found) or found.value is None:
                return None
            return f"keep_prob={found.value} (keeps {found.value:.0%} of activations)", keep_premises(found)
        name = (arg.value.dotted or "").rsplit(".", 1)[-1].lower()
        if arg.keyword is not None or not name or "keep" in name or not (
                "drop" in name or name == "p" or name.endswith("_p")):
            return None  # `nn.Dropout(1 - p)`, `keep_prob=...`: written as a keep probability
        found = in_file(facts, call, arg)
        if found is not None and noise(found):
            return None
        # Not shown in this file: the premises stay open for the program's callers to tell (prove_premise).
        return (f"`{arg.value.dotted}` as its first argument, which is keep_prob",
                keep_premises(found) if found is not None else ())

    def prove_premise(self, name: str, finding, facts: FileFacts, programs: list, project) -> Optional[Premise]:
        """`value` / `material` of a name the file does not resolve: what the program's callers pass, or
        the config class's default."""
        call = next((c for c in facts.calls if c.node == finding.node), None)
        arg = call.arg("keep_prob", 0) if call is not None else None
        if name not in ("value", "material") or arg is None:
            return None
        found = through_program(project, programs, facts, call, arg)
        return next(p for p in keep_premises(found) if p.premise == name)


class EmbeddingInit(MindSporeDefault):
    code = "ACL705"
    name = "mindspore-embedding-init"
    key = "embedding"
    premises = ("trains", "executes", "material")
    summary = "mindspore.nn.Embedding without `embedding_table` initialises with N(0, 0.01) (PyTorch N(0, 1))"
    doc = _doc("Reports `mindspore.nn.Embedding(...)` without `embedding_table`, unless its file replaces the "
               "table on every run (a checkpoint loaded, `embedding_table.set_data(...)`). The finding's `material` "
               "premise says whether a program running it replaces the table (then the default never reaches "
               "training; under a flag, only in runs that set it).",
               "MindSpore's default `embedding_table='normal'` draws from N(0, **0.01**); PyTorch's `nn.Embedding` "
               "from N(0, **1**): 100x smaller initial embeddings, so a from-scratch run starts from another "
               "function (irrelevant only when a checkpoint is loaded over it).",
               "Pass the initialiser explicitly, e.g. `embedding_table=Normal(sigma=1.0)`, or load the same "
               "initial checkpoint on both sides.", "embedding")
    invalid = (Example.script("""
        import mindspore as ms
        from mindspore import nn, ops


        class Classifier(nn.Cell):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(100, 8)  # expect: ACL705
                self.head = nn.Dense(8, 2)

            def construct(self, ids):
                return self.head(self.emb(ids).mean(1))


        net = Classifier()
        opt = nn.Adam(net.trainable_params(), learning_rate=1e-3)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
        step.set_train()
        step(ops.ones((4, 6), ms.int32), ops.ones((4, 2)))
    """),)
    valid = (Example.script("""
        import mindspore as ms
        from mindspore import nn, ops
        from mindspore.common.initializer import Normal, initializer


        class Classifier(nn.Cell):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(100, 8)
                self.emb.embedding_table.set_data(initializer(Normal(sigma=1.0), (100, 8)))
                self.head = nn.Dense(8, 2)
                self.emb2 = nn.Embedding(100, 8, embedding_table=Normal(sigma=1.0))

            def construct(self, ids):
                return self.head(self.emb(ids).mean(1) + self.emb2(ids).mean(1))


        net = Classifier()
        opt = nn.Adam(net.trainable_params(), learning_rate=1e-3)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
        step.set_train()
        step(ops.ones((4, 6), ms.int32), ops.ones((4, 2)))
    """, "the table re-initialised with N(0, 1) by the model itself, or given explicitly"),)

    def judge(self, facts: FileFacts, call: Call, entry: dict) -> Optional[tuple]:
        judged = super().judge(facts, call, entry)
        found = replaced(((facts, c) for c in facts.calls if not c.flag_guards), "embedding_table")
        if found is not None or judged is None:
            return None  # the file itself replaces the table on every run
        reference = reference_init(facts, frozenset(entry["reference_init_names"]))
        if reference is None:
            return judged
        return judged[0], (Premise("material", False, f"the model carries `{reference[0]}` (line {reference[1]}): "
                                                      "its PyTorch reference initialises embeddings with N(0, "
                                                      f"{reference[0]}), not torch's N(0, 1)"),)

    def prove_premise(self, name: str, finding, facts: FileFacts, programs: list, project) -> Optional[Premise]:
        """`material`: the initial table reaches training unless the program loads a checkpoint or sets it."""
        return initial_value_matters(project, programs, "embedding_table") if name == "material" else None

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

    # Its severity depends on the kernel and padding read in check_file; classes held in another module are
    # not followed for it.
    check_module = None

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
            ctx.report(self, call.node, f"`{call.callee}`{built_through(ctx.facts, call)} with {problem}: MindSpore "
                       f"uses {entry['mindspore']}; PyTorch uses {entry['torch']}.{detail}", fix=self.doc.fix,
                       severity=severity, premises=built_premises(ctx.facts, call))


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

    def missing_keywords(self, call: Call, entry: dict) -> list:
        if any(a.keyword is None or a.star for a in call.args[self.positional_skip:]):
            return []  # passed positionally or unpacked: not judged
        return [k for k in entry["keywords"] if call.arg(k) is None]

    def problem(self, call: Call, entry: dict) -> Optional[str]:
        missing = self.missing_keywords(call, entry)
        return f"no {', '.join(f'`{k}`' for k in missing)}" if missing else None

    positional_skip: ClassVar[int] = 0


class OptimizerDefault(MindSporeDefault):
    """An optimizer argument left to its default, which parameter groups carrying their own value replace:
    reported only for the groups it applies to, with the `value` premise saying which."""

    premises = ("trains", "executes", "value")

    def missing_keywords(self, call: Call, entry: dict) -> list:
        return [] if _given(call, entry["keyword"], entry.get("position")) else [entry["keyword"]]

    def judge(self, facts: FileFacts, call: Call, entry: dict) -> Optional[tuple]:
        missing = self.missing_keywords(call, entry)
        if not missing:
            return None
        certain, unknown, premise = _group_defaults(facts, call, missing)
        if premise is None:
            return None  # every parameter group carries its own value: the default never applies
        return f"no {', '.join(f'`{k}`' for k in certain + unknown)}", (premise,)


class SoftmaxCrossEntropyDefaults(KeywordsDefault):
    code = "ACL707"
    name = "mindspore-softmax-ce-defaults"
    key = "softmax_ce"
    premises = ("trains", "executes", "value")
    summary = "SoftmaxCrossEntropyWithLogits defaults: sparse=False, reduction='none'"
    doc = _doc("Reports `mindspore.nn.SoftmaxCrossEntropyWithLogits(...)` without `sparse` or `reduction`, unless "
               "the defaults are used on purpose: `sparse=False` where the labels are one-hot encoded by the program "
               "(`ops.OneHot`, `ops.one_hot`, the dataset's `transforms.OneHot`), `reduction='none'` where the loss "
               "Cell that builds it reduces the loss itself (`ops.ReduceMean`, `.mean()`). One-hot labels built in "
               "another module of the program make the finding's `value` premise disproven (advice).",
               "Its defaults are `sparse=False` (labels must be one-hot) and `reduction='none'` (a loss per "
               "sample). PyTorch's `nn.CrossEntropyLoss` takes class indices and averages (`reduction='mean'`). The "
               "unreduced loss's gradient is batch-size times larger, or the labels are read as the wrong shape.",
               "`nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean')` (or `nn.CrossEntropyLoss()`).",
               "softmax_ce")
    invalid = (Example.script("""
        import mindspore as ms
        from mindspore import nn, ops

        net = nn.Dense(4, 3)
        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True)  # expect: ACL707
        opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
        step.set_train()
        for _ in range(2):
            step(ops.ones((8, 4)), ms.Tensor([0, 1, 2, 0, 1, 2, 0, 1], ms.int32))
    """, "per-sample losses summed by the gradient (reduction='none')"),)
    valid = (Example.script("""
        import mindspore as ms
        from mindspore import nn, ops

        net = nn.Dense(4, 3)
        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
        step.set_train()
        for _ in range(2):
            step(ops.ones((8, 4)), ms.Tensor([0, 1, 2, 0, 1, 2, 0, 1], ms.int32))
    """), Example.script("""
        import mindspore as ms
        from mindspore import nn, ops


        class CrossEntropy(nn.LossBase):
            def __init__(self, num_classes):
                super().__init__()
                self.one_hot = ops.OneHot()
                self.on, self.off = ms.Tensor(1.0, ms.float32), ms.Tensor(0.0, ms.float32)
                self.ce = nn.SoftmaxCrossEntropyWithLogits()
                self.mean = ops.ReduceMean()
                self.num_classes = num_classes

            def construct(self, logits, label):
                label = self.one_hot(label, self.num_classes, self.on, self.off)
                return self.mean(self.ce(logits, label), 0)


        net = nn.Dense(4, 3)
        opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, CrossEntropy(3)), opt)
        step.set_train()
        for _ in range(2):
            step(ops.ones((8, 4)), ms.Tensor([0, 1, 2, 0, 1, 2, 0, 1], ms.int32))
    """, "a loss Cell that one-hot encodes the labels and averages the loss itself (the defaults on purpose)"),
        Example(
            {
                "export.py": """
                    import mindspore as ms
                    from mindspore import nn

                    if __name__ == "__main__":
                        net = nn.Dense(4, 2)
                        ms.load_param_into_net(net, ms.load_checkpoint("net.ckpt"))
                        loss_fn = nn.SoftmaxCrossEntropyWithLogits()
                        model = ms.Model(net, loss_fn=loss_fn, metrics={"acc"})
                        ms.export(net, ms.ops.ones((1, 4)), file_name="net", file_format="MINDIR")
                """,
                "train.py": """
                    import mindspore as ms
                    from mindspore import nn

                    if __name__ == "__main__":
                        net = nn.Dense(4, 2)
                        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
                        opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
                        train_net = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
                        train_net.set_train()
                        train_net(ms.ops.ones((2, 4)), ms.ops.ones((2,), ms.int32))
                        ms.save_checkpoint(net, "net.ckpt")
                """,
            },
            "an export.py that loads the trained checkpoint into the net it builds: no training runs there",
        ),
    )

    def judge(self, facts: FileFacts, call: Call, entry: dict) -> Optional[tuple]:
        missing = self.missing_keywords(call, entry)
        left = [k for k in missing if k not in on_purpose(facts, call, missing)]
        return (f"no {', '.join(f'`{k}`' for k in left)}", ()) if left else None

    def prove_premise(self, name: str, finding, facts: FileFacts, programs: list, project) -> Optional[Premise]:
        """`value`: the defaults left are not used on purpose, as the programs running the line show
        (labels one-hot encoded in another module, a dataset transform)."""
        call = next((c for c in facts.calls if c.node == finding.node), None)
        if name != "value" or call is None:
            return None
        missing = self.missing_keywords(call, _entry(self.key))
        left = [k for k in missing if k not in on_purpose(facts, call, missing)]
        if not programs:
            return Premise("value", False, f"no training program shows which labels reach {facts.path}:"
                                           f"{finding.line}")
        encoded = next((found for program in programs
                        if (found := project.derived("one-hot labels", program, lambda p: one_hot_labels(p.files)))),
                       None)
        holds = [k for k in left if k != "sparse" or encoded is None]
        if not holds:
            return Premise("value", False, f"labels one-hot encoded by {encoded}: sparse=False is what they need")
        said = {"sparse": "no labels are one-hot encoded", "reduction": "its loss Cell does not reduce the loss"}
        return Premise("value", True, f"{'; '.join(said[k] for k in holds)} (in the program started by "
                                      f"{programs[0].entry.path})")


class AdamWeightDecayDefaults(KeywordsDefault, OptimizerDefault):
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


class SgdLearningRate(OptimizerDefault):
    code = "ACL709"
    name = "mindspore-sgd-default-lr"
    key = "sgd"
    summary = "mindspore.nn.SGD without `learning_rate` (0.1; torch.optim.SGD 0.001)"
    doc = _doc("Reports `mindspore.nn.SGD(params)` without `learning_rate`, unless every parameter group it is "
               "given (a list of dicts, written inline or in a name of the same function) carries its own `lr`: "
               "then the default applies to no parameter. Parameters acclint cannot resolve leave the finding's "
               "`value` premise unproven.",
               "MindSpore's default learning rate is **0.1**; `torch.optim.SGD`'s is **0.001** in torch 2.x. A port "
               "that relied on the default trains 100x faster.",
               "Pass `learning_rate=` with the PyTorch run's value.", "sgd")
    invalid = (Example.script("""
        from mindspore import nn, ops

        net = nn.Dense(4, 2)
        opt = nn.SGD(net.trainable_params())  # expect: ACL709
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
        step.set_train()
        for _ in range(2):
            step(ops.ones((8, 4)), ops.ones((8, 2)))
    """, "ungrouped parameters"), Example.script("""
        from mindspore import nn, ops

        net = nn.Dense(4, 2)
        decay = [p for p in net.trainable_params() if "bias" not in p.name]
        no_decay = [p for p in net.trainable_params() if "bias" in p.name]
        groups = [{"params": decay, "lr": 0.01, "weight_decay": 1e-4}, {"params": no_decay}]
        opt = nn.SGD(groups)  # expect: ACL709
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
        step.set_train()
        for _ in range(2):
            step(ops.ones((8, 4)), ops.ones((8, 2)))
    """, "the second group has no `lr`: the default 0.1 trains it"))
    valid = (Example.script("""
        from mindspore import nn, ops

        net = nn.Dense(4, 2)
        opt = nn.SGD(net.trainable_params(), learning_rate=0.001)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
        step.set_train()
        for _ in range(2):
            step(ops.ones((8, 4)), ops.ones((8, 2)))
    """), Example.script("""
        from mindspore import nn, ops


        def train(lr):
            net = nn.Dense(4, 2)
            decay = [p for p in net.trainable_params() if "bias" not in p.name]
            no_decay = [p for p in net.trainable_params() if "bias" in p.name]
            groups = [{"params": decay, "lr": lr, "weight_decay": 1e-4},
                      {"params": no_decay, "lr": lr},
                      {"order_params": net.trainable_params()}]
            opt = nn.SGD(groups)
            step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
            step.set_train()
            for _ in range(2):
                step(ops.ones((8, 4)), ops.ones((8, 2)))


        if __name__ == "__main__":
            train(0.001)
    """, "every parameter group carries its own `lr` (the default learning_rate never applies)"))


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
               "module), builds a `mindspore.train.Model` or what the installed MindSpore's source shows setting "
               "the mode itself (`amp.build_train_network`, `nn.WithGradCell`), or a local subclass of one. The "
               "finding's `material` premise names the Dropout or BatchNorm layer the mode changes.",
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
    """, "handed to mindspore.train.Model, whose train() sets the mode"), Example.script("""
        import mindspore as ms
        from mindspore import amp, nn

        net = nn.SequentialCell(nn.Dense(8, 8), nn.Dropout(p=0.1))
        opt = nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
        train_net = amp.build_train_network(net, opt, nn.MSELoss(), level="O0")
        grads = ms.value_and_grad(net, None, opt.parameters)
        for data, label in [(ms.ops.ones((4, 8)), ms.ops.ones((4, 8)))]:
            train_net(data, label)
    """, "built by amp.build_train_network, which calls set_train() (read from the installed MindSpore)"))

    premises = ("trains", "executes", "material")

    def check(self, ctx: ProgramContext, facts: ProgramFacts) -> None:
        # Whether the mode is set is a fact of the whole program, not of the file building the cell.
        files = ctx.program.files
        # mindspore.train.Model, and what the installed MindSpore shows calling set_train() itself
        # (amp.build_train_network, nn.WithGradCell: knowledge/library_behaviour.toml), or a local subclass.
        setters = frozenset(_entry("set_train")["sets_mode"]) | train_mode_setters()
        if any(_sets_train(file) or calls_named(file, setters) for file in files):
            return
        if any(ctx.project.constructed_class_names(step.file, step.fact) & setters for step in ctx.program.calls()):
            return
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
                           premises=(absence_premise(ctx, facts), _mode_matters(files)))
                return


def _mode_matters(files: list) -> Premise:
    """`material`: the program builds a layer whose computation depends on the mode (Dropout, BatchNorm)."""
    layers = frozenset(table("usage")["train_mode_layers"]["calls"])
    for file in files:
        found = calls_named(file, layers)
        if found:
            return Premise("material", True, f"`{found[0].callee}` at {file.path}:{file.spans[found[0].node].line} "
                                             "computes differently in inference mode")
    return Premise("material", False, "no Dropout or BatchNorm is built in the program's files: set_train() changes "
                                      "only such layers (the network may come from a library acclint does not read)")


def _sets_train(facts: FileFacts) -> bool:
    for call in calls_with_method(facts, ("set_train",)):
        mode = call.arg("mode", 0)
        if mode is None or mode.value.literal is not False:
            return True
    return False


RULES = [LayerNormEpsilon(), BatchNormMomentum(), GeluApproximate(), DropoutKeepProb(), EmbeddingInit(),
         ConvDefaults(), SoftmaxCrossEntropyDefaults(), AdamWeightDecayDefaults(), SgdLearningRate(),
         TrainedWithoutSetTrain()]
