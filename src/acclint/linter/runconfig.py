"""The run's configuration: which branches a training run takes, from the configuration it loads.

A guard (`if args.amp:`, `if cfg.get("cudnn_benchmark", False):`, `if config.train.deterministic:`)
is resolved per run of a program (each launch line, or documented command; the program alone when it
has none), in the order the run itself applies them:

1. the launch's flags (`--amp`) and Hydra-style overrides (`train.amp=true`);
2. the configuration files the run loads: those its command line passes (`--config cfg.yaml`, `-c`,
   a positional `.yaml`/`.json`/`.py`), else the default path an option of the program names
   (`add_argument("--config", default="configs/train.yaml")`), and the config `@hydra.main` composes
   with its `defaults:` list (linter.config_values reads them, inheritance included);
3. the defaults written in the code: argparse and click defaults, `cfg.get("key", default)` /
   `getattr(cfg, "key", default)`, dataclass field defaults.

A branch is then taken by some run (the resolved value makes the test true), skipped by every run (an
opt-in: only a configuration no run loads switches it on), or unknown (a value acclint could not
resolve). Only files a run loads count: a key set in another config of the project does not turn a
branch on, and the evidence says so.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from acclint.knowledge import table
from acclint.linter.config_values import ConfigFiles, ConfigValues, is_config_path
from acclint.linter.declarations import Declared, click_parameters, collect_declarations
from acclint.linter.facts import MODULE_SCOPE, NOT_LITERAL, Call, FileFacts, FlagGuard
from acclint.linter.shell.model import is_flag

TAKEN, SKIPPED, UNKNOWN = "taken", "skipped", "unknown"

# Words a launch passes to say no (`--use_ascend False`).
NO_WORDS = frozenset({"false", "0", "no", "none", "off"})
_SKIPPED_FOLDERS = frozenset({"node_modules", "site-packages", "__pycache__"})


@dataclass(frozen=True)
class Setting:
    """The value a run gives a key, and where it comes from."""

    value: Any  # NOT_LITERAL when it cannot be known
    where: str  # "configs/train.yaml:3", "train.py:12", "run.sh:4"
    origin: str  # "launch" | "config" | "default" | "given" (a required option, whatever its value)
    option: str  # "--amp", "cudnn_benchmark", "train.amp"
    is_flag: bool = False
    loaded_by: str = ""  # for a config file: what makes the run load it ("run.sh:2", "the default of `--config`")

    def describe(self) -> str:
        spelled = f"`{self.option}`"
        if self.origin == "launch":
            shown = "passed" if self.value is True else f"passed as {self.value}"
            return f"{spelled} is {shown} by {self.where}"
        if self.origin == "config":
            return f"{spelled} is set to {self.value!r} in {self.where} ({self.loaded_by})"
        if self.origin == "given":
            return f"{spelled} is required ({self.where}): every run passes it"
        return f"{spelled} defaults to {self.value!r} ({self.where})"

    def declared(self) -> Declared:
        return Declared(self.option, self.value, self.where, self.is_flag)


@dataclass(frozen=True)
class Branch:
    """Whether the runs of a program take the code under `guard`, and why."""

    state: str  # TAKEN | SKIPPED | UNKNOWN
    guard: FlagGuard
    evidence: str
    setting: Optional[Setting] = None

    def declared(self) -> Optional[Declared]:
        return self.setting.declared() if self.setting is not None else None


@dataclass
class _Run:
    label: str  # the launch line ("run.sh:3"), "" for the program started without a launch
    flags: dict = field(default_factory=dict)  # name -> FlagValue
    overrides: dict = field(default_factory=dict)  # key path -> (text, where)
    configs: list = field(default_factory=list)  # (ConfigValues, display, loaded_by), in merge order
    unread: Optional[str] = None  # why acclint does not know which configuration this run loads
    broken: Optional[str] = None  # a configuration it loads that could not be read


def _settings() -> dict:
    return table("runconfig")


def spellings(name: str) -> set:
    """How a launch line may spell the flag behind `args.use_ascend` or `--use_ascend`."""
    key = name.rsplit(".", 1)[-1].lstrip("-")
    return {key, key.replace("_", "-")}


def guard_text(guard: FlagGuard) -> str:
    if guard.form == "not-none":
        return f"{guard.dotted} is not None"
    if guard.form == "equals":
        return f"{guard.dotted} == {guard.value!r}"
    if guard.form == "differs":
        return f"{guard.dotted} != {guard.value!r}"
    return f"{guard.dotted} is true"


def holds(guard: FlagGuard, value: Any, from_launch: bool = False) -> Optional[bool]:
    """Whether the test is true for `value` (launch flags are words: `--amp False` says no)."""
    if from_launch and isinstance(value, str) and guard.form == "truthy":
        return value.strip("'\"").lower() not in NO_WORDS
    if guard.form == "not-none":
        return value is not None
    if guard.form == "truthy":
        return bool(value)
    text = _as_launch_word(value)
    return (text == guard.value) if guard.form == "equals" else (text != guard.value)


def _as_launch_word(value: Any) -> str:
    return value.strip("'\"") if isinstance(value, str) else str(value)


class RunConfig:
    """The configuration of the runs of one program: `entry` and the files its flow reaches,
    started by `launches` ((label, LaunchCommand, folders a relative path is resolved from))."""

    def __init__(self, project, entry: FileFacts, files: list, launches: list, use_fields: bool = True):
        self.project = project
        self.entry = entry
        self.files = files
        self.flags, self.fields = collect_declarations(files)
        if not use_fields:
            self.fields = {}
        self.reader: ConfigFiles = project.config_files if project is not None else ConfigFiles()
        self.sources = _configuration_names(files)
        self.click_parameters = click_parameters(files)
        self.assigned = frozenset(a.target for file in files for a in file.assignments)
        self.config_options, self.defaults = self._config_options()
        self.hydra_folders: list = []  # the config folders of `@hydra.main`, where its groups are
        self.hydra = self._hydra()
        self.runs = [self._launched(*launch) for launch in launches] or [self._started_alone()]
        self._decided: dict = {}

    # -- what a guard resolves to ----------------------------------------------------------------
    def branch(self, placed: tuple) -> Optional[Branch]:
        """The branch of the code under every one of `placed` ((FlagGuard, the file it is written in), outermost
        first): skipped if one is, else unknown if one is, else taken if one was resolved; None when none
        is about the configuration."""
        decided = [self.decide(guard, file) for guard, file in placed]
        decided = [d for d in decided if d is not None]
        for state in (SKIPPED, UNKNOWN, TAKEN):
            found = next((d for d in reversed(decided) if d.state == state), None)
            if found is not None:
                return found
        return None

    def decide(self, guard: FlagGuard, file: Optional[FileFacts] = None) -> Optional[Branch]:
        key = (guard, guard.node, id(file))
        if key not in self._decided:
            self._decided[key] = self._decide(guard, file)
        return self._decided[key]

    def _decide(self, guard: FlagGuard, file: Optional[FileFacts]) -> Optional[Branch]:
        found = [self.in_run(run, guard, file) for run in self.runs]
        found = [f for f in found if f is not None]
        for state in (TAKEN, UNKNOWN, SKIPPED):
            branch = next((f for f in found if f.state == state), None)
            if branch is not None:
                return branch
        return None

    def in_run(self, run: _Run, guard: FlagGuard, file: Optional[FileFacts]) -> Optional[Branch]:
        parts = tuple(guard.dotted.split("."))
        if len(parts) == 1 and parts[0] in self.click_parameters:
            parts = ("", parts[0])  # a click command's parameter: a flag like `args.amp`
        elif len(parts) < 2:
            return None  # a plain local (often a parameter): its value comes from the caller
        setting = self._from_launch(run, guard, parts) or self._from_configs(run, parts)
        if setting is None and run.broken is not None and self._is_configuration(guard, parts):
            return Branch(UNKNOWN, guard, f"runs only when {guard_text(guard)}, and {run.broken}")
        if run.unread is not None and (setting is None or setting.origin == "config") \
                and self._is_configuration(guard, parts):
            return self._unread(run, guard, parts, file, setting)
        if setting is None:
            setting = self._code_default(guard, parts, file)
        if setting is None:
            if self._is_configuration(guard, parts) and guard.form in ("truthy", "not-none"):
                return Branch(UNKNOWN, guard, f"runs only when {guard_text(guard)}, and no configuration this "
                                              f"program loads or declares gives `{parts[-1]}` a value")
            return None
        if setting.value is NOT_LITERAL:
            return Branch(UNKNOWN, guard, f"runs only when {guard_text(guard)}, and {setting.describe()}: "
                                          "a value acclint cannot read", setting)
        if setting.origin == "default" and guard.form in ("equals", "differs"):
            return None  # `== "npu"` picks a branch: a code default makes neither side an opt-in
        taken = holds(guard, setting.value, setting.origin == "launch")
        if taken:
            return Branch(TAKEN, guard, f"runs when {guard_text(guard)}: {setting.describe()}", setting)
        evidence = f"runs only when {guard_text(guard)}, and {setting.describe()}"
        elsewhere = self._set_elsewhere(run, guard, parts)
        if elsewhere:
            evidence += f"; {elsewhere}"
        return Branch(SKIPPED, guard, evidence, setting)

    def _from_launch(self, run: _Run, guard: FlagGuard, parts: tuple) -> Optional[Setting]:
        # Flags fill a plain namespace (`args.amp`) or a declared field (HfArgumentParser's dataclasses), not
        # a nested config read from a file.
        if len(parts) == 2 or parts[-1] in self.fields:
            # The key's own spellings, and the options declared for it (`--manual-seed` with dest="seed").
            spelled = spellings(parts[-1]).union(*(spellings(d.option) for d in self.flags.get(parts[-1], ())))
            for spelling in sorted(spelled):
                passed = run.flags.get(spelling)
                if passed is not None:
                    value = True if passed.value is None else passed.value
                    known = passed.known and not (isinstance(value, str) and "$" in value)
                    return Setting(value if known else NOT_LITERAL, _at(run, passed.span), "launch", f"--{spelling}",
                                   is_flag=True)
        for path, (text, where) in run.overrides.items():
            if parts[-len(path):] == path:
                return Setting(_override_value(text), where, "launch", ".".join(path))
        return None

    def _from_configs(self, run: _Run, parts: tuple) -> Optional[Setting]:
        for values, _, loaded_by in reversed(run.configs):  # the last loaded overrides
            found = values.lookup(parts[1:])
            if found is not None:
                path, entry = found
                return Setting(entry.value, f"{_display(self.entry, entry.abspath)}:{entry.line}", "config",
                               ".".join(path), loaded_by=loaded_by)
        return None

    def _code_default(self, guard: FlagGuard, parts: tuple, file: Optional[FileFacts]) -> Optional[Setting]:
        key = parts[-1]
        if len(parts) == 2 and key in self.flags:
            declared = self.flags[key]
            first = declared[0]
            if first.given and guard.form == "not-none":
                return Setting(True, first.where, "given", first.option, is_flag=True)
            if all(d.default == first.default and type(d.default) is type(first.default) for d in declared):
                return Setting(first.default, first.where, "default", first.option, is_flag=True)
        if guard.node >= 0 and file is not None and guard.node < len(file.spans):
            return Setting(guard.fallback, f"{file.path}:{file.spans[guard.node].line}", "default", key)
        if key in self.fields:
            first = self.fields[key][0]
            if all(d.default == first.default for d in self.fields[key]):
                return Setting(first.default, first.where, "default", key)
        return None

    def _is_configuration(self, guard: FlagGuard, parts: tuple) -> bool:
        """A guard asks about the configuration when its key is declared (a flag, a field), written
        with a default (`cfg.get`), or read from what a configuration source returned."""
        key = parts[-1]
        if guard.dotted in self.assigned:
            return False  # `args.distributed = args.world_size > 1`: the program computes it
        return (len(parts) == 2 and key in self.flags) or guard.node >= 0 or key in self.fields \
            or parts[0] in self.sources

    def _unread(self, run: _Run, guard: FlagGuard, parts: tuple, file: Optional[FileFacts],
                known: Optional[Setting]) -> Branch:
        """The run also loads a configuration acclint does not know: what the files it knows (`known`) or the
        code's default say stands only where no other configuration of the project sets the key."""
        loaded = {values.abspath for values, _, _ in run.configs}
        setters = [f"{display}:{entry.line}" for display, entry, abspath in self._project_setters(parts)
                   if abspath not in loaded]
        default = known or self._code_default(guard, parts, file)
        if not setters and default is not None and default.value is not NOT_LITERAL:
            taken = holds(guard, default.value)
            if taken:
                return Branch(TAKEN, guard, f"runs when {guard_text(guard)}: {default.describe()}", default)
            if known is not None:
                return Branch(SKIPPED, guard, f"runs only when {guard_text(guard)}, and {known.describe()}; no other "
                                              "config of the project sets it", known)
            return Branch(SKIPPED, guard, f"runs only when `{parts[-1]}` is set; no config of the project sets it "
                                          f"(default {default.value!r} at {default.where})", default)
        shown = f"; set in {_listed(setters)}" if setters else ""
        return Branch(UNKNOWN, guard, f"runs only when {guard_text(guard)}, and {run.unread}{shown}")

    def _set_elsewhere(self, run: _Run, guard: FlagGuard, parts: tuple) -> str:
        """"set to True only in configs/other.yaml:3, which no launch of this program loads"."""
        loaded = {values.abspath for values, _, _ in run.configs}
        others = [(display, entry) for display, entry, abspath in self._project_setters(parts)
                  if abspath not in loaded and holds(guard, entry.value)]
        if not others:
            return ""
        display, entry = others[0]
        more = f" and {len(others) - 1} more" if len(others) > 1 else ""
        return (f"set to {entry.value!r} only in {display}:{entry.line}{more}, which no launch of this program "
                "loads")

    def _project_setters(self, parts: tuple) -> list:
        """(display, Entry, abspath) of the project's configuration files that set the key (`parts` minus its
        receiver), found by a text search before any parse."""
        found = []
        for abspath in _project_configs(self.project, self.entry):
            text = self.reader.text(abspath)
            if text is None or parts[-1] not in text:
                continue
            hit = self.reader.read(abspath).lookup(parts[1:])
            if hit is not None:
                found.append((_display(self.entry, abspath), hit[1], abspath))
        return found

    # -- which configuration files a run loads ---------------------------------------------------
    def _config_options(self) -> tuple:
        """(spellings of the options naming a config file, [(abspath or None, display, declared at)] of their
        defaults); an option without a default, or a positional one, names it at launch only."""
        names = set(_settings()["config_flags"])
        options, defaults = set(), []
        for file in self.files:
            for call in file.calls:
                if call.method != "add_argument":
                    continue
                words = [a.value.literal for a in call.args if a.keyword is None and isinstance(a.value.literal, str)]
                default = call.arg("default")
                value = default.value.literal if default is not None else None
                spelled = {w.lstrip("-") for w in words}
                if not (spelled & names or is_config_path(value)):
                    continue
                options |= spelled
                if is_config_path(value):
                    where = f"{file.path}:{file.spans[call.node].line}"
                    path = self._find(value, [os.path.dirname(file.abspath), *self._roots()])
                    defaults.append((path, value, f"the default of `{words[-1]}` at {where}"))
        return options, defaults

    def _hydra(self) -> list:
        """[(ConfigValues, display, loaded_by)] that `@hydra.main(config_path, config_name)` composes."""
        out = []
        mains = set(_settings()["hydra_main"])
        for file in self.files:
            for call in file.calls:
                if not call.names & mains:
                    continue
                path, name = call.arg("config_path", 0), call.arg("config_name", 1)
                folder_name = path.value.literal if path is not None else None
                config_name = name.value.literal if name is not None else None
                if not isinstance(config_name, str) or not isinstance(folder_name, (str, type(None))):
                    continue
                folder = os.path.normpath(os.path.join(os.path.dirname(file.abspath), folder_name or ""))
                self.hydra_folders.append(folder)
                where = f"@hydra.main at {file.path}:{file.spans[call.node].line}"
                out.extend(self._compose(folder, config_name, where))
        return out

    def _compose(self, folder: str, name: str, where: str, group: tuple = ()) -> list:
        """A Hydra config and its Defaults List, in merge order (`_self_` where it is listed, else last)."""
        abspath = os.path.join(folder, *group, name if name.endswith((".yaml", ".yml")) else name + ".yaml")
        values = self.reader.read(abspath)
        global_package = _GLOBAL_PACKAGE.search((self.reader.text(abspath) or "")[:2000]) is not None
        this = (_rooted(values, () if global_package else group), _display(self.entry, abspath), where)
        out, placed = [], False
        for item in values.defaults if not group else []:
            if item == "_self_":
                out.append(this)
                placed = True
            elif isinstance(item, str):
                out.extend(self._compose(folder, item, where))
            elif isinstance(item, dict) and len(item) == 1:
                (child_group, option), = item.items()
                if isinstance(option, str) and isinstance(child_group, str) and not child_group.startswith("override"):
                    out.extend(self._compose(folder, option, where, tuple(child_group.split("/"))))
        return out + ([] if placed else [this])

    def _started_alone(self) -> _Run:
        run = _Run("")
        self._default_configs(run)
        return run

    def _default_configs(self, run: _Run) -> None:
        for path, written, loaded_by in self.defaults:
            if path is None:
                run.unread = f"the config it loads by default ({written}) is not in the project"
                continue
            run.configs.append((self.reader.read(path), _display(self.entry, path), loaded_by))
        run.configs.extend(self.hydra)
        if not self.defaults and self.config_options and not self.hydra:
            run.unread = (f"the config file it loads is named at launch (`{sorted(self.config_options)[0]}`), "
                          "and no launch of this program shows which")
        for values, display, _ in run.configs:
            if values.problem is not None:
                run.broken = f"{display}, which the run loads, could not be read ({values.problem})"

    def _launched(self, label: str, launch, folders: list) -> _Run:
        run = _Run(label, flags=launch.flags())
        passed = [(value.value, _at(run, value.span)) for name, value in run.flags.items()
                  if value.value and (name in self.config_options or name in _settings()["config_flags"])]
        passed += [(arg.text, _at(run, arg.span)) for arg in _positionals(launch.script_args)
                   if is_config_path(arg.text)]
        for arg in _positionals(launch.script_args):  # Hydra overrides: `train.amp=true`, `+x=1`
            key, eq, value = arg.text.lstrip("+").partition("=")
            if eq and key and all(part.isidentifier() for part in key.split(".")):
                run.overrides[tuple(key.split("."))] = (value, _at(run, arg.span))
        groups = self._group_options(run)
        if not passed:
            self._default_configs(run)
            run.configs.extend(groups)
            return run
        for text, where in passed:
            text = _unwrap_path(text)
            path = self._find(text, folders + [os.path.dirname(self.entry.abspath), *self._roots()])
            if path is None:
                run.unread = f"the config {text} passed at {where} is not in the project"
                continue
            if self.reader.read(path).problem is not None:
                run.broken = f"the config {text} passed at {where} could not be read ({self.reader.read(path).problem})"
                continue
            run.configs.append((self.reader.read(path), _display(self.entry, path), f"passed at {where}"))
        run.configs.extend(self.hydra + groups)
        return run

    def _group_options(self, run: _Run) -> list:
        """The configs a launch selects from Hydra's config groups (`experiment=example`, `trainer=gpu`),
        taken out of its overrides; an option not in the project leaves the run's configuration unknown."""
        out = []
        for path, (option, where) in list(run.overrides.items()):
            folder = next((f for f in self.hydra_folders if len(path) == 1 and os.path.isdir(os.path.join(f, path[0]))),
                          None)
            if folder is None:
                continue
            del run.overrides[path]
            composed = self._compose(folder, option, f"selected at {where}", path) if option else []
            if any(values.problem is not None for values, _, _ in composed):
                run.unread = f"the Hydra option {path[0]}={option} selected at {where} is not in the project"
                continue
            out.extend(composed)
        return out

    def _roots(self) -> list:
        """Where a config path written relative to the project (`configs/train.yaml`) is found."""
        return [self.project.project_root(os.path.dirname(self.entry.abspath))] if self.project is not None else []

    @staticmethod
    def _find(text: str, folders: list) -> Optional[str]:
        if not isinstance(text, str) or not text or "$" in text:
            return None
        if os.path.isabs(text):
            return text if os.path.isfile(text) else None
        for folder in folders:
            candidate = os.path.normpath(os.path.join(folder, text))
            if os.path.isfile(candidate):
                return candidate
        return None


