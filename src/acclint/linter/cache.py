"""Per-file results cached by content, so a re-scan of an unchanged tree reads instead of parsing.

What is cached is the per-file outcome (facts, per-file findings, or the per-file error) of one
file at one path. Program-level checks always run again over the (cached or fresh) facts, so a
change in a helper still changes the findings of the entry point that imports it.

Layout, as ruff's: `<root>/.acclint_cache/` with a `.gitignore` of `*`, one folder per settings
key (acclint's version and sources, the rule set and the source of its project-local plugins, the
configuration the per-file pass sees), one
entry per scanned path. An entry is `MAGIC + sha256(payload) + payload` (a pickle of the settings
key, the content hash, the path, the content hashes of the other files the outcome was read from
(a launch script's sourced files, and those it looked for) and the outcome); anything that does
not check out, or whose key or any content hash differs, is a miss and is rewritten. Entries are written atomically, so two scans
running at once each see whole entries.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import stat
from pathlib import Path
from typing import Callable, Optional

import acclint
from acclint.knowledge.api_differences import selected_version
from acclint.linter.analyze import FileOutcome
from acclint.linter.atomic import write_atomic

CACHE_DIR_NAME = ".acclint_cache"
MAGIC = b"acclint-cache\x00v2\n"
_DIGEST = 32  # bytes of sha256
_GITIGNORE = "# Created by acclint automatically.\n*\n"
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# acclint cache; see https://bford.info/cachedir/\n"


def default_root(config_file: Optional[Path], cwd: Path) -> Path:
    """Next to the configuration (the project root), else the current folder."""
    return (config_file.parent if config_file is not None else cwd) / CACHE_DIR_NAME


def _sources_stamp() -> str:
    """acclint's own files (name, size, mtime): a changed rule or walker invalidates the cache even
    while the version number stays the same, as in a development checkout."""
    package = Path(acclint.__file__).parent
    parts = [acclint.__version__]
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".toml")):
                info = os.stat(os.path.join(folder, name))
                parts.append(f"{os.path.relpath(os.path.join(folder, name), package)}:{info.st_size}:{info.st_mtime_ns}")
    return "\n".join(parts)


def settings_key(rules: list, config) -> str:
    from acclint.plugins import sources_stamp

    relevant = {k: v for k, v in vars(config).items() if k not in ("fail_on", "source", "fix")}
    # ACL711's rows follow the installed MindSpore when no version is configured: installing another
    # release must not reuse findings made for the old one.
    relevant["mindspore_version"] = selected_version(getattr(config, "mindspore_version", None))
    # Project-local rules (plugins) by the digest of their source: editing one re-runs it.
    text = "\0".join([_sources_stamp(), sources_stamp(rules), ",".join(sorted(rule.code for rule in rules)),
                      repr(sorted(relevant.items()))])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Cache:
    def __init__(self, root: Path, rules: list, config):
        self.root = Path(root)
        self.key = settings_key(rules, config)
        self.config = config
        self.folder = self.root / self.key[:20]
        self.hits = 0
        self.misses = 0
        self._ready = False

    # -- the engine's hook --------------------------------------------------------------------

    def run(self, jobs: list, compute: Callable[[list], list], advance=lambda count=1: None) -> list:
        """Outcomes of `jobs` ((abspath, display) pairs), in order: cached ones read, the others
        computed by `compute(missing_jobs)` and stored. `advance(n)` counts files done."""
        outcomes: list = [None] * len(jobs)
        missing, digests = [], {}
        for index, (abspath, display) in enumerate(jobs):
            cached, digest = self.lookup(abspath, display)
            if cached is not None:
                outcomes[index] = cached
                advance()
            else:
                missing.append(index)
                digests[index] = digest
        if missing:
            computed = compute([jobs[i] for i in missing])
            for index, outcome in zip(missing, computed):
                outcomes[index] = outcome
                if digests[index] is not None:
                    self.store(*jobs[index], digests[index], outcome)
        return outcomes

    def without_rules(self) -> "Cache":
        """The cache of rule-less outcomes (files read only for context), beside this one."""
        return Cache(self.root, [], self.config)

    def lookup(self, abspath: str, display: str) -> tuple:
        """(the cached outcome or None, the file's content digest or None) for one file."""
        digest = _content_digest(abspath)
        outcome = self._load(abspath, display, digest) if digest is not None else None
        if outcome is None:
            self.misses += 1
        else:
            self.hits += 1
        return outcome, digest

    def store(self, abspath: str, display: str, digest: str, outcome: FileOutcome) -> None:
        if outcome.transient:  # a budget overrun depends on the machine's load: try again next time
            return
        self._store(abspath, display, digest, outcome)

    # -- entries ------------------------------------------------------------------------------

    def entry_path(self, abspath: str, display: str) -> Path:
        name = hashlib.sha256(f"{abspath}\0{display}".encode("utf-8", "surrogatepass")).hexdigest()
        return self.folder / name[:2] / name

    def _load(self, abspath: str, display: str, digest: str) -> Optional[FileOutcome]:
        try:
            data = self.entry_path(abspath, display).read_bytes()
        except OSError:
            return None
        if not data.startswith(MAGIC):
            return None
        payload = data[len(MAGIC) + _DIGEST:]
        if hashlib.sha256(payload).digest() != data[len(MAGIC):len(MAGIC) + _DIGEST]:
            return None  # torn or tampered: never trusted
        try:
            key, content, path, read_from, outcome = pickle.loads(payload)
        except Exception:  # an unreadable pickle is a miss, whatever it raises
            return None
        if key != self.key or content != digest or path != display or not isinstance(outcome, FileOutcome) \
                or outcome.path != display:  # an outcome stored under another file's entry is never used
            return None
        if any(_content_digest(other) != other_digest for other, other_digest in read_from):
            return None  # a sourced file changed, appeared or went away: read the script again
        return outcome

    def _store(self, abspath: str, display: str, digest: str, outcome: FileOutcome) -> None:
        try:
            read_from = tuple((other, _content_digest(other)) for other in _read_from(outcome))
            payload = pickle.dumps((self.key, digest, display, read_from, outcome), protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
            return  # not cacheable: computed again next time
        try:
            self._prepare()
            target = self.entry_path(abspath, display)
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, MAGIC + hashlib.sha256(payload).digest() + payload)
        except OSError:
            pass  # a read-only checkout scans without a cache

    def _prepare(self) -> None:
        if self._ready:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        for name, text in ((".gitignore", _GITIGNORE), ("CACHEDIR.TAG", _TAG)):
            marker = self.root / name
            if not marker.exists():
                write_atomic(marker, text.encode("utf-8"))
        self._ready = True


def _read_from(outcome: FileOutcome) -> list:
    """The other files an outcome depends on: those a launch script sourced or looked for."""
    script = getattr(outcome.facts, "script", None)
    if script is None:
        return []
    return sorted({*script.sourced, *script.source_lookups})


def _content_digest(abspath: str) -> Optional[str]:
    try:
        if not stat.S_ISREG(os.stat(abspath).st_mode):  # a FIFO would block: the analysis says why
            return None
        with open(abspath, "rb") as stream:
            return hashlib.sha256(stream.read()).hexdigest()
    except OSError:
        return None  # not readable now: analyse it and report why, uncached
