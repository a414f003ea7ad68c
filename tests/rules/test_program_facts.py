"""Program facts as the rules read them: seeding through helpers acclint cannot read, model
construction, device placement, seeding behind optional flags, NPU launch scripts."""

from __future__ import annotations

import re
import pytest

from acclint.config import Config
from acclint.knowledge import table
from acclint.linter.engine import scan
from acclint.linter.rulebase import Rule
from acclint.linter.shell import read_shell_script
from acclint.rules import all_rules
from acclint.rules.determinism import _ascend_evidence
from acclint.rules.program_facts import program_facts


class _Capture(Rule):
    """Records the facts of every program the engine checks."""

    code, name, category, severity, summary = "ACL999", "capture", "seed", "info", "test only"

    def __init__(self):
        self.facts = {}

    def check_program(self, ctx):
        self.facts[ctx.program.entry.path] = (program_facts(ctx), ctx.program)


def _write(tmp_path, files: dict) -> None:
    for name, source in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")


def facts_for(tmp_path, files: dict, entry: str = "train.py"):
    _write(tmp_path, files)
    capture = _Capture()
    result = scan([tmp_path], [capture], Config(), jobs=1, cwd=tmp_path)
    assert result.errors == []
    return capture.facts[entry]


def findings(tmp_path, files: dict, code: str) -> list:
    _write(tmp_path, files)
    result = scan([tmp_path], all_rules(), Config(), jobs=1, cwd=tmp_path)
    return [f for f in result.findings if f.rule == code]


TRAIN_TAIL = "model = torch.nn.Linear(2, 1)\nmodel(torch.ones(2)).sum().backward()\n"


# -- seeding helpers acclint cannot read ------------------------------------------------------


@pytest.mark.parametrize("name", ["seed", "set_seed", "seed_everything", "seed_all", "init_seeds",
                                  "set_random_seed", "fix_seed", "setup_seed", "same_seeds", "setSeed",
                                  "set_global_seed", "fix_random_seed", "seed_torch"])
def test_an_unreadable_helper_named_like_a_seeder_seeds_every_generator(tmp_path, name):
    facts, _ = facts_for(tmp_path, {"train.py": f"import torch\nfrom lab.common import {name}\n{name}(1)\n" + TRAIN_TAIL})
    assert {"python-random", "numpy", "torch-cpu", "cuda", "npu", "mindspore"} <= set(facts.seeded)
    assert "acclint cannot read it" in facts.seeded["torch-cpu"].what
    assert facts.effects == {}  # determinism is never assumed


@pytest.mark.parametrize("source", [
    "from lab.common import get_seed\nget_seed(1)\n",  # returns a seed
    "from lab.common import seed_worker\nseed_worker(1)\n",  # a DataLoader worker_init_fn
    "torch.seed()\n",  # torch's own: seeds with a random seed
    "torch.cuda.seed_all()\n",
    "trainer = object()\ntrainer.set_seed(1)\n",  # a method on an object: not an import
])
def test_what_is_not_taken_for_an_unreadable_seeder(tmp_path, source):
    facts, _ = facts_for(tmp_path, {"train.py": "import torch\n" + source + TRAIN_TAIL})
    assert "torch-cpu" not in facts.seeded


def test_a_star_import_from_an_unreadable_module_is_guessed_and_a_local_one_is_read(tmp_path):
    facts, _ = facts_for(tmp_path, {"train.py": "import torch\nfrom lab.utils import *\ninit_seeds(1)\n" + TRAIN_TAIL})
    assert "torch-cpu" in facts.seeded
    facts, _ = facts_for(tmp_path, {
        "train.py": "import torch\nfrom lab.utils import *\ninit_seeds(1)\n" + TRAIN_TAIL,
        "lab/utils.py": "import numpy as np\n\ndef init_seeds(seed):\n    np.random.seed(seed)\n",
    })
    assert set(facts.seeded) == {"numpy"}


