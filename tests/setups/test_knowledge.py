"""The data behind `acclint diff`: constructor defaults checked against the installed PyTorch and
MindSpore, the generated launcher-defaults table, and the script that regenerates it."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from acclint.knowledge import table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
CONSTRUCTORS = table("setups")["constructors"]


def _signature_defaults(qualified: str) -> dict:
    module_name, _, name = qualified.rpartition(".")
    target = getattr(importlib.import_module(module_name), name)
    init = target.__init__ if inspect.isclass(target) else target
    parameters = inspect.signature(init).parameters
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()) and len(parameters) <= 3:
        # MindSpore wraps some constructors in (*args, **kwargs); read the original source.
        source = inspect.getsource(target)
        start = source.index("def __init__")
        namespace: dict = {}
        header = source[start:source.index(":\n", start) + 1].strip()
        exec(dedent(header) + "\n    pass", namespace)  # noqa: S102 - the library's own signature
        parameters = inspect.signature(namespace["__init__"]).parameters
    return {n: p.default for n, p in parameters.items() if p.default is not inspect.Parameter.empty}


def _as_table_value(value):
    return list(value) if isinstance(value, tuple) else value


TORCH = sorted(name for name, spec in CONSTRUCTORS.items() if name.startswith("torch.") and spec.get("defaults")
               and not name.startswith(("torch.npu", "torch.cuda.amp")))
MINDSPORE = sorted(name for name, spec in CONSTRUCTORS.items() if name.startswith("mindspore.") and spec.get("defaults")
                   and not name.startswith("mindspore.dataset"))


@pytest.mark.parametrize("qualified", TORCH)
def test_torch_defaults_match_the_installed_torch(qualified):
    actual = _signature_defaults(qualified)
    for param, expected in CONSTRUCTORS[qualified]["defaults"].items():
        assert _as_table_value(actual[param]) == pytest.approx(expected), (qualified, param)


@pytest.mark.parametrize("qualified", MINDSPORE)
def test_mindspore_defaults_match_the_installed_mindspore(qualified):
    actual = _signature_defaults(qualified)
    for param, expected in CONSTRUCTORS[qualified]["defaults"].items():
        assert _as_table_value(actual[param]) == pytest.approx(expected), (qualified, param)


def test_positional_order_matches_the_signatures():
    import torch  # noqa: F401

    for qualified in TORCH:
        module_name, _, name = qualified.rpartition(".")
        target = getattr(importlib.import_module(module_name), name)
        init = target.__init__ if inspect.isclass(target) else target
        names = [n for n in inspect.signature(init).parameters if n != "self"]
        params = CONSTRUCTORS[qualified]["params"]
        assert names[: len(params)] == params, qualified


def test_launcher_defaults_carry_their_versions_and_the_documented_values():
    defaults = table("launcher_defaults")
    assert defaults["sources"]["megatron"]["version"] == "core_v0.12.1"
    assert defaults["sources"]["mindspeed"]["repository"] == "Ascend/MindSpeed"
    megatron, mindspeed, llm = defaults["megatron"], defaults["mindspeed"], defaults["mindspeed-llm"]
    # docs/knowledge/launchers.md
    assert megatron["attention-dropout"]["default"] == 0.1 and megatron["hidden-dropout"]["default"] == 0.1
    assert megatron["initial-loss-scale"]["default"] == 2**32
    assert megatron["adam-beta2"]["default"] == 0.999 and megatron["seed"]["default"] == 1234
    assert megatron["make-vocab-size-divisible-by"]["default"] == 128
    assert megatron["no-gradient-accumulation-fusion"]["action"] == "store_false"
    assert "default" not in megatron["lr"]  # None: must be set
    assert mindspeed["pre-tockens"]["default"] == 65536 and llm["pre-tockens"]["default"] == 1048576
    assert llm["distributed-timeout-minutes"]["default"] == 30
    assert mindspeed["use-fused-swiglu"]["action"] == "store_true"


def test_generator_reads_argparse_and_set_defaults(tmp_path: Path):
    megatron = tmp_path / "meg" / "megatron" / "training"
    megatron.mkdir(parents=True)
    (megatron / "arguments.py").write_text(dedent("""\
        def add(parser):
            group = parser.add_argument_group(title='x')
            group.add_argument('--lr', type=float, default=None)
            group.add_argument('--initial-loss-scale', type=float, default=2**32)
            group.add_argument('--no-masked-softmax-fusion', action='store_false', dest='masked_softmax_fusion')
            group.add_argument('--distributed-timeout-minutes', type=int, default=10)
    """))
    features = tmp_path / "llm" / "mindspeed_llm" / "features_manager"
    features.mkdir(parents=True)
    (features / "basic.py").write_text(dedent("""\
        def register_args(parser):
            parser.set_defaults(distributed_timeout_minutes=30)
            parser.add_argument('--pre-tockens', type=int, default=1048576)
    """))
    output = tmp_path / "out.toml"
    subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_launcher_defaults.py"), "--megatron", f"{tmp_path / 'meg'}@v1",
         "--mindspeed-llm", f"{tmp_path / 'llm'}@v2", "-o", str(output)],
        check=True,
    )
    generated = tomllib.loads(output.read_text())
    assert generated["sources"]["megatron"]["version"] == "v1"
    assert generated["megatron"]["initial-loss-scale"]["default"] == 2**32
    assert generated["megatron"]["no-masked-softmax-fusion"] == {
        "default": True, "action": "store_false", "dest": "masked_softmax_fusion",
        "file": "megatron/training/arguments.py:5",
    }
    assert "default" not in generated["megatron"]["lr"]
    assert generated["mindspeed-llm"]["distributed-timeout-minutes"]["default"] == 30
    assert generated["mindspeed-llm"]["distributed-timeout-minutes"]["overrides"] == "10"
    assert generated["mindspeed-llm"]["pre-tockens"]["default"] == 1048576
