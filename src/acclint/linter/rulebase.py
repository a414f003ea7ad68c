"""What a rule is, as the engine sees it. Rules subclass `Rule`; the engine never imports them."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Iterable, Mapping, Optional

if TYPE_CHECKING:  # pragma: no cover
    from acclint.linter.context import FileContext, ProgramContext

# In rule examples, the line a finding must land on ends with this marker.
EXPECT_MARKER = re.compile(r"\s*#\s*expect:\s*(?P<codes>ACL\d{3}(?:\s*,\s*ACL\d{3})*)\s*$")


def code(block: str) -> str:
    """An indented triple-quoted block as the source it shows: dedented, without the opening newline."""
    text = textwrap.dedent(block)
    return text[1:] if text.startswith("\n") else text


@dataclass(frozen=True)
class Example:
    """A small project (path -> source) that a rule must flag (invalid) or leave alone (valid).

    In invalid examples each line a finding must land on ends with `# expect: ACLnnn`.
    The first file is the one shown first on the rule's page.
    """

    files: Mapping[str, str]
    title: str = ""

    def __post_init__(self) -> None:
        # Examples are written as indented triple-quoted blocks (as Fixit writes them): store plain code.
        object.__setattr__(self, "files", {path: code(source) for path, source in self.files.items()})

    @classmethod
    def script(cls, source: str, title: str = "", path: str = "train.py") -> "Example":
        return cls({path: source}, title)

    def expected(self, code: str) -> set[tuple[str, int]]:
        """(path, line) pairs marked for `code`."""
        marks = set()
        for path, source in self.files.items():
            for number, text in enumerate(source.splitlines(), start=1):
                match = EXPECT_MARKER.search(text)
                if match and code in re.split(r"\s*,\s*", match.group("codes")):
                    marks.add((path, number))
        return marks

    def shown(self) -> dict[str, str]:
        """The sources without test markers, as the rule page shows them."""
        return {
            path: "\n".join(EXPECT_MARKER.sub("", line) for line in source.splitlines()) + "\n"
            for path, source in self.files.items()
        }

    def on_disk(self) -> dict[str, str]:
        """The files as a test writes them: JSON has no comments, so its `# expect:` markers are
        stripped (lines keep their numbers); other files keep theirs."""
        shown = self.shown()
        return {path: shown[path] if path.endswith(".json") else source for path, source in self.files.items()}


@dataclass(frozen=True)
class RuleDoc:
    """A rule page: what it does, why it matters (both sides' numbers), how to fix it."""

    what: str
    why: str
    fix: str
    references: tuple[str, ...] = ()


class Rule:
    """Base class. Subclasses set the metadata and override the hooks they need.

    Hooks never walk a tree: the engine walks each file once, records facts, and calls
    `check_file` with those facts; project-level rules get `check_program` once per entry point.
    """

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case slug, e.g. "unseeded-numpy"
    category: ClassVar[str]
    severity: ClassVar[str]  # default severity; a finding may lower or raise it with a reason
    summary: ClassVar[str]  # one line for `acclint rules`
    doc: ClassVar[RuleDoc]
    valid: ClassVar[tuple[Example, ...]] = ()
    invalid: ClassVar[tuple[Example, ...]] = ()
    # "stable" or "preview" (new rules): linter.maturity lets measured precision overrule it.
    maturity: ClassVar[str] = "stable"
    # The premises its findings rest on (findings.PREMISES): those a finding does not prove itself are
    # proven, or not, by the engine's shared facts once every program is known (linter.proof).
    premises: ClassVar[tuple] = ("trains", "executes")
    # The tensor framework whose semantics the per-file checks assume ("torch"); None = any.
    # A file written against another framework only is not judged by them (linter.frameworks).
    tensor_framework: ClassVar[Optional[str]] = None

    def configured(self, config) -> "Rule":
        """This rule under `config`'s settings (most rules have none; the engine asks before a scan)."""
        return self

    def check_file(self, ctx: "FileContext") -> None:
        """Per-file checks over the file's recorded facts."""

    def check_program(self, ctx: "ProgramContext") -> None:
        """Checks of a whole program: an entry point and everything it reaches."""

    def check_config(self, ctx: "FileContext", config) -> None:
        """Checks of a config file acclint understands (`linter.configs.ConfigFile`)."""

    def __repr__(self) -> str:
        return f"<{self.code} {self.name}>"


@dataclass
class RuleSet:
    rules: list[Rule] = field(default_factory=list)

    def __iter__(self) -> Iterable[Rule]:
        return iter(self.rules)

    def by_code(self) -> dict[str, Rule]:
        return {rule.code: rule for rule in self.rules}