def test_a_star_import_of_a_local_package_follows_its_re_exports(tmp_path):
    facts, _ = facts_for(tmp_path, {
        "train.py": "import torch\nfrom lab.utils import *\nrandom_seed(1)\n" + TRAIN_TAIL,
        "lab/__init__.py": "",
        "lab/utils/__init__.py": "from .random import random_seed\n",
        "lab/utils/random.py": "import torch\n\ndef random_seed(seed):\n    torch.manual_seed(seed)\n",
    })
    assert "torch-cpu" in facts.seeded


def test_a_local_helper_is_read_not_guessed(tmp_path):
    facts, _ = facts_for(tmp_path, {
        "train.py": "import torch\nfrom utils.seeding import seed_everything\nseed_everything(1)\n" + TRAIN_TAIL,
        "utils/seeding.py": "import numpy as np\n\ndef seed_everything(seed):\n    np.random.seed(seed)\n",
    })
    assert set(facts.seeded) == {"numpy"}


def test_unseen_pattern_is_data_and_matches_whole_names():
    pattern = re.compile(table("seeding")["unseen_helpers"]["pattern"])
    assert pattern.fullmatch("seed_everything") and not pattern.fullmatch("seedling")
    assert not pattern.fullmatch("reseed_loader")


@pytest.mark.parametrize("source,covers,effects", [
    ("from mindcv.utils import set_seed\nset_seed(1)\n", {"python-random", "mindspore", "numpy"}, set()),
    ("from mindformers.trainer.utils import set_seed\nset_seed(1)\n", {"python-random", "mindspore", "numpy"}, set()),
    ("from mmdet.apis import set_random_seed\nset_random_seed(1, deterministic=True)\n",
     {"python-random", "numpy", "torch-cpu", "cuda", "npu"}, {"cudnn-deterministic"}),
    ("from mmengine.runner import set_random_seed\nset_random_seed(1, True)\n",
     {"python-random", "numpy", "torch-cpu", "cuda", "npu"}, {"cudnn-deterministic", "deterministic-algorithms"}),
    ("from ultralytics.utils.torch_utils import init_seeds\ninit_seeds(0, deterministic=True)\n",
     {"python-random", "numpy", "torch-cpu", "cuda", "npu"},
     {"deterministic-algorithms", "cudnn-deterministic", "cublas-workspace", "pythonhashseed-children"}),
    ("from ultralytics.utils.torch_utils import init_seeds\ninit_seeds(0)\n",
     {"python-random", "numpy", "torch-cpu", "cuda", "npu"}, set()),
    ("from deepspeed.runtime.utils import set_random_seed\nset_random_seed(1)\n",
     {"python-random", "numpy", "torch-cpu", "cuda", "npu"}, set()),
    ("from mmdet.apis import init_random_seed\ninit_random_seed(None)\n", set(), set()),
])
def test_library_helpers_cover_what_their_sources_seed(tmp_path, source, covers, effects):
    facts, _ = facts_for(tmp_path, {"train.py": "import torch\n" + source + TRAIN_TAIL})
    assert set(facts.seeded) == covers
    assert set(facts.effects) == effects


# -- model construction -----------------------------------------------------------------------


def _first_model(tmp_path, body: str, extra: dict = None):
    facts, _ = facts_for(tmp_path, {"train.py": "import torch\nfrom torch import nn\n" + body
                                    + "loss.backward()\noptimizer.step()\n", **(extra or {})})
    model = facts.first_model
    return None if model is None else (model.file.path, model.file.spans[model.fact.node].line)


@pytest.mark.parametrize("body", [
    "m = nn.Sequential(nn.Linear(4, 2))\n",
    "m = nn.Linear(4, 2)\n",
    "import torchvision\nm = torchvision.models.resnet50()\n",
    "import timm\nm = timm.create_model('resnet50')\n",
    "from transformers import AutoModelForCausalLM\nm = AutoModelForCausalLM.from_config(None)\n",
    "from transformers import LlamaForCausalLM\nm = LlamaForCausalLM(None)\n",
    "from megatron.core.models.gpt import GPTModel\nm = GPTModel(config=None, transformer_layer_spec=None)\n",
    "import mindspore.nn as msnn\nm = msnn.Dense(3, 1)\n",
])
def test_model_constructions(tmp_path, body):
    line = body.count("\n") + 2  # the construction is the last line of the body
    assert _first_model(tmp_path, body) == ("train.py", line)