def _configuration_names(files) -> frozenset:
    """Names bound to a configuration: what a parser or config loader returned (`args = parse_args()`,
    `cfg = Config.fromfile(path)`), and the parameters of a `@hydra.main` function."""
    sources = frozenset(_settings()["sources"])
    mains = frozenset(_settings()["hydra_main"])
    names = set()
    for file in files:
        for call in file.calls:
            if call.assigned_to and call.method in sources:
                names.add(call.assigned_to)
        for function in file.functions.values():
            if any(d.names & mains or (d.base or "") in mains for d in function.decorators):
                names.update(function.params)
    return frozenset(names)


# `$(realpath configs/a.yaml)`, `$(readlink -f cfg.yaml)`, `$(get_real_path "./configs/a.yml")`: a launch script's
# path normaliser (a command or a shell function named for what it does) applied to a literal path names that file.
_PATH_NORMALISER = re.compile(
    r"""^\$\((?:realpath|readlink|[A-Za-z_]*(?:path|real|abs)[A-Za-z_]*)(?:\s+-[a-z]+)*\s+["']?([^"'$()`\s]+)["']?\s*\)$""")


def _unwrap_path(text: Any) -> Any:
    found = _PATH_NORMALISER.match(text) if isinstance(text, str) else None
    return found.group(1) if found else text


