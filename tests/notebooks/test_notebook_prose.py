"""Each analysis notebook's Markdown names only methods its analysis runs, and no unfinished work.

A reader takes a notebook's prose for a description of what its code does, and rarely opens
pipeline/analysis to check. So every statistical method the prose names must be implemented in
the code the notebook runs: the pipeline.analysis modules it imports and, transitively, the ones
they import (imports inside functions included). A method counts as implemented when that code,
with its comments and docstrings removed, holds the method's implementation marker: the call
or the name the method cannot run without (``mannwhitneyu(`` for Mann-Whitney, ``"holm"`` for
Holm's adjustment, ``MixedLM`` for the mixed model). A docstring or a caption string that
mentions a method does not implement it. Every ``stats.<function>`` the prose names must be
called by that code, and every stage it names must exist (dvc.yaml, or a stage
``pipeline/stages.py`` generates). A stage "not built yet" and TODO-like placeholders fail too.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ANALYSIS_CODE = ROOT / "pipeline" / "analysis"
NOTEBOOKS = sorted((ROOT / "notebooks" / "analysis").glob("*.ipynb"))
PACKAGE = "pipeline.analysis"


@dataclass(frozen=True)
class Method:
    """A method a notebook may name: ``term`` matches it in Markdown (case-insensitive),
    ``marker`` its implementation in code (comments and docstrings removed)."""

    name: str
    term: str
    marker: str


VOCABULARY = [
    Method("cluster bootstrap", r"cluster[-\s]+bootstrap", r"\bcluster_bootstrap\w*\s*\("),
    Method("parametric bootstrap", r"parametric[-\s]+bootstrap",
           r"\brng\.normal\("),  # simulate from the fitted model, then refit
    # any other bootstrap resamples the data with replacement
    Method("resampling bootstrap", r"(?<!parametric )(?<!parametric-)\bbootstrap",
           r"\.choice\([^)]*replace\s*=\s*True|\bbootstrap\w*\s*\("),
    Method("BCa interval", r"\bBCa\b", r"['\"]BCa['\"]|\bbca\w*\s*\("),
    Method("jackknife", r"\bjackknife", r"\bjackknife\w*\s*\("),
    Method("Welch", r"\bWelch", r"\b_?welch\w*\s*\("),
    Method("Mann-Whitney", r"Mann[-\s]+Whitney|\bMWU\b", r"\bmannwhitneyu\s*\("),
    Method("Wilcoxon", r"\bWilcoxon", r"\bwilcoxon\s*\("),
    Method("Kruskal-Wallis", r"Kruskal", r"\bkruskal\s*\("),
    Method("Kolmogorov-Smirnov", r"Kolmogorov|\bKS[-\s]test", r"\bks_2samp\s*\(|\bkstest\s*\("),
    Method("ANOVA", r"\bANOVA\b", r"\banova\w*\s*\(|\bf_oneway\s*\("),
    Method("permutation test", r"permutation[-\s]+test|randomi[sz]ation[-\s]+test",
           r"\bpermutation_test\s*\(|\.permutation\s*\("),
    Method("Bonferroni", r"Bonferroni", r"['\"]bonferroni['\"]"),
    Method("Holm", r"\bHolm\b", r"['\"]holm['\"]"),
    Method("Benjamini-Hochberg", r"Benjamini|Hochberg|false[-\s]+discovery", r"['\"]fdr_bh['\"]"),
    Method("TOST", r"\bTOST\b|two[-\s]+one[-\s]+sided", r"\btost\w*\s*\("),
    Method("Student t", r"Student|\bt[-\s]+(?:interval|test|quantile)s?\b", r"\bt\.ppf\s*\("),
    Method("noncentral t", r"non[-\s]?central", r"\bnct\b"),
    Method("Stein's two-stage rule", r"\bStein", r"\b_?stein\w*\s*\("),
    Method("order-statistic interval",
           r"order[-\s]+statistic|distribution[-\s]+free|rank\s+interval", r"\bbinom\.cdf\s*\("),
    Method("delta method", r"delta[-\s]+method", r"\bratio_of_means_ci\s*\("),
    Method("mixed model", r"mixed[-\s]+model|\bREML\b|MixedLM|random\s+intercept",
           r"\bMixedLM\b"),
    Method("cluster-robust errors", r"clustered\s+by\s+run|cluster[-\s]+robust",
           r"cov_type\s*=\s*['\"]cluster['\"]"),
    Method("Bayesian inference", r"\bBayes|credible\s+interval|posterior",
           r"\bpymc\b|\bbambi\b|\bbayes\w*\s*\("),
    Method("Cohen's d", r"Cohen", r"\bcohen\w*\s*\("),
    Method("Hodges-Lehmann", r"Hodges", r"\bhodges\w*\s*\("),
]  # fmt: skip
# What unfinished work looks like in prose. Case matters for the markers programmers type.
PLACEHOLDERS = [
    re.compile(r"not\s+built\s+yet", re.IGNORECASE),
    re.compile(r"not\s+(?:yet\s+)?(?:implemented|written|wired)", re.IGNORECASE),
    re.compile(r"coming\s+soon|to\s+be\s+(?:written|done|decided)", re.IGNORECASE),
    re.compile(r"\b(?:TODO|FIXME|TBD|XXX)\b"),
]
NAMED_STATS = re.compile(r"`stats\.([A-Za-z_]\w*)`")
# A stage's name: a verb of dvc.yaml's stages, a dash, lowercase words.
NAMED_STAGE = re.compile(
    r"`((?:collect|summarise|compare|replicate|assemble|calibrate|check)-[a-z0-9-]*[a-z0-9])`"
)


def strip_docs_and_comments(source: str) -> str:
    """``source`` as code only: docstrings gone and, through ``ast.unparse``, comments too."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):  # fmt: skip
                node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def _analysis_imports(tree: ast.AST) -> set[Path]:
    """The files of pipeline.analysis that ``tree`` imports, anywhere in it."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.startswith(PACKAGE)}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith(PACKAGE):
                names.add(node.module)
                names |= {f"{node.module}.{a.name}" for a in node.names}
    found = set()
    for name in names:
        base = ROOT.joinpath(*name.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                found.add(candidate)
    return found


@cache
def _module(path: Path) -> tuple[str, frozenset[Path]]:
    """A module's code (``strip_docs_and_comments``) and the analysis files it imports."""
    source = path.read_text(encoding="utf-8")
    return strip_docs_and_comments(source), frozenset(_analysis_imports(ast.parse(source)))


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _text(cell: dict) -> str:
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)


