"""ACL211 by sink: a listing is reported where its order reaches training (a dataset, a shuffle or
split, a position read in a dataset class, numbering, a manifest), followed across methods, loops
and returns; order-free uses stay quiet."""

from __future__ import annotations

import textwrap

from acclint.config import Config
from acclint.linter.engine import scan
from acclint.rules.file_order import RULES

RULE = RULES[0]


def lines(tmp_path, source: str, name: str = "data.py") -> list:
    (tmp_path / name).write_text(textwrap.dedent(source), encoding="utf-8")
    result = scan([tmp_path], [RULE], Config(), jobs=1, cwd=tmp_path)
    assert result.errors == []
    return sorted(f.line for f in result.findings)


def messages(tmp_path, source: str) -> list:
    (tmp_path / "data.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return [f.message for f in scan([tmp_path], [RULE], Config(), jobs=1, cwd=tmp_path).findings]


def test_listing_in_init_indexed_in_getitem(tmp_path):
    assert lines(tmp_path, """
        import glob

        class Clips:
            def __init__(self, root):
                self.clips = glob.glob(root + "/*.wav")

            def __getitem__(self, i):
                path = self.clips[i]
                return path
    """) == [6]


def test_getitem_defined_before_init_is_still_followed(tmp_path):
    assert lines(tmp_path, """
        import os

        class Clips:
            def __getitem__(self, i):
                return self.names[i]

            def __init__(self, root):
                self.names = os.listdir(root)
    """) == [9]


def test_stored_list_only_counted_or_first_element_is_quiet(tmp_path):
    assert lines(tmp_path, """
        import os

        class Resume:
            def __init__(self, root):
                self.runs = os.listdir(root)
                self.count = len(self.runs)

            def latest(self):
                return self.runs[-1] if self.runs else None
    """) == []


def test_shard_list_indexed_by_epoch_through_a_comprehension(tmp_path):
    assert lines(tmp_path, """
        from pathlib import Path

        class Task:
            def __init__(self, data):
                shards = list(Path(data).glob("shard*"))
                if shards:
                    self.paths = [str(s) for s in shards]

            def load(self, epoch):
                return self.paths[(epoch - 1) % len(self.paths)]
    """) == [6]


def test_random_pick_from_stored_list(tmp_path):
    found = messages(tmp_path, """
        import random
        from pathlib import Path

        class Noise:
            def __init__(self, root):
                self.files = list(Path(root).rglob("*.wav"))

            def __call__(self, audio):
                return mix(audio, random.choice(self.files))
    """)
    assert len(found) == 1 and "random.choice" in found[0]


def test_list_kept_by_a_dataset_class_and_iterated_in_iter(tmp_path):
    assert lines(tmp_path, """
        import os
        from torch.utils.data import IterableDataset

        class Stream(IterableDataset):
            def __init__(self, root):
                self.files = os.listdir(root)

        class Lines:
            def __init__(self, root):
                self.files = os.listdir(root)

            def __iter__(self):
                for f in self.files:
                    yield from open(f)
    """) == [7, 11]


def test_generator_dataset_source(tmp_path):
    assert lines(tmp_path, """
        import os
        import mindspore.dataset as ds

        class Source:
            def __init__(self, root):
                self.items = os.listdir(root)

        def build(root):
            return ds.GeneratorDataset(Source(root), ["image"])
    """) == [7]


def test_returned_list_followed_to_the_caller_that_dumps_it(tmp_path):
    found = messages(tmp_path, """
        import json
        import os

        def convert(root):
            rows = []
            for name in os.listdir(root):
                rows.append({"image": name})
            return rows

        def main(root, out):
            data = convert(root)
            with open(out, "w") as f:
                json.dump(data, f)
    """)
    assert len(found) == 1 and "json.dump" in found[0]


def test_returned_list_whose_caller_is_unknown_is_quiet(tmp_path):
    assert lines(tmp_path, """
        import os

        def list_runs(root):
            return [os.path.join(root, d) for d in os.listdir(root)]
    """) == []


def test_manifest_written_line_by_line_but_not_one_output_per_file(tmp_path):
    assert lines(tmp_path, """
        import csv
        import glob
        import os

        def manifest(root, out):
            with open(out, "w") as f:
                writer = csv.writer(f)
                for path in glob.glob(root + "/*.flac"):
                    writer.writerow([path, os.path.getsize(path)])

        def resample(root):
            for path in glob.glob(root + "/*.flac"):
                with open(path + ".txt", "w") as f:
                    f.write(path)
    """) == [9]


def test_enumerate_numbers_labels(tmp_path):
    assert lines(tmp_path, """
        import os

        def classes(root):
            class_to_idx = {}
            for i, name in enumerate(os.listdir(root)):
                class_to_idx[name] = i
            return class_to_idx

        def show(root):
            for i, name in enumerate(os.listdir(root)):
                print(i, name)
    """) == [6]


def test_shuffle_and_split(tmp_path):
    assert lines(tmp_path, """
        import glob
        import random
        from sklearn.model_selection import train_test_split

        def split_a(root):
            files = glob.glob(root + "/*.jpg")
            random.seed(0)
            random.shuffle(files)
            return files

        def split_b(root):
            files = glob.glob(root + "/*.jpg")
            return train_test_split(files, test_size=0.1, random_state=0)

        def split_c(root):
            files = glob.glob(root + "/*.jpg")
            files.sort()
            random.shuffle(files)
            return files
    """) == [7, 13]


def test_order_free_uses_are_quiet(tmp_path):
    assert lines(tmp_path, """
        import glob
        import json
        import os
        import shutil

        def summary(root, out):
            total = sum(json.load(open(f))["count"] for f in glob.glob(root + "/*.json"))
            by_name = {os.path.basename(f): f for f in glob.glob(root + "/*.bin")}
            for f in os.listdir(root):
                shutil.copy(f, out)
            seen = set(os.listdir(out))
            return total, by_name, seen
    """) == []


def test_list_built_per_file_then_concatenated(tmp_path):
    assert lines(tmp_path, """
        import glob
        from torch.utils.data import ConcatDataset

        def build(root):
            parts = []
            for path in glob.glob(root + "/*.arrow"):
                parts.append(Part(path))
            return ConcatDataset(parts)
    """) == [7]


def test_batches_sliced_in_a_loop_are_iteration_not_a_split(tmp_path):
    assert lines(tmp_path, """
        import glob

        def archive(root, run):
            objs = glob.glob(root + "/*.o")
            for start in range(0, len(objs), 100):
                batch = objs[start:start + 100]
                run(batch)

        def split(root):
            objs = glob.glob(root + "/*.npy")
            train = objs[:-100]
            return train
    """) == [11]


def test_helper_handed_to_a_dataset_by_another_keyword_is_not_its_source(tmp_path):
    assert lines(tmp_path, """
        import os

        class Filter:
            def __init__(self, root):
                self.known = [f[:-4] for f in os.listdir(root)]

            def __call__(self, row):
                return row["id"] in self.known

        subsets = [SubsetDataset("default", preprocess_func=Filter("videos"))]
    """) == []


def test_a_page_returned_for_display_is_not_a_split(tmp_path):
    assert lines(tmp_path, """
        import os

        def page(root, index, size=10):
            rows = []
            for name in os.listdir(root):
                rows.extend(read(os.path.join(root, name)))
            return len(rows), rows[index * size:(index + 1) * size]
    """) == []