@pytest.mark.parametrize("body", [
    "a = nn.ReLU()\nb = nn.CrossEntropyLoss()\nc = nn.Dropout(0.1)\nd = nn.LayerNorm(4)\n",
    "from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec\ns = get_gpt_layer_local_spec()\n",
    "from megatron.core.models.gpt.moe_module_specs import get_moe_module_spec\ns = get_moe_module_spec()\n",
    "from megatron.core.transformer import TransformerConfig\nfrom megatron.core.transformer.spec_utils import "
    "ModuleSpec\nc = TransformerConfig(num_layers=2)\ns = ModuleSpec(module=None)\n",
    "from transformers import AutoTokenizer, AutoConfig, DataCollatorForLanguageModeling\n"
    "t = AutoTokenizer.from_pretrained('x')\nc = AutoConfig.from_pretrained('x')\nd = DataCollatorForLanguageModeling(t)\n",
    "import torchvision\nw = torchvision.models.ResNet50_Weights.DEFAULT\nn = torchvision.models.list_models()\n",
    "class Loss(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.act = nn.ReLU()\n"
    "criterion = Loss()\n",
])
def test_things_without_weights_are_not_models(tmp_path, body):
    assert _first_model(tmp_path, body) is None


def test_a_local_module_is_reported_where_it_is_built_when_it_reaches_weights(tmp_path):
    found = _first_model(tmp_path, "", {"train.py": (
        "import torch\nfrom nets import Net\n\n"
        "def main():\n    model = Net()\n    model(torch.ones(4)).sum().backward()\n\n"
        "if __name__ == '__main__':\n    main()\n"),
        "nets.py": "import torch\n\nclass Block(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                   "        self.fc = torch.nn.Linear(4, 4)\n\nclass Net(torch.nn.Module):\n"
                   "    def __init__(self):\n        super().__init__()\n        self.block = Block()\n"})
    assert found == ("train.py", 5)


def test_seed_after_a_torch_nn_model_gives_acl108(tmp_path):
    found = findings(tmp_path, {"train.py": "import torch\nfrom torch import nn\n\n"
                                "model = nn.Sequential(nn.Linear(4, 2), nn.ReLU())\ntorch.manual_seed(0)\n"
                                "model(torch.ones(4)).sum().backward()\n"}, "ACL108")
    assert [(f.path, f.line) for f in found] == [("train.py", 4)]


# -- device placement -------------------------------------------------------------------------


@pytest.mark.parametrize("source,uses_cuda", [
    ("torch.cuda.manual_seed_all(0)\n", False),
    ("ok = torch.cuda.is_available()\nn = torch.cuda.device_count()\n", False),
    ("m = torch.nn.Linear(2, 1).cuda()\n", True),
    ("x = torch.ones(2).to('cuda:0')\n", True),
    ("d = torch.device('cuda')\n", True),
    ("x = torch.ones(2, device='cuda')\n", True),
    ("d = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n", True),
    ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--device', default='cuda')\n", True),
    ("torch.cuda.set_device(0)\n", True),
    ("torch.distributed.init_process_group(backend='nccl')\n", True),
])
def test_cuda_use_means_placement(tmp_path, source, uses_cuda):
    facts, _ = facts_for(tmp_path, {"train.py": "import torch\n" + source + TRAIN_TAIL})
    assert ("cuda" in facts.uses) is uses_cuda


def test_npu_use_means_placement(tmp_path):
    facts, _ = facts_for(tmp_path, {"train.py": "import torch\nimport torch_npu\ntorch.npu.manual_seed_all(0)\n"
                                    + TRAIN_TAIL})
    assert "npu" not in facts.uses
    facts, _ = facts_for(tmp_path, {"train.py": "import torch\nimport torch_npu\ntorch.npu.set_device(0)\n" + TRAIN_TAIL})
    assert "npu" in facts.uses


