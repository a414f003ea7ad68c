"""Category `determinism`: file lists in file-system order (docs/knowledge/determinism.md#file-order)."""

from __future__ import annotations

from functools import lru_cache
from typing import Iterator, Optional

from acclint.knowledge import table
from acclint.linter.facts import Call, FileFacts
from acclint.linter.rulebase import Example, RuleDoc
from acclint.rules.base import ExplicitRule, Written
from acclint.rules.flow import short


@lru_cache(maxsize=1)
def _fo() -> dict:
    data = table("file_order")
    return {key: frozenset(value) for key, value in data.items()}


def _is_listing(call: Call) -> bool:
    if call.names:
        return bool(call.names & _fo()["listing_functions"])
    return call.method in _fo()["listing_methods"] and "." in call.callee


def _last(callee: str) -> str:
    return callee.rsplit(".", 1)[-1]


def _verdict(sinks: tuple) -> tuple:
    """("sorted" | "quiet" | "stored" | "returned" | "iter" | "name", detail) for where a listing (or a
    name holding one) flows, read from the innermost consumer outwards. Taking one element (`[0]`) is
    quiet: it picks a file (a checkpoint, a log), it does not build a list of samples."""
    for sink in reversed(sinks):
        kind, _, detail = sink.partition(":")
        if sink == "comp":
            continue  # a comprehension keeps the order
        if kind == "arg":
            last = _last(detail)
            if last in _fo()["sorting"]:
                return "sorted", ""
            if last in _fo()["order_keeping"]:
                continue
            if last == "extend" and "." in detail:
                return "name", detail.rsplit(".", 1)[0]
            return "quiet", ""  # counted, a set, or passed straight to another function
        if sink in ("test", "in", "set-comp", "[]"):
            return "quiet", ""
        if sink in ("iter", "return"):
            return ("iter" if sink == "iter" else "returned"), ""
        if kind == "attr":
            return "stored", detail
        if kind == "name":
            return "name", detail
    return "quiet", ""


