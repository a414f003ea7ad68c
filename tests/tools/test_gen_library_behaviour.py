"""tools/gen_library_behaviour.py reads what MindSpore's own source does; the shipped table is what it
writes for the installed MindSpore."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import mindspore

from acclint.knowledge import library, table

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_library_behaviour", ROOT / "tools" / "gen_library_behaviour.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_shipped_table_is_what_the_installed_mindspore_source_gives(tmp_path):
    out = tmp_path / "library_behaviour.toml"
    assert _generator().main(["-o", str(out)]) == 0
    shipped = (ROOT / "src" / "acclint" / "knowledge" / "library_behaviour.toml").read_text("utf-8")
    assert out.read_text("utf-8") == shipped, "regenerate: python tools/gen_library_behaviour.py"
    assert table("library_behaviour")["sources"]["mindspore"]["version"] == mindspore.__version__


def test_mindspore_set_seed_covers_python_random_through_the_dataset_seed():
    entry = table("library_behaviour")["seeders"]["mindspore.set_seed"]
    assert entry["calls"] == ["numpy.random.seed", "mindspore.dataset.config.set_seed"]
    assert {"python-random", "numpy", "mindspore", "mindspore-dataset"} <= set(library.seeders()["mindspore.set_seed"]["covers"])


def test_tfrecord_reader_sorts_its_files():
    found = library.sorted_input({"mindspore.dataset.TFRecordDataset"})
    assert found["parameter"] == "dataset_files" and found["file"].endswith("datasets_standard_format.py")
    assert library.sorted_input({"tensorflow.data.TFRecordDataset"}) is None


def test_library_calls_that_set_the_train_mode_are_read_from_the_source():
    setters = library.train_mode_setters()
    assert {"mindspore.amp.build_train_network", "mindspore.nn.WithGradCell"} <= setters
    assert "mindspore.nn.TrainOneStepCell" not in setters  # its __init__ leaves the mode alone