# -- seeding behind an optional flag ----------------------------------------------------------


def _argparse(seed_argument: str, guard: str, body: str = "torch.manual_seed(args.seed)") -> str:
    return (f"import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument({seed_argument})\n"
            f"args = p.parse_args()\nif {guard}:\n    {body}\n" + TRAIN_TAIL)


@pytest.mark.parametrize("argument,guard,reported", [
    ("'--seed', default=None, type=int", "args.seed is not None", True),
    ("'--seed', type=int", "args.seed is not None", True),
    ("'--seed', type=int", "args.seed", True),
    ("'--seed', type=int, default=0", "args.seed", True),  # 0 is falsy: `if args.seed:` skips it
    ("'--seed', type=int, default=0", "args.seed is not None", False),
    ("'--seed', type=int, default=42", "args.seed", False),
    ("'--seed', type=int, required=True", "args.seed is not None", False),
    ("'--random-seed', dest='seed', type=int", "args.seed is not None", True),
    ("'--seed', type=int, default=None", "args.seed is not None and args.deterministic", True),
    ("'--seed', type=int, default=None", "seed is not None", False),  # a plain local: a parameter, not the flag
])
def test_seed_behind_flag(tmp_path, argument, guard, reported):
    found = findings(tmp_path, {"train.py": _argparse(argument, guard)}, "ACL109")
    assert bool(found) is reported, [f.message for f in found]


def test_else_of_is_none_and_set_defaults(tmp_path):
    source = ("import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument('--seed', type=int)\n"
              "args = p.parse_args()\nif args.seed is None:\n    print('unseeded')\nelse:\n"
              "    torch.manual_seed(args.seed)\n" + TRAIN_TAIL)
    (found,) = findings(tmp_path, {"train.py": source}, "ACL109")
    assert found.line == 9 and "`--seed` defaults to None" in found.message
    fixed = source.replace("args = p.parse_args()", "p.set_defaults(seed=7)\nargs = p.parse_args()")
    assert findings(tmp_path, {"train.py": fixed}, "ACL109") == []


def test_an_unguarded_seed_elsewhere_keeps_it_quiet(tmp_path):
    source = _argparse("'--seed', type=int", "args.seed is not None") + "torch.manual_seed(0)\n"
    assert findings(tmp_path, {"train.py": source}, "ACL109") == []


def test_config_dataclass_field_defaulting_to_none(tmp_path):
    source = (
        "from dataclasses import dataclass, field\nfrom typing import Optional\nimport torch\n\n"
        "@dataclass\nclass TrainConfig:\n    lr: float = 0.1\n    seed: Optional[int] = field(default=None)\n\n"
        "def main(cfg: TrainConfig):\n    if cfg.seed is not None:\n        torch.manual_seed(cfg.seed)\n"
        + "\n".join("    " + line for line in TRAIN_TAIL.strip().splitlines()) + "\n\nif __name__ == '__main__':\n    main(TrainConfig())\n"
    )
    (found,) = findings(tmp_path, {"train.py": source}, "ACL109")
    assert "config field `seed`" in found.message and found.line == 12


def test_launch_script_passing_the_flag_keeps_it_quiet(tmp_path):
    files = {"train.py": _argparse("'--seed', type=int", "args.seed is not None"),
             "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --lr 0.1\n"}
    assert len(findings(tmp_path, files, "ACL109")) == 1
    files["run.sh"] = "#!/bin/bash\nSEED=1234\ntorchrun --nproc_per_node 2 train.py --seed $SEED\n"
    assert findings(tmp_path, files, "ACL109") == []