def _positionals(args) -> list:
    """The words of a command line that are not flags nor a flag's value."""
    out, index = [], 0
    while index < len(args):
        arg = args[index]
        index += 1
        if is_flag(arg.text):
            if "=" not in arg.text and index < len(args) and not is_flag(args[index].text) \
                    and not is_config_path(args[index].text):
                index += 1  # `--lr 0.1`: the flag's value
            continue
        out.append(arg)
    return out


def _at(run: _Run, span) -> str:
    """Where a launch wrote something, as the scan shows paths (the launch line's file, the word's line)."""
    return f"{run.label.rsplit(':', 1)[0]}:{span.line}" if run.label else f"{span.path}:{span.line}"


def _override_value(text: str) -> Any:
    lowered = text.strip("'\"").lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "none", "~"):
        return None
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


# Hydra's package directive: a group config whose values sit at the top, not under the group's key.
_GLOBAL_PACKAGE = re.compile(r"^#\s*@package\s+_global_\b", re.M)


def _rooted(values: ConfigValues, group: tuple) -> ConfigValues:
    """A Hydra config group's values sit under the group's key (`model/resnet.yaml` at `model`)."""
    if not group:
        return values
    return ConfigValues(values.abspath, {group + path: entry for path, entry in values.values.items()},
                        values.problem)


