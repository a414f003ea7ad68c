"""Category `determinism`: file lists in file-system order (docs/knowledge/determinism.md#file-order)."""

from __future__ import annotations

from typing import Iterator

from acclint.linter.facts import Call, FileFacts
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import ExplicitRule, Written
from acclint.rules.file_sinks import Reach, fo
from acclint.rules.flow import short


def _is_listing(call: Call) -> bool:
    if call.names:
        return bool(call.names & fo()["listing_functions"])
    return call.method in fo()["listing_methods"] and "." in call.callee


class UnsortedFileList(ExplicitRule):
    code = "ACL211"
    name = "unsorted-file-list"
    category = "determinism"
    severity = "warning"
    summary = ("a listing from os.listdir/glob/Path.rglob/os.walk whose file-system order reaches a dataset, "
               "a shuffle or split, sample indices or a manifest")
    doc = RuleDoc(
        what="Reports `os.listdir`, `os.scandir`, `glob.glob`/`iglob`, `Path.glob`/`rglob`/`iterdir` and `os.walk` "
        "whose order reaches something that decides what a model trains on, and which is never sorted on the "
        "way (`sorted(...)` around it, also after filtering or joining in a comprehension, `.sort()` or "
        "`sorted(name)` later). The sinks: a dataset function or class that reads the files in the order given "
        "(`load_dataset(data_files=...)`, `Dataset.from_list`, `ConcatDataset`, `TFRecordDataset`, a `*Dataset` "
        "constructor, `dataset_files=`); a shuffle, random pick or split (`random.shuffle`, `train_test_split`, "
        "a slice `files[:n]` kept as a split); a list kept on `self` that the class reads by a computed index "
        "or iterates in `__getitem__`/`__iter__`, or kept by a `Dataset` class; a loop over the listing that "
        "numbers entries (`enumerate`) or writes a manifest line by line; a manifest dumped whole "
        "(`json.dump`, `writelines`). The listing is followed through locals, lists a loop builds from it, "
        "`self` attributes across methods, and a function's `return` to its callers in the same file. "
        "Order-free uses stay quiet: counted, summed, tested for emptiness or membership, keyed by name, "
        "one element taken (a checkpoint, a log), files deleted or copied one by one, or handed to a function "
        "whose use of the order is not known, or a reader that sorts the files itself (MindSpore's `TFRecordDataset`, "
        "`CSVDataset`, `TextFileDataset`: knowledge/library_behaviour.toml, read from the installed MindSpore); "
        "test and packaging files are never reported.",
        why="These calls return entries in the order the file system keeps them: ext4 hashes names, XFS and "
        "Lustre/GPFS/OBS-backed storage use their own orders, and the order changes when files are copied. The "
        "GPU cluster and the NPU cluster hold the same dataset on different storage, so sample i is a different "
        "file on each side: with the same seed, shuffling a permutation of a differently ordered list still "
        "feeds the two runs different batches, and step-0 losses differ before any numerics do. "
        "`DataLoader(shuffle=True)` with a seeded generator does not help: the sampler draws indices, and the "
        "dataset maps index i to `self.files[i]`, whose file depends on the listing order.",
        fix="Sort the listing where it is made: `sorted(os.listdir(root))`, `sorted(glob.glob(pattern))`, "
        "`sorted(Path(root).rglob('*.jpg'))`; with `os.walk`, sort `dirs` in place and iterate `sorted(files)`.",
        references=("https://docs.python.org/3/library/os.html#os.listdir",
                    "https://docs.python.org/3/library/glob.html#glob.glob"),
    )
    invalid = (
        Example.script("""
            import os


            class ImageList:
                def __init__(self, root):
                    self.files = [os.path.join(root, f) for f in os.listdir(root) if f.endswith(".jpg")]  # expect: ACL211

                def __len__(self):
                    return len(self.files)

                def __getitem__(self, index):
                    return load(self.files[index])
        """, "a file list kept on self and indexed in __getitem__"),
        Example.script("""
            import glob
            import os

            from datasets import load_dataset


            def build(root):
                shards = [f for f in glob.glob(os.path.join(root, "*.jsonl")) if "dev" not in f]  # expect: ACL211
                return load_dataset("json", data_files={"train": shards}, split="train")
        """, "a filtered glob passed to load_dataset(data_files=...)"),
        Example.script("""
            import os

            from torch.utils.data import ConcatDataset


            def sub_datasets(root):
                parts = []
                for index, (folder, dirs, files) in enumerate(os.walk(root)):  # expect: ACL211
                    parts.append(Part(folder, files, dataset_id=index))
                return ConcatDataset(parts)
        """, "os.walk order numbering sub-datasets"),
        Example.script("""
            import json
            from pathlib import Path


            def split(root, out):
                images = list(Path(root).rglob("*.png"))  # expect: ACL211
                cut = int(0.9 * len(images))
                train, val = images[:cut], images[cut:]
                json.dump({"train": [str(p) for p in train], "val": [str(p) for p in val]}, open(out, "w"))
        """, "a listing split into train/val by slicing"),
    )
    valid = (
        Example.script("""
            import glob
            import json
            import os


            def total_count(root):
                return sum(json.load(open(f))["count"] for f in glob.glob(os.path.join(root, "*.json")))
        """, "a summed JSON listing"),
        Example.script("""
            import glob
            import os


            def latest_checkpoint(root):
                checkpoints = glob.glob(os.path.join(root, "checkpoint-*"))
                return checkpoints[0] if checkpoints else None


            def evaluate_all(root, evaluate):
                results = {}
                for path in glob.glob(os.path.join(root, "*.ckpt")):
                    results[os.path.basename(path)] = evaluate(path)
                return results
        """, "checkpoint picking"),
        Example.script("""
            import glob
            import os


            def clean(root, name):
                for path in glob.glob(os.path.join(root, "*.tmp")):
                    os.remove(path)
                if not os.listdir(root):
                    os.rmdir(root)
                print(len(glob.glob(os.path.join(root, "*.jpg"))), "images")
                return name in os.listdir(root)
        """, "deleting temp files, membership and counts"),
        Example.script("""
            import glob
            import os
            from torch.utils.data import Dataset


            class ImageFolder(Dataset):
                def __init__(self, root):
                    self.files = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".jpg"))
                    self.masks = glob.glob(os.path.join(root, "masks", "*.png"))
                    self.masks.sort()
                    images = []
                    for folder, dirs, files in os.walk(root):
                        for name in files:
                            images.append(os.path.join(folder, name))
                    self.images = sorted(images)
        """, "sorted directly, on a later line, or after the loop that builds the list"),
        Example.script("""
            import os
            from setuptools import setup


            def package_files(directory):
                paths = []
                for path, dirs, names in os.walk(directory):
                    for name in names:
                        paths.append(os.path.join("..", path, name))
                return paths


            setup(name="demo", package_data={"": package_files("demo/assets")})
        """, "packaging", path="setup.py"),
        Example.script("""
            import glob
            import os

            import mindspore.dataset as ds


            def create_dataset(root, batch_size):
                files = [f for f in glob.glob(os.path.join(root, "*.tfrecord")) if "eval" not in f]
                data = ds.TFRecordDataset(files, columns_list=["image", "label"], shuffle=ds.Shuffle.FILES)
                return data.batch(batch_size)
        """, "MindSpore's TFRecordDataset sorts the files it is given (read from its installed source)"),
    )

    def written(self, facts: FileFacts) -> Iterator[Written]:
        reach = None
        for call in facts.calls:
            if not _is_listing(call):
                continue
            reach = reach or Reach(facts)
            reach.seen.clear()  # each listing is followed afresh
            reason = reach.sinks(call.sinks, call.scope, call.order)
            if reason:
                # `Path(root).glob(...)` is recorded as `?.glob`: name the receiver instead.
                label = f"{short(call.receiver)}.{call.method}" if call.receiver is not None else call.callee
                yield Written(call.node, f"`{label}` returns files in file-system order, which differs between "
                              f"the GPU cluster's storage and the NPU cluster's, and it is never sorted: {reason}.",
                              f"sort it where it is made: `sorted({label}(...))`")


RULES = [UnsortedFileList()]