def test_walker_records_guards_and_fields(tmp_path):
    _, program = facts_for(tmp_path, {"train.py": (
        "import torch\n\nclass Cfg:\n    seed = None\n    name: str = 'x'\n\n"
        "if not args.seed:\n    a()\nelif args.other:\n    b()\nelse:\n    c()\n" + TRAIN_TAIL)})
    facts = program.entry
    guards = {c.callee: [(g.dotted, g.form) for g in c.flag_guards] for c in facts.calls}
    assert guards["a"] == []
    assert guards["b"] == [("args.seed", "truthy"), ("args.other", "truthy")]
    assert guards["c"] == [("args.seed", "truthy")]
    assert {k: v.literal for k, v in facts.classes["Cfg"].fields.items()} == {"seed": None, "name": "x"}


# -- NPU launch scripts -----------------------------------------------------------------------


@pytest.mark.parametrize("script,evidence", [
    ("NPUS_PER_NODE=8\ntorchrun --nproc_per_node $NPUS_PER_NODE pretrain_gpt.py\n", "NPUS_PER_NODE"),
    ("torchrun pretrain_gpt.py --use-fused-rmsnorm --use-mcore-models\n", "--use-fused-rmsnorm"),
    ("source /usr/local/Ascend/ascend-toolkit/set_env.sh\ntorchrun train.py\n", "set_env.sh"),
    ("export HCCL_CONNECT_TIMEOUT=1200\ntorchrun train.py\n", "HCCL_CONNECT_TIMEOUT"),
    ("export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True\ntorchrun train.py\n", "PYTORCH_NPU_ALLOC_CONF"),
    ("msrun --worker_num=8 train.py\n", "msrun"),
    ("GPUS_PER_NODE=8\ntorchrun pretrain_gpt.py --use-flash-attn --use-mcore-models --distributed-backend nccl\n", None),
])
def test_npu_launch_evidence(tmp_path, script, evidence):
    path = tmp_path / "run.sh"
    path.write_text("#!/bin/bash\n" + script, encoding="utf-8")

    class Shell:
        pass

    shell = Shell()
    shell.script = read_shell_script(path)
    found = _ascend_evidence(shell)
    if evidence is None:
        assert found is None
    else:
        assert found is not None and evidence in found


def test_a_helper_seeding_only_the_current_device_is_not_missed_when_all_devices_are_seeded(tmp_path):
    files = {
        "train.py": "import torch\nfrom utils import seed_all\n\nif __name__ == '__main__':\n"
                    "    torch.manual_seed(0)\n    torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()\n",
        "utils.py": "import torch\n\ndef seed_all(seed):\n    torch.npu.manual_seed(seed)\n",
    }
    assert findings(tmp_path, files, "ACL107") == []
    files["train.py"] = files["train.py"].replace("torch.manual_seed(0)", "torch.cuda.manual_seed_all(0)")
    assert len(findings(tmp_path, files, "ACL107")) == 1


def test_an_imported_modules_main_block_does_not_run(tmp_path):
    facts, _ = facts_for(tmp_path, {
        "train.py": "import torch\nimport models\n\nif __name__ == '__main__':\n" + "".join(
            "    " + line + "\n" for line in TRAIN_TAIL.splitlines()),
        "models.py": "import torch\n\nif __name__ == '__main__':\n    torch.manual_seed(0)\n    net = torch.nn.Linear(2, 2)\n",
    })
    assert "torch-cpu" not in facts.seeded
    assert facts.first_model.file.path == "train.py"


def test_facts_keep_source_order_across_if_and_else(tmp_path):
    _, program = facts_for(tmp_path, {"train.py": (
        "import torch\n\nif flag:\n    a()\nelse:\n    b()\nc(d(), e())\n" + TRAIN_TAIL)})
    calls = sorted(program.entry.calls, key=lambda c: c.order)
    assert [c.callee for c in calls][:5] == ["a", "b", "c", "d", "e"]


