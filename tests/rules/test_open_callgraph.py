"""Absence claims over an open call graph: what the project model follows (functions handed over as
values) and what it cannot (targets chosen at run time), and how that lowers a "never" claim."""

from __future__ import annotations

import textwrap

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.rules import all_rules


def _scan(tmp_path, files: dict, codes=("ACL201", "ACL101", "ACL104", "ACL107")):
    for name, source in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(source).replace("    <TRAIN>\n", TRAIN_LOOP), encoding="utf-8")
    rules = [r for r in all_rules() if r.code in codes]
    result = scan([tmp_path], rules, Config(), jobs=1, cwd=tmp_path)
    assert result.errors == []
    return result.findings


# Four statements that train, indented to sit in a function or `if __name__ == "__main__":` body.
TRAIN_LOOP = (
    "    model = torch.nn.Linear(2, 1)\n"
    "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    model(torch.ones(2)).sum().backward()\n"
    "    optimizer.step()\n"
)


def test_config_built_trainer_lowers_the_claim_to_info_and_names_the_calls(tmp_path):
    findings = _scan(tmp_path, {"train.py": """
        import sys
        import torch
        from hydra.utils import instantiate

        if __name__ == "__main__":
            torch.manual_seed(0)
            trainer = instantiate(sys.argv[1])
            trainer.train()
    """})
    [finding] = [f for f in findings if f.rule == "ACL201"]
    assert finding.severity == "info"
    assert "Not certain: 2 calls" in finding.message
    assert "`instantiate()` at train.py:8" in finding.message and "`trainer.train()` at train.py:9" in finding.message


def test_a_closed_program_keeps_its_warning(tmp_path):
    findings = _scan(tmp_path, {"train.py": """
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2)])

            def forward(self, x):
                return self.layers[0](x)  # a layer picked from a list: model code, not set-up

        if __name__ == "__main__":
            torch.manual_seed(0)
            model = Net()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.ones(2)).sum().backward()
            optimizer.step()
    """})
    [finding] = [f for f in findings if f.rule == "ACL201"]
    assert finding.severity == "warning" and "Not certain" not in finding.message


def test_an_unknown_handler_table_is_open_but_a_dict_of_local_functions_is_followed(tmp_path):
    unknown = _scan(tmp_path / "a", {"train.py": """
        import sys
        import torch
        from plugins import HANDLERS

        if __name__ == "__main__":
            torch.manual_seed(0)
            HANDLERS[sys.argv[1]]()
            <TRAIN>
    """})
    assert [f.severity for f in unknown if f.rule == "ACL201"] == ["info"]
    local = _scan(tmp_path / "b", {"train.py": """
        import sys
        import torch

        def deterministic():
            torch.use_deterministic_algorithms(True)

        HANDLERS = {"det": deterministic}

        if __name__ == "__main__":
            torch.manual_seed(0)
            HANDLERS[sys.argv[1]]()
            <TRAIN>
    """})
    assert [f for f in local if f.rule == "ACL201"] == []


def test_sub_command_dict_in_main_reaches_a_training_function_in_another_module(tmp_path):
    """Recall: the program behind a dict-dispatched CLI is a training program."""
    findings = _scan(tmp_path, {
        "tool/__main__.py": """
            import sys
            from tool.train import run_training
            from tool.export import run_export

            COMMANDS = {"train": run_training, "export": run_export}

            if __name__ == "__main__":
                COMMANDS[sys.argv[1]](sys.argv[2:])
        """,
        "tool/__init__.py": "",
        "tool/export.py": "def run_export(argv):\n    pass\n",
        "tool/train.py": """
            import torch

            def run_training(argv):
                torch.manual_seed(0)
                <TRAIN>
        """,
    })
    assert [(f.path, f.severity) for f in findings if f.rule == "ACL201"] == [("tool/__main__.py", "warning")]


def test_worker_handed_to_spawn_is_followed(tmp_path):
    findings = _scan(tmp_path, {"train.py": """
        import torch
        import torch.multiprocessing as mp

        def worker(rank):
            torch.manual_seed(0)
            torch.use_deterministic_algorithms(True)
            <TRAIN>

        if __name__ == "__main__":
            mp.spawn(worker, nprocs=2)
    """})
    assert [f for f in findings if f.rule in ("ACL201", "ACL104")] == []


def test_a_layer_reseeding_around_its_init_is_not_the_programs_seed(tmp_path):
    findings = _scan(tmp_path, {"train.py": """
        import torch

        class Proj(torch.nn.Linear):
            def __init__(self):
                super().__init__(2, 1)
                saved = torch.random.initial_seed()
                torch.manual_seed(123)
                torch.nn.init.xavier_uniform_(self.weight)
                torch.manual_seed(saved)

        if __name__ == "__main__":
            torch.use_deterministic_algorithms(True)
            model = Proj()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.ones(2)).sum().backward()
            optimizer.step()
    """}, codes=("ACL104",))
    assert [f.rule for f in findings] == ["ACL104"]


def test_building_a_component_from_a_config_is_not_an_open_call(tmp_path):
    """`model = instantiate(cfg.model)` builds a part of the run, which does not seed or switch
    determinism; the claim stays a warning. `importlib.import_module` alone only runs a module."""
    findings = _scan(tmp_path, {"train.py": """
        import importlib
        import sys
        import torch
        from hydra.utils import instantiate

        if __name__ == "__main__":
            torch.manual_seed(0)
            importlib.import_module("plugins")
            model = instantiate(sys.argv[1]).to("cpu")
            optimizer = instantiate(sys.argv[2], model.parameters())
            model(torch.ones(2)).sum().backward()
            optimizer.step()
    """})
    [finding] = [f for f in findings if f.rule == "ACL201"]
    assert finding.severity == "warning" and "Not certain" not in finding.message


def test_a_class_kept_in_a_registry_does_not_order_model_construction(tmp_path):
    """A model class in a registry dict is built later, by lookup: following it must not make the
    program 'construct the model' at import, before the seed (ACL108)."""
    findings = _scan(tmp_path, {
        "models.py": """
            import torch

            class Encoder(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = torch.nn.Linear(2, 2)

            ENCODERS = {"default": Encoder}
        """,
        "train.py": """
            import torch
            from models import ENCODERS

            if __name__ == "__main__":
                torch.manual_seed(0)
                model = ENCODERS["default"]()
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                model(torch.ones(2)).sum().backward()
                optimizer.step()
        """,
    }, codes=("ACL108",))
    assert findings == []


def test_a_model_looked_up_by_name_is_a_component_not_an_open_call(tmp_path):
    """`model = models.__dict__[args.arch]()` picks an architecture: the model does not seed the run."""
    findings = _scan(tmp_path, {"train.py": """
        import sys
        import torch
        import torchvision.models as models

        if __name__ == "__main__":
            torch.manual_seed(0)
            model = models.__dict__[sys.argv[1]]()
            model.cuda()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model(torch.ones(2)).sum().backward()
            optimizer.step()
    """})
    [finding] = [f for f in findings if f.rule == "ACL201"]
    assert finding.severity == "warning" and "Not certain" not in finding.message
