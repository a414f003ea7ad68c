"""What the one pass over a Python file records. Rules read these; nobody re-walks the tree.

Every fact that a finding may point at carries `node`: an index into the file's table of
source ranges (`FileFacts.spans`), filled once, after the pass, for exactly those nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

MODULE_SCOPE = "<module>"


class _Missing:
    """Marks an argument whose value is not a literal."""

    def __repr__(self) -> str:
        return "<expr>"

    def __reduce__(self):  # stay a singleton across process boundaries
        return (_missing, ())


def _missing() -> "_Missing":
    return NOT_LITERAL


NOT_LITERAL: Any = _Missing.__new__(_Missing)


@dataclass(slots=True)
class Value:
    """A summarised expression: a literal's value, or a dotted name with its qualified names."""

    literal: Any = NOT_LITERAL
    dotted: Optional[str] = None
    names: frozenset = frozenset()
    # A method chain `base.m1(...).m2[...]`: `base` is the dotted text of the innermost name, or
    # the callee of the innermost call (`base_call`); `chain` the methods/attributes applied to it
    # in order ("[]" a subscript, "~" a bitwise not). Lets rules follow views and masks.
    base: Optional[str] = None
    base_call: bool = False
    chain: tuple = ()
    base_names: frozenset = frozenset()  # qualified names of `base` (filled after the pass)
    # For conditions (comparisons, and/or/not, `a if c else b`): the string literals and dotted
    # names they mention, e.g. {"cuda", "device.type"}.
    mentions: frozenset = frozenset()
    choices: tuple = ()  # literal branches of `a if test else b` (e.g. "cuda", "cpu")
    # When the innermost expression is arithmetic or a comparison (`(1 - m) * -1e4`, `m == 0`, `-x`): its
    # operator ("+", "-", "*", "/", "==", "!=", "<", "<=", ">", ">=", "neg") and operand Values.
    op: Optional[str] = None
    operands: tuple = ()
    # Arguments (Arg tuples) of the calls in the expression, filled when the walk reaches them: of the
    # base call (`base_args`), and of each method call of `chain` (`chain_args`, () for attributes).
    base_args: tuple = ()
    chain_args: Any = ()  # a list once the walker fills it

    @property
    def is_literal(self) -> bool:
        return self.literal is not NOT_LITERAL


class ParamGroups(tuple):
    """Dicts of a list-of-dicts literal, keeping only their literal entries (`params` is code).
    `keys`: every key each dict writes, literal value or not (`{"params": p, "lr": lr}` has "lr")."""

    keys: tuple = ()


@dataclass(slots=True)
class Arg:
    keyword: Optional[str]
    value: Value
    star: str = ""  # "*" or "**" for unpacked arguments


@dataclass(frozen=True, slots=True)
class FlagGuard:
    """The test of an `if` a fact sits under, when it is a plain (dotted) name:
    `if args.seed is not None:` is FlagGuard("args.seed", "not-none"), `if cfg.seed:` FlagGuard("cfg.seed", "truthy").
    The `else` of `if x is None:` / `if not x:` carries the same guard as the body of the opposite test."""

    dotted: str
    # "not-none" | "truthy" | "equals" | "differs" (`if args.use_ascend == "True":` and its else); a number
    # compared, "gt" | "ge" | "lt" | "le" (`if args.mixup > 0:`); "prefix" | "no-prefix" (`if aa.startswith("rand"):`);
    # "any": `a or b`, `value` holding the guards of each side (each a tuple that must all hold).
    form: str
    value: Any = None  # the literal compared with; for "any", a tuple of guard tuples
    # A lookup with a default written in the code: `cfg.get("amp", False)` / `getattr(cfg, "amp", False)` is
    # FlagGuard("cfg.amp", "truthy", fallback=False); `node` is the test's node (where that default is written).
    fallback: Any = NOT_LITERAL
    node: int = field(default=-1, compare=False)
    # The function the test is written in: a plain name tested there may be its parameter (linter.parameters).
    scope: str = field(default="", compare=False)

    def text(self) -> str:
        """The test as code reads: `args.seed is not None`, `args.mixup > 0 or args.cutmix > 0`."""
        if self.form == "any":
            return " or ".join(" and ".join(guard.text() for guard in side) for side in self.value)
        if self.form == "truthy":
            return f"{self.dotted} is true"
        if self.form == "not-none":
            return f"{self.dotted} is not None"
        if self.form in ("prefix", "no-prefix"):
            return f"{'not ' if self.form == 'no-prefix' else ''}{self.dotted}.startswith({self.value!r})"
        return f"{self.dotted} {_COMPARED[self.form]} {self.value!r}"


_COMPARED = {"equals": "==", "differs": "!=", "gt": ">", "ge": ">=", "lt": "<", "le": "<="}