def test_a_config_object_attribute_is_not_matched_to_an_argparse_flag(tmp_path):
    # MindFormers: `self.config.seed` comes from a YAML file; `--seed` (default None) only overrides it.
    source = ("import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument('--seed', type=int)\n\n"
              "class Trainer:\n    def __init__(self, config):\n        self.config = config\n"
              "        if self.config.seed:\n            torch.manual_seed(self.config.seed)\n\n"
              "if __name__ == '__main__':\n    Trainer(None)\n" + "".join("    " + l + "\n" for l in TRAIN_TAIL.splitlines()))
    assert findings(tmp_path, {"train.py": source}, "ACL109") == []
    assert len(findings(tmp_path, {"train.py": source.replace("self.config.seed:", "args.seed:")}, "ACL109")) == 1


def test_a_seed_helper_only_library_code_imports_is_not_acl107(tmp_path):
    files = {
        "train.py": "import torch\nfrom lib.trainer import fit\n\nif __name__ == '__main__':\n    fit()\n",
        "lib/trainer.py": "import torch\nfrom lib.utils import set_seed\n\n"
                          "def fit():\n    torch.nn.Linear(2, 1)(torch.ones(2)).sum().backward()\n",
        "lib/utils.py": "import random\n\ndef set_seed(seed):\n    random.seed(seed)\n",
    }
    assert findings(tmp_path, files, "ACL107") == []
    files["train.py"] = files["train.py"].replace("from lib.trainer import fit", "from lib.trainer import fit\nfrom lib.utils import set_seed")
    assert [f.path for f in findings(tmp_path, files, "ACL107")] == ["lib/utils.py"]


MINDSPEED_RECIPE = """#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
NPUS_PER_NODE=8
DISTRIBUTED_ARGS="--nproc_per_node $NPUS_PER_NODE --nnodes 1"
GPT_ARGS="--use-mcore-models --use-flash-attn --use-fused-rmsnorm --normalization RMSNorm"
torchrun $DISTRIBUTED_ARGS pretrain_gpt.py $GPT_ARGS --distributed-backend nccl
"""
PRETRAIN = ("from megatron.training import pretrain\n\n\ndef model_provider():\n    pass\n\n\n"
            "if __name__ == '__main__':\n    pretrain(None, model_provider, None, None)\n")


def test_mindspeed_recipe_launching_a_scanned_program_gives_acl205(tmp_path):
    files = {"pretrain_gpt.py": PRETRAIN, "pretrain_llama2_7b_ptd.sh": MINDSPEED_RECIPE}
    (found,) = findings(tmp_path, files, "ACL205")
    assert (found.path, found.line) == ("pretrain_llama2_7b_ptd.sh", 6) and "NPUS_PER_NODE" in found.message
    files["pretrain_llama2_7b_ptd.sh"] = MINDSPEED_RECIPE.replace("NPUS_PER_NODE", "GPUS_PER_NODE").replace(
        " --use-fused-rmsnorm", "")
    assert findings(tmp_path, files, "ACL205") == []  # the same recipe on GPUs (Megatron-LM flags only)
    files["pretrain_llama2_7b_ptd.sh"] = MINDSPEED_RECIPE.replace("NPUS_PER_NODE=8", "NPUS_PER_NODE=8\nexport HCCL_DETERMINISTIC=true")
    assert findings(tmp_path, files, "ACL205") == []


def test_megatron_determinism_env_helper_sets_the_cublas_workspace(tmp_path):
    facts, _ = facts_for(tmp_path, {"train.py": "import os\nimport torch\nfrom megatron.training.determinism import "
                                    "apply_determinism_env\napply_determinism_env(os.environ)\n" + TRAIN_TAIL})
    assert set(facts.effects) == {"cublas-workspace"} and facts.seeded == {}


def test_a_draw_joined_into_a_name_is_not_a_use_of_the_generator(tmp_path):
    naming = ("import random\nimport string\n"
              "prefix = ''.join(random.choice(string.ascii_letters) for _ in range(6))\n")
    facts, _ = facts_for(tmp_path, {"train.py": "import torch\n" + naming + TRAIN_TAIL})
    assert "python-random" not in facts.uses
    facts, _ = facts_for(tmp_path, {"train.py": "import torch\nimport random\norder = random.sample(range(9), 9)\n"
                                                + TRAIN_TAIL})
    assert "python-random" in facts.uses