def markdown(path: Path) -> str:
    return "\n\n".join(_text(c) for c in _cells(path) if c["cell_type"] == "markdown")


def analysis_code(path: Path) -> str:
    """The code a notebook runs under pipeline/analysis: every module its code cells import,
    and theirs in turn, docstrings and comments removed."""
    tree = ast.parse("\n".join(_text(c) for c in _cells(path) if c["cell_type"] == "code"))
    todo, seen = list(_analysis_imports(tree)), set()
    while todo:
        file = todo.pop()
        if file not in seen:
            seen.add(file)
            todo.extend(_module(file)[1])
    return "\n".join(_module(f)[0] for f in sorted(seen))


def unimplemented(text: str, code: str) -> list[str]:
    """The methods ``text`` names whose implementation marker ``code`` lacks."""
    return [
        m.name
        for m in VOCABULARY
        if re.search(m.term, text, re.IGNORECASE) and not re.search(m.marker, code)
    ]


def placeholders(text: str) -> list[str]:
    return [m.group(0) for p in PLACEHOLDERS for m in p.finditer(text)]


def uncalled_stats(text: str, code: str) -> list[str]:
    """The ``stats.<function>`` ``text`` names that ``code`` never calls."""
    called = code.replace("def ", "def_")  # a definition is not a call
    return sorted({f"stats.{name}" for name in NAMED_STATS.findall(text)
                   if not re.search(rf"\b{name}\s*\(", called)})  # fmt: skip