def _display(entry: FileFacts, abspath: str) -> str:
    shown = os.path.join(os.path.dirname(entry.path), os.path.relpath(abspath, os.path.dirname(entry.abspath)))
    return os.path.normpath(shown).replace(os.sep, "/")


def _listed(setters: list, shown: int = 2) -> str:
    more = f" and {len(setters) - shown} more" if len(setters) > shown else ""
    return ", ".join(setters[:shown]) + more


def _project_configs(project, entry: FileFacts) -> list:
    """The configuration files of the entry's project, listed once per root: data files (YAML, JSON) under
    its root, at most `max_other_files`, and the Python files the scan read that are configs (module-level
    values only: no function, class or `__main__` block, as mmengine and LazyConfig configs are)."""
    if project is None:
        return []  # a file judged alone: no project to search
    top = project.project_root(os.path.dirname(entry.abspath))
    if top not in project.config_index:
        settings = _settings()
        data, limit = tuple(settings["data_endings"]), settings["max_other_files"]
        found = []
        for current, subfolders, names in os.walk(top):
            subfolders[:] = sorted(s for s in subfolders if not s.startswith(".") and s not in _SKIPPED_FOLDERS)
            found.extend(os.path.join(current, name) for name in sorted(names) if name.endswith(data))
            if len(found) >= limit:
                break
        prefix = top.rstrip(os.sep) + os.sep
        python = sorted(f.abspath for f in project.files.values() if f.abspath.startswith(prefix)
                        and os.path.basename(f.abspath) != "__init__.py"
                        and not f.functions and not f.classes and f.main_guard is None)
        project.config_index[top] = found[:limit] + python[:limit]
    return project.config_index[top]