@dataclass(slots=True)
class Call:
    node: int
    callee: str  # dotted text as written ("torch.manual_seed", "self.setup", "?.backward")
    args: tuple
    scope: str  # enclosing function's qualified name in this module, or MODULE_SCOPE
    order: int  # position in source order among all recorded facts of the file
    in_main: bool  # inside the module-level `if __name__ == "__main__":` block
    assigned_to: Optional[str] = None  # `x = Foo(...)` records "x"
    names: frozenset = frozenset()  # qualified names of the callee (filled after the pass)
    in_loop: bool = False  # inside a `for`/`while` body of its own function
    in_handler: bool = False  # inside an `except` body: runs only when something failed
    guard: Optional["Guard"] = None  # the innermost `if` (or `a if c else b`) it runs under
    receiver: Optional[Value] = None  # for `expr.method(...)`: the summarised `expr`
    flag_guards: tuple = ()  # FlagGuards of the enclosing `if`s in this function, outermost first
    # Where the call's result flows, outermost first (see `Sink`): `files = sorted(os.listdir(d))`
    # gives os.listdir ("name:files", "arg:sorted").
    sinks: tuple = ()
    # For a construction made through a name holding a class (`norm_layer(dim)` with
    # `norm_layer=nn.LayerNorm`; linter.class_values): where the class came from. The Call is recorded
    # after the call as written, at the same node, with the class as callee and the arguments it gets.
    built_from: Optional["ClassValue"] = None

    def arg(self, keyword: str, position: Optional[int] = None) -> Optional[Arg]:
        """The argument passed by keyword, or at `position` if passed positionally."""
        for arg in self.args:
            if arg.keyword == keyword:
                return arg
        if position is not None:
            positional = [a for a in self.args if a.keyword is None and not a.star]
            if position < len(positional):
                return positional[position]
        return None

    @property
    def method(self) -> str:
        return self.callee.rsplit(".", 1)[-1]


@dataclass(frozen=True, slots=True)
class ClassValue:
    """Where the class a call builds came from: the name holding it, the node that says so (a function
    whose parameter defaults to it, a call passing it; None for a local assignment), how, and whether
    the file shows it is the class used (every construction seen leaves the default, or passes it)."""

    name: str
    node: Optional[int]
    how: str  # "the default of Block.__init__", "passed to Block", "assigned in build", "an entry of the dict"
    proven: bool
    site: Optional[int] = None  # for a default: a construction that leaves it (`Block(32)`)


class Sink:
    """What consumes an expression, as recorded in `Call.sinks` / `NameUse.sinks` (outermost first):
    "arg:<callee>" (an argument of that call), "name:<x>" / "attr:<a.b>" / "key:<d>" (assigned to it,
    to an item of `d`), "return", "iter" (iterated by a `for`), "comp" (iterated by a comprehension),
    "set-comp" (a set or dict comprehension), "test" (an `if`/`while` test or `not`), "in" (an operand
    of `in`/`not in`), and subscripts: "[:]" sliced, "[]" one constant position, "[i]" a computed one."""


@dataclass(slots=True)
class Block:
    """A `with` block or a `for` loop / comprehension and the order range of what runs in it:
    facts of its header have `start < order < head_end`, of its body `head_end < order < end`."""

    node: int
    kind: str  # "with" | "for" | "comp"
    items: tuple  # Values: the context managers of a `with`, the iterable of a loop
    targets: tuple  # names bound (`as x`, loop targets)
    scope: str
    start: int
    head_end: int = 0
    end: int = 0
    sinks: tuple = ()  # for comprehensions: where the comprehension's result flows


@dataclass(slots=True)
class Return:
    """`return value` in a function (data flow: what a local helper hands back)."""

    scope: str
    order: int
    value: Value


@dataclass(slots=True)
class Reference:
    """A local function or class used as a value, not called: `mp.spawn(main_worker)`,
    `{"train": run_train}`, `functools.partial(step, ...)`, `Trainer(model_cls=Net)`, `return LocalTrainer`.
    Whatever receives it may call it, so the project model follows it as if it were called there."""

    name: str
    scope: str
    order: int
    in_main: bool
    sink: str  # where it flows: "arg:mp.spawn", "name:COMMANDS", "return"
    flag_guards: tuple = ()


@dataclass(slots=True)
class NameUse:
    """A read of a local name that holds a file listing (see the walker's `_LISTING_METHODS`), of a
    list a loop builds, or of the index of `enumerate` over a listing; and every slice or computed-index
    subscript of a `self` attribute (`self.files[index]`, name "self.files"). With where the read
    flows (`Sink`)."""

    name: str
    scope: str
    order: int
    sinks: tuple


@dataclass(slots=True)
class Assignment:
    """`a.b = value` (attribute targets only: plain names are local state, not settings)."""

    node: int
    target: str
    value: Value
    scope: str
    order: int
    in_main: bool
    names: frozenset = frozenset()
    flag_guards: tuple = ()  # FlagGuards of the enclosing `if`s in this function, as for Call


@dataclass(slots=True, frozen=True)
class Guard:
    """The condition a call runs under: what the test mentions, and whether it is the else side."""

    mentions: frozenset
    negated: bool = False


@dataclass(slots=True)
class NameAssignment:
    """`name = value` inside a function or module, recorded after its right side (data flow)."""

    name: str
    value: Value
    scope: str
    order: int