@cache
def stage_names() -> frozenset[str]:
    """dvc.yaml's stages and every stage name pipeline/stages.py writes literally (stages it
    generates only for some settings, e.g. compare-environments)."""
    stages = set(yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"])
    source = (ROOT / "pipeline" / "stages.py").read_text(encoding="utf-8")
    stages |= set(re.findall(r"Stage\(\s*\"([a-z0-9-]+)\"", source))
    return frozenset(stages)


def unknown_stages(text: str) -> list[str]:
    return sorted(set(NAMED_STAGE.findall(text)) - stage_names())


def test_the_analysis_notebooks_are_all_here():
    names = {p.name for p in NOTEBOOKS}
    assert {"20-summarise-throughput.ipynb", "23-compare-internet-datacenter.ipynb",
            "32-summarise-noise.ipynb", "39-assemble-article.ipynb"} <= names  # fmt: skip
    assert len(NOTEBOOKS) >= 16


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_method_named_is_implemented_in_the_code_it_runs(path):
    missing = unimplemented(markdown(path), analysis_code(path))
    assert not missing, f"{path.name} names methods its analysis does not run: {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_stats_function_named_is_called(path):
    uncalled = uncalled_stats(markdown(path), analysis_code(path))
    assert not uncalled, f"{path.name} names functions its analysis never calls: {uncalled}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_unfinished_work_and_every_stage_named_exists(path):
    text = markdown(path)
    assert not placeholders(text), f"{path.name}: {placeholders(text)}"
    assert not unknown_stages(text), f"{path.name} names stages that do not exist: " + str(
        unknown_stages(text)
    )


# The checks on known text and code: each must be able to fail.
CODE = '''
"""Welch t intervals, a cluster bootstrap and Mann-Whitney, only described."""
from scipy import stats as _st

MULTIPLICITY = {"holm": "holm"}


def interval(a, b):
    """Bonferroni, BCa."""
    # mannwhitneyu(a, b) would go here
    return _st.t.ppf(0.975, len(a) - 1), tost_log_ratio(a, b)
'''


def test_docstrings_and_comments_are_not_code():
    code = strip_docs_and_comments(CODE)
    assert "Welch" not in code and "mannwhitneyu" not in code and "Bonferroni" not in code
    assert "t.ppf(" in code and "'holm'" in code


@pytest.mark.parametrize("text, names", [
    ("intervals from a cluster-bootstrap over runs", ["cluster bootstrap", "resampling bootstrap"]),
    ("a bootstrap interval of the median", ["resampling bootstrap"]),
    ("BCa intervals", ["BCa interval"]),
    ("the Welch t interval", ["Welch"]),
    ("a Mann-Whitney test", ["Mann-Whitney"]),
    ("Bonferroni-adjusted p-values", ["Bonferroni"]),
    ("a permutation test of the modes", ["permutation test"]),
    ("its mixed model", ["mixed model"]),
    ("the paired TOST and a Student t interval, Holm-adjusted", []),
])  # fmt: skip
def test_the_vocabulary_against_known_code(text, names):
    assert unimplemented(text, strip_docs_and_comments(CODE)) == names


def test_the_parametric_bootstrap_is_its_own_method():
    code = strip_docs_and_comments("import numpy as np\nrng = np.random.default_rng(1)\n"
                                   "y = rng.normal(0.0, 1.0, 5)\n")  # fmt: skip
    assert unimplemented("parametric-bootstrap intervals; a parametric bootstrap", code) == []
    assert unimplemented("a bootstrap over runs", code) == ["resampling bootstrap"]


def test_placeholders_and_stages_are_caught():
    text = "The replication stage (not built yet) and `summarise-everything`. TODO: say why."
    assert placeholders(text) == ["not built yet", "TODO"]
    assert unknown_stages(text) == ["summarise-everything"]
    assert unknown_stages("`summarise-throughput`, `compare-environments`") == []
    assert placeholders("a todo list is not a placeholder; neither is 'to be compared'") == []


def test_a_named_stats_function_must_be_called():
    code = strip_docs_and_comments(CODE)
    assert uncalled_stats("`stats.tost_log_ratio` and `stats.ratio_equivalence`", code) == [
        "stats.ratio_equivalence"
    ]
    assert uncalled_stats("`stats.interval`", code) == ["stats.interval"]  # defined, not called


def test_the_code_a_notebook_runs_follows_imports_inside_functions():
    # throughput.py imports the engine inside a function; the engine imports stats
    code = analysis_code(ROOT / "notebooks" / "analysis" / "20-summarise-throughput.ipynb")
    assert "def compare(" in code and "def log_ratio_equivalence(" in code