def flow_guards(program) -> list:
    """The flag guards each step of `program.flow` runs under, as ((FlagGuard, FileFacts), ...): its own
    `if`s, and those of the calls that led to it (a helper called under `if args.amp:`)."""
    out = []
    caller: dict = {}  # depth -> guards in force at the latest call of that depth
    for step in program.flow:
        fact = step.fact
        own = tuple((g, step.file) for g in getattr(fact, "flag_guards", ()))
        inherited = caller.get(step.depth - 1, ()) if step.depth and getattr(fact, "scope", "") != MODULE_SCOPE else ()
        guards = inherited + own
        if isinstance(fact, Call):
            caller[step.depth] = guards
        out.append(guards)
    return out


def off_in_every_run(config: RunConfig, placed: tuple) -> bool:
    """Every run of `config` skips the code under `placed` ((FlagGuard, FileFacts), ...) because of what it
    is launched with or loads, not only because of a default written in the code."""
    for run in config.runs:
        decided = [config.in_run(run, guard, file) for guard, file in placed]
        if not any(b is not None and b.state == SKIPPED and b.setting is not None and b.setting.origin != "default"
                   for b in decided):
            return False
    return True


def run_config(project, program, launches: Optional[list] = None) -> RunConfig:
    """The RunConfig of `program`, once per (entry, launches) on the project. `launches` None: the
    program's launch lines, else the commands its documentation shows; [] for the program alone."""
    if launches is None:
        launches = program_launches(project, program)
    key = (program.entry.abspath, tuple(label for label, _, _ in launches))
    if key not in project.run_configs:
        project.run_configs[key] = RunConfig(project, program.entry, program.files, launches)
    return project.run_configs[key]


def program_launches(project, program) -> list:
    """(label, LaunchCommand, folders) of each launch line of `program`, else each documented command."""
    if program.launches:
        return [(f"{shell.path}:{launch.span.line}", launch, project.launch_folders(shell.abspath))
                for shell, launch in program.launches]
    return [(f"{_display(program.entry, d.path)}:{d.line}", d.launch, project.launch_folders(d.path))
            for d in project.documented_launches(program.entry)]


def file_config(file: FileFacts) -> RunConfig:
    """The configuration one file declares, for a file no program runs: its own flags and the defaults of
    its lookups. Not its class fields: their values usually come from a config file this file does not show."""
    return RunConfig(None, file, [file], [], use_fields=False)
