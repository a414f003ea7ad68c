"""tools/gen_api_differences.py on mapping pages written here (never the real pages), committed on
release branches of a real git repository, read the way the generator reads the docs mirror."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "gen_api_differences.py"
spec = importlib.util.spec_from_file_location("gen_api_differences", TOOL)
gen = importlib.util.module_from_spec(spec)
sys.modules["gen_api_differences"] = gen
spec.loader.exec_module(gen)
KINDS = tomllib.loads(gen.KINDS_FILE.read_text())


def page(title: str, torch_sig: str, ms_api: str, ms_sig: str, rows: str, prose: str = "") -> str:
    torch_api = title
    return textwrap.dedent(f"""\
        # Differences with {torch_api}

        ## {torch_api}

        ```text
        {torch_sig}
        ```

        ## {ms_api}

        ```text
        {ms_sig}
        ```

        ## Differences

        {prose}

        | Categories | Subcategories | PyTorch | MindSpore | Difference |
        | --- | --- | --- | --- | --- |
        """) + textwrap.dedent(rows)


SLOPE = page("torch.nn.LeakyReLU", "class torch.nn.LeakyReLU(negative_slope=0.01, inplace=False)(input) -> Tensor",
             "mindspore.nn.LeakyReLU", "class mindspore.nn.LeakyReLU(alpha=0.2)(x) -> Tensor", """\
    | Parameters | Parameter 1 | negative_slope | alpha | Same role, other name, other default |
    | | Parameter 2 | inplace | - | No such switch in MindSpore |
    | Input | Single input | input | x | Other name |
    """)
NORM = page("torch.nn.InstanceNorm2d",
            "class torch.nn.InstanceNorm2d(num_features, eps=1e-05, momentum=0.1, affine=False, "
            "track_running_stats=False)",
            "mindspore.nn.InstanceNorm2d",
            "class mindspore.nn.InstanceNorm2d(num_features, eps=1e-5, momentum=0.1, affine=True, "
            "gamma_init='ones', beta_init='zeros')", """\
    | Parameters | Parameter 1 | eps | eps | Same |
    | | Parameter 2 | affine | affine | The default values are different here |
    | | Parameter 3 | track_running_stats | - | Only PyTorch has it |
    | | Parameter 4 | - | gamma_init | Only MindSpore has it |
    """)
BN = page("torch.nn.BatchNorm2d", "class torch.nn.BatchNorm2d(num_features, eps=1e-05, momentum=0.1)",
          "mindspore.nn.BatchNorm2d", "class mindspore.nn.BatchNorm2d(num_features, eps=1e-5, momentum=0.9)", """\
    | Parameters | Parameter 1 | momentum | momentum | Convert with 1-momentum between the two |
    """)
L2 = page("torch.nn.functional.normalize", "torch.nn.functional.normalize(input, p=2, dim=1, eps=1e-12, out=None)",
          "mindspore.ops.L2Normalize", "class mindspore.ops.L2Normalize(axis=0, epsilon=1e-4)(input_x)", "",
          prose="Both divide by a norm, but with differences in calculation formulas the results can differ.")
DENSE = page("torch.nn.Linear", "class torch.nn.Linear(in_features, out_features, bias=True)",
             "mindspore.nn.Dense", "class mindspore.nn.Dense(in_channels, out_channels, weight_init='normal', "
             "has_bias=True)", """\
    | Parameters | Parameter 1 | in_features | in_channels | Other name |
    | | Parameter 2 | - | weight_init | Initialiser of the weight |
    | | Parameter 3 | bias | has_bias | Other name |
    """)
RENAMED = page("torch.svd", "torch.svd(input, some=True)", "mindspore.ops.svd",
               "mindspore.ops.svd(input, full_matrices=False)", """\
    | Parameters | Parameter 1 | some | full_matrices | Reduced form: set full_matrices False or some True |
    """)
DATASET = page("torchtext.datasets.IMDB", "torchtext.datasets.IMDB(root, split=('train', 'test'))",
               "mindspore.dataset.IMDBDataset", "mindspore.dataset.IMDBDataset(dataset_dir, usage=None)", """\
    | Parameters | Parameter 1 | split | usage | The default values differ |
    """)


def parsed(text: str, name: str = "X.md") -> list[dict]:
    return gen.classify(gen.parse_page(name, text), KINDS)


def by(rows, **match):
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def test_default_value_with_both_defaults_and_position():
    rows = parsed(SLOPE, "LeakyReLU.md")
    assert len(rows) == 1, rows  # inplace and the input row are not differences that change results
    row = rows[0]
    assert (row["kind"], row["mindspore_parameter"], row["torch_parameter"]) == ("default-value", "alpha",
                                                                                 "negative_slope")
    assert (row["mindspore_default"], row["torch_default"], row["mindspore_position"]) == ("0.2", "0.01", 0)


def test_equal_defaults_written_differently_are_not_a_difference():
    rows = parsed(NORM)
    assert by(rows, kind="default-value", mindspore_parameter="affine")
    assert not by(rows, mindspore_parameter="eps")  # 1e-05 and 1e-5
    assert not by(rows, mindspore_parameter="gamma_init")  # 'ones' is PyTorch's initialiser too
    missing = by(rows, kind="missing-parameter")
    assert [(r["torch_parameter"], r["torch_default"]) for r in missing] == [("track_running_stats", "False")]


def test_meaning_formula_and_init_kinds():
    assert by(parsed(BN), kind="parameter-meaning", mindspore_parameter="momentum", torch_default="0.1")
    l2 = parsed(L2)
    assert by(l2, kind="formula")
    # No table: the signatures' parameters are paired by the alias list (dim/axis, eps/epsilon).
    assert by(l2, kind="default-value", mindspore_parameter="axis", torch_parameter="dim", mindspore_default="0")
    assert by(l2, kind="default-value", mindspore_parameter="epsilon", torch_default="1e-12")
    assert by(parsed(DENSE), kind="init", mindspore_parameter="weight_init", mindspore_default="'normal'")


def test_renamed_parameters_need_the_page_to_say_the_defaults_differ():
    assert parsed(RENAMED) == []  # some=True and full_matrices=False ask for the same thing
    assert parsed(DATASET) == []  # which files a dataset reads is not a numeric difference


def test_unparsable_signature_gives_no_rows_not_an_error():
    text = SLOPE.replace("class mindspore.nn.LeakyReLU(alpha=0.2)(x) -> Tensor", "mindspore.nn.LeakyReLU(alpha=")
    assert parsed(text) == []


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    repo = tmp_path / "docs"
    pages = repo / gen.PAGES

    def git(*args):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    def commit(branch: str, files: dict):
        git("checkout", "-q", "-B", branch)
        for old in pages.glob("*.md") if pages.exists() else ():
            old.unlink()
        pages.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (pages / name).write_text(text)
        git("add", "-A")
        git("commit", "-q", "--allow-empty", "-m", branch)

    repo.mkdir()
    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    commit("r2.0", {"LeakyReLU.md": SLOPE, "Dense.md": DENSE})
    # r2.1 changes Dense's initialiser to PyTorch's: its init row holds for r2.0 only.
    commit("r2.1", {"LeakyReLU.md": SLOPE, "Dense.md": DENSE.replace("weight_init='normal'", "weight_init=None"),
                    "BatchNorm2d.md": BN})
    commit("r2.3", {"LeakyReLU.md": SLOPE})  # superseded by its patch branch
    commit("r2.3.1", {"LeakyReLU.md": SLOPE, "Dense.md": DENSE.replace("'normal'", "None"), "BatchNorm2d.md": BN})
    # r2.5 drops the pages (the docs moved to another mapping): the rows stay open-ended.
    commit("r2.5.0", {"Other.md": "# nothing here\n"})
    commit("feature-x", {"LeakyReLU.md": SLOPE.replace("0.2", "0.3")})  # not a release branch
    return repo


def test_branches_ranges_and_written_table(docs: Path, tmp_path: Path):
    out = tmp_path / "api_differences.toml"
    assert gen.main([str(docs), "-o", str(out)]) == 0
    data = tomllib.loads(out.read_text())
    assert data["branches"] == ["r2.0", "r2.1", "r2.3.1", "r2.5.0"]
    assert data["pages"] == {"r2.0": 2, "r2.1": 3, "r2.3.1": 3, "r2.5.0": 1}
    rows = data["difference"]
    init = by(rows, kind="init")
    assert [(r["since"], r.get("until")) for r in init] == [("r2.0", "r2.0")]
    slope = by(rows, mindspore="mindspore.nn.LeakyReLU")
    assert [(r["since"], r.get("until", "")) for r in slope] == [("r2.0", "")]
    assert by(rows, kind="parameter-meaning")[0]["since"] == "r2.1"
    assert data["documented"]["r2.3.1"] == ["BatchNorm2d.md", "LeakyReLU.md"]
    # The consequence is our own template filled with the values, not the page's text.
    assert slope[0]["consequence"].startswith("MindSpore's `alpha` defaults to 0.2 where PyTorch's `negative_slope`")
    assert "Same role" not in out.read_text()
    # Stable ordering: a second run writes the same bytes.
    again = tmp_path / "again.toml"
    gen.main([str(docs), "-o", str(again)])
    assert again.read_text() == out.read_text()


def test_no_release_branch_or_no_repository_is_a_clear_error(tmp_path: Path, capsys):
    assert gen.main([str(tmp_path / "absent"), "-o", str(tmp_path / "x.toml")]) == 1
    assert "cannot read" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    subprocess.run(["git", "-C", str(empty), "init", "-q"], check=True)
    assert gen.main([str(empty), "-o", str(tmp_path / "x.toml")]) == 1
    assert "no release branch" in capsys.readouterr().err


GRID = page("torch.nn.functional.grid_sample",
            "torch.nn.functional.grid_sample(input, grid, mode='bilinear', padding_mode='zero', align_corners=None)",
            "mindspore.ops.grid_sample",
            "mindspore.ops.grid_sample(input, grid, mode='bilinear', padding_mode='zeros', align_corners=False)", """\
    | Parameters | Parameter 1 | padding_mode | padding_mode | Same |
    """)
PAD = page("torch.nn.functional.pad", "torch.nn.functional.pad(input, pad, mode='constant', value=0)",
           "mindspore.ops.pad", "mindspore.ops.pad(input_x, padding, mode='constant', value=None)", """\
    | Parameters | Parameter 1 | value | value | Consistent: the default value is 0 when None is given |
    """)
SOFTMAX = page("torch.nn.Softmax", "class torch.nn.Softmax(dim=None)", "mindspore.nn.Softmax",
               "class mindspore.nn.Softmax(axis=-1)", """\
    | Parameters | Parameter 1 | dim | axis | Other name, different default values |
    """)


def test_installed_torch_corrects_the_pages_pytorch_signature():
    (row,) = parsed(GRID)  # the page misspells PyTorch's default as 'zero'
    assert row["torch_default"] == "'zero'"
    assert gen.check_torch_side(row) is None  # torch 2.13 says 'zeros': no difference
    slope = parsed(SLOPE)[0]
    assert gen.check_torch_side(slope)["torch_default"] == "0.01"
    unknown = dict(slope, torch="torch.nn.NoSuchModule")
    assert gen.check_torch_side(unknown) == unknown  # not in torch: the page stands


def test_none_meaning_the_same_value_and_deprecated_defaults_are_not_differences():
    assert parsed(PAD) == []  # the row says None means 0, PyTorch's default
    assert parsed(SOFTMAX) == []  # PyTorch deprecates leaving `dim` out: nothing to match