@dataclass(slots=True)
class EnvWrite:
    """An environment variable set from Python (`os.environ[...] = `, `setdefault`, `putenv`, `update`)."""

    node: int
    name: str
    value: Optional[str]  # None when not a literal
    scope: str
    order: int
    in_main: bool
    flag_guards: tuple = ()  # FlagGuards of the enclosing `if`s in this function, as for Call


@dataclass(slots=True)
class KeyWrite:
    """`name["KEY"] = value` on anything but `os.environ`: an options dict built key by key
    (`option["ACL_PRECISION_MODE"] = "allow_fp32_to_fp16"` before `torch.npu.set_option(option)`)."""

    node: int
    base: str  # the dotted name written into
    key: str
    value: Value
    scope: str
    order: int


@dataclass(slots=True)
class Division:
    """`a / b` or `a /= b` with a (dotted) name on the right: how a value is normalised
    (`loss = loss / args.gradient_accumulation_steps`)."""

    node: int
    left: Value
    right: Value
    scope: str
    order: int


@dataclass(slots=True)
class Import:
    module: str  # absolute, or with leading dots for relative imports
    name: Optional[str]  # imported member for `from m import name`
    bound: str  # the local name it binds
    scope: str
    in_fallback: bool  # inside `try:` whose handler catches ImportError


@dataclass(slots=True)
class FunctionDef:
    node: int
    qualname: str  # "seed_all", "Trainer.fit"
    owner: Optional[str]  # the class for methods
    order: int
    params: tuple = ()  # parameter names, in order
    decorators: tuple = ()  # Values of the decorators (`@torch.jit.script` has dotted "torch.jit.script")
    # Parameter name -> Value of its default (`dropout=0.1`) and of its annotation (`config: BertConfig`),
    # for the parameters that have one: where a value written as a parameter's name comes from.
    defaults: dict = field(default_factory=dict)
    annotations: dict = field(default_factory=dict)


@dataclass(slots=True)
class ClassDef:
    node: int
    qualname: str
    bases: tuple  # Values (dotted + names)
    order: int
    # Class-body defaults `seed: Optional[int] = None` / `seed = field(default=None)`: name -> Value.
    fields: dict = field(default_factory=dict)
    decorators: tuple = ()  # Values of the decorators (`@MODELS.register_module()`)


@dataclass(eq=False)  # identity: one record per file
class FileFacts:
    path: str  # as reported (relative to the scan root when possible)
    abspath: str
    bindings: dict = field(default_factory=dict)  # local name -> set of qualified names
    calls: list = field(default_factory=list)
    assignments: list = field(default_factory=list)
    name_assignments: list = field(default_factory=list)  # NameAssignment, in source order
    env_writes: list = field(default_factory=list)
    key_writes: list = field(default_factory=list)  # KeyWrite, in source order
    imports: list = field(default_factory=list)
    functions: dict = field(default_factory=dict)  # qualname -> FunctionDef
    classes: dict = field(default_factory=dict)  # qualname -> ClassDef
    # `NAME = <literal>` per (scope, name): the last such assignment, as (value, node).
    constants: dict = field(default_factory=dict)
    # Optimizer param groups written as a list of dicts (`[{"params": p, "weight_decay": 0.0}]`):
    # call node -> ParamGroups of its first argument (the dicts' literal entries only).
    param_groups: dict = field(default_factory=dict)
    # A call whose first argument is a list or tuple of names (`Adam([image], lr=0.1)`): call node -> the
    # elements' dotted names ("" for an element that is not a plain name). What an optimizer steps.
    name_lists: dict = field(default_factory=dict)
    blocks: list = field(default_factory=list)  # Block, in source order
    returns: list = field(default_factory=list)  # Return, in source order
    name_uses: list = field(default_factory=list)  # NameUse: reads of listings, lists built in loops, self.x[...]
    references: list = field(default_factory=list)  # Reference to this file's functions/classes or imported names
    divisions: list = field(default_factory=list)  # Division, in source order
    # Dotted names used as bounds of a slice (`logits[..., :vocab_size]` gives "vocab_size").
    slice_bounds: set = field(default_factory=set)
    # `self.<attr>` written anywhere in a function, as (function scope, attr) -> how often, assignment
    # targets included: what a class's methods use of what its `__init__` builds (linter.layers).
    self_attributes: dict = field(default_factory=dict)
    main_guard: Optional[int] = None  # node of `if __name__ == "__main__":`
    spans: list = field(default_factory=list)  # node index -> Location
    suppressions: dict = field(default_factory=dict)  # line -> frozenset of codes (empty = all)
    line_count: int = 0
    test_nodes: frozenset = frozenset()  # nodes inside test code (linter.roles); never reported
    role: Optional[str] = None  # "test" / "packaging" for a whole file that is not training (linter.roles)
    # A local bound once to a test (`mixup_active = args.mixup > 0 or args.cutmix > 0`): (scope, name) -> the
    # guards that test is, so `if mixup_active:` is resolved as that test (linter.runconfig).
    tests: dict = field(default_factory=dict)

    def calls_in(self, scope: str) -> list:
        return [c for c in self.calls if c.scope == scope]