class UnsortedFileList(ExplicitRule):
    code = "ACL211"
    name = "unsorted-file-list"
    category = "determinism"
    severity = "warning"
    summary = "a list of files from os.listdir/glob/Path.rglob/os.walk used in file-system order"
    doc = RuleDoc(
        what="Reports `os.listdir`, `os.scandir`, `glob.glob`/`iglob`, `Path.glob`/`rglob`/`iterdir` and `os.walk` "
        "whose result is stored (an attribute, a returned list), indexed, or iterated to build a list, and is "
        "never sorted: not by `sorted(...)` around it (also after filtering or joining in a comprehension), nor "
        "by `.sort()` or `sorted(name)` on a later line. A listing that is only tested for emptiness, counted, "
        "used for a membership test, passed straight to another function, or only indexed for one element "
        "is not reported; nor are lists named for checkpoints, logs, configs or exported models "
        "(`ckpt_files`, `cfg_paths`), lists a loop builds and the function sorts afterwards, test files, and "
        "scripts under inference, deployment or documentation folders.",
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
            from torch.utils.data import Dataset


            class ImageFolder(Dataset):
                def __init__(self, root):
                    self.files = [os.path.join(root, f) for f in os.listdir(root) if f.endswith(".jpg")]  # expect: ACL211

                def __len__(self):
                    return len(self.files)

                def __getitem__(self, index):
                    return load(self.files[index])
        """, "a dataset class whose __init__ lists files"),
        Example.script("""
            import glob
            import os
            from pathlib import Path


            def shard_list(root):
                shards = glob.glob(os.path.join(root, "*.tar"))  # expect: ACL211
                if not shards:
                    raise FileNotFoundError(root)
                return shards


            def samples(root):
                found = []
                for path in Path(root).rglob("*.png"):  # expect: ACL211
                    found.append((path, int(path.parent.name)))
                return found
        """, "a returned shard list, a list built in a loop"),
    )
    valid = (
        Example.script("""
            import glob
            import os
            from pathlib import Path
            from torch.utils.data import Dataset


            class ImageFolder(Dataset):
                def __init__(self, root):
                    self.files = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".jpg"))
                    self.masks = glob.glob(os.path.join(root, "masks", "*.png"))
                    self.masks.sort()
                    shards = glob.glob(os.path.join(root, "*.tar"))
                    self.shards = sorted(shards)
                    self.extra = sorted(Path(root).rglob("*.npy"))
        """, "sorted directly, after a comprehension, or on a later line"),
        Example.script("""
            import glob
            import os


            def prepare(root, name):
                if not os.listdir(root):
                    raise FileNotFoundError(root)
                print(len(glob.glob(os.path.join(root, "*.jpg"))), "images")
                if name in os.listdir(root):
                    return name
                for path in glob.glob(os.path.join(root, "*.tmp")):
                    os.remove(path)
                return remove_all(glob.glob(os.path.join(root, "*.lock")))


            def latest_checkpoint(root):
                checkpoints = glob.glob(os.path.join(root, "checkpoint.pth.tar"))
                return checkpoints[0] if checkpoints else None


            def all_images(root):
                images = []
                for folder, dirs, files in os.walk(root):
                    for name in files:
                        images.append(os.path.join(folder, name))
                return sorted(images)
        """, "emptiness, counts, membership, order-free loops, passed on, one element taken, sorted after the loop"),
    )

    def written(self, facts: FileFacts) -> Iterator[Written]:
        if _not_training_file(facts):
            return  # the order tests run in, or an inference script's outputs, is not what a model trains on
        for call in facts.calls:
            if not _is_listing(call):
                continue
            reason = self._unsorted(facts, call)
            if reason:
                # `Path(root).glob(...)` is recorded as `?.glob`: name the receiver instead.
                label = f"{short(call.receiver)}.{call.method}" if call.receiver is not None else call.callee
                yield Written(call.node, f"`{label}` returns files in file-system order, which differs between "
                              f"the GPU cluster's storage and the NPU cluster's; {reason} is never sorted, so with the "
                              "same seed the two runs see different samples at each index.",
                              f"sort it where it is made: `sorted({label}(...))`")

    def _unsorted(self, facts: FileFacts, call: Call) -> Optional[str]:
        verdict, detail = _verdict(call.sinks)
        if verdict in ("name", "stored") and _not_samples(detail):
            return None
        if verdict == "name":
            return self._name_unsorted(facts, call, detail)
        if verdict == "stored":
            return None if _sorted_later(facts, detail, call) else f"`{detail}`, which stores it,"
        if verdict == "iter":
            return self._loop_builds(facts, call)
        return "the returned list" if verdict == "returned" else None

    def _name_unsorted(self, facts: FileFacts, call: Call, name: str) -> Optional[str]:
        if _sorted_later(facts, name, call):
            return None
        uses = [u for u in facts.name_uses if u.name == name and u.scope == call.scope and u.order > call.order]
        for use in uses:
            verdict, detail = _verdict(use.sinks)
            if verdict == "sorted" or verdict == "name" and detail == name:
                return None  # `files = sorted(files)`
        for use in uses:
            verdict, detail = _verdict(use.sinks)
            if verdict == "stored" and not _sorted_later(facts, detail, call) or verdict == "returned":
                return f"`{name}`"
            if verdict == "iter" and self._loop_builds(facts, use):
                return f"`{name}`"
        # Copied into another local (`avg = checkpoints`, `sources = main + extra`): where that goes is
        # not recorded, so stay quiet.
        return None

    def _loop_builds(self, facts: FileFacts, call) -> Optional[str]:
        """For a listing (a Call) or a read of a name holding one (a NameUse) that a `for` iterates."""
        loop = next((b for b in facts.blocks if b.kind == "for" and b.scope == call.scope
                     and b.start < call.order < b.head_end), None)
        if loop is None:
            return None
        body = [c for c in facts.calls if c.scope == call.scope and loop.head_end < c.order < loop.end]
        targets = set(loop.targets)
        for inner in body:  # os.walk loops that sort dirs/files in place, or iterate sorted(files)
            if inner.method == "sort" and inner.callee.rsplit(".", 1)[0] in targets:
                return None
            if _last(inner.callee) in _fo()["sorting"] and any(a.value.dotted in targets for a in inner.args):
                return None
        built = [inner for inner in body if inner.method in _fo()["builders"]
                 and not _not_samples(inner.callee.rsplit(".", 1)[0])]
        if not built:
            return None
        # A list built here and sorted after the loop (`files.append(...)` ... `files = sorted(files)`,
        # or a list derived from it sorted in the same function) is in a defined order.
        if any(_last(later.callee) in _fo()["sorting"] for later in facts.calls
               if later.scope == call.scope and later.order > loop.end):
            return None
        return "the list this loop builds"


def _not_samples(name: str) -> bool:
    """A list named for checkpoints, logs or configs rather than samples (`ckpt_files`, `self.cfg_paths`)."""
    text = name.rsplit(".", 1)[-1].lower()
    return any(hint in text for hint in _fo()["not_samples"])


def _not_training_file(facts: FileFacts) -> bool:
    """Scripts in inference/deployment/documentation folders (tests are code of another role, which
    the engine never reports on: linter.roles)."""
    *folders, _ = facts.path.replace("\\", "/").lower().split("/")
    return any(hint in folder for folder in folders for hint in _fo()["not_training_folders"])


def _sorted_later(facts: FileFacts, target: str, after: Call) -> bool:
    """`target.sort()` or `sorted(target)` after the listing (attributes: anywhere in the file)."""
    same_scope = "." not in target
    for call in facts.calls:
        if same_scope and (call.scope != after.scope or call.order < after.order):
            continue
        if call.callee == f"{target}.sort":
            return True
        if _last(call.callee) in _fo()["sorting"] and any(a.value.dotted == target for a in call.args):
            return True
    return False


RULES = [UnsortedFileList()]
