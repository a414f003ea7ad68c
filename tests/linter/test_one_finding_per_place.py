"""One finding per place: a rule reports a line once, however many calls on it match."""

from __future__ import annotations

import json

from click.testing import CliRunner

from acclint.cli import main

TWO_LISTINGS_ON_ONE_LINE = """\
from pathlib import Path

import torch


class Images(torch.utils.data.Dataset):
    def __init__(self, root):
        self.files = list(Path(root).glob("*.jpg")) + list(Path(root).glob("*.png"))

    def __getitem__(self, index):
        return self.files[index]
"""


def test_two_matching_calls_on_one_line_are_one_finding(tmp_path):
    (tmp_path / "data.py").write_text(TWO_LISTINGS_ON_ONE_LINE)
    result = CliRunner().invoke(main, ["scan", str(tmp_path), "--select", "ACL211", "--format", "json", "--no-cache"])
    findings = json.loads(result.output)["findings"]
    assert [(f["rule"], f["line"]) for f in findings] == [("ACL211", 8)]
