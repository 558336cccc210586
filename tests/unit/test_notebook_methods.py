"""The analysis notebooks' Markdown describes the methods their code uses now.

A notebook's prose is read by people who never open pipeline/analysis/stats.py, so a method the
code no longer uses (the cluster bootstrap the intervals once came from, a stage "not built
yet" that exists) misleads them. Two checks over every notebook: no retired term in its
Markdown, and every `stats.<name>` / `pipeline.analysis.<module>` it names exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import nbformat
import pytest

from pipeline.analysis import stats

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").rglob("*.ipynb"))
# Methods and states the code has left behind, each with what replaced it. The mixed model's
# parametric bootstrap (notebooks 23 and 32) is current and is not matched.
RETIRED = {
    r"cluster[-\s]+bootstrap": "per-run log-ratio t intervals (stats.log_ratio_ci)",
    r"(?<!parametric )(?<!parametric-)\bbootstrap\s+(?:interval|percentile|over\s+runs)":
        "t intervals across runs",
    r"paired\s+bootstrap": "paired t intervals (stats.quantile_shift_ci, stats.log_ratio_ci)",
    r"\bBCa\b": "t intervals across runs",
    r"\bn_boot\b": "nothing: no bootstrap is left for intervals",
    r"not\s+built\s+yet": "the stage exists: name it",
    r"pooled\s+samples\s+of\s+all\s+measured\s+runs\*\*,\s+never": "each run's own percentile",
}  # fmt: skip
NAMED = re.compile(r"`(stats\.[A-Za-z_]\w*|pipeline\.analysis\.[A-Za-z_]\w*)`")


def _markdown(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def test_there_are_notebooks_to_check():
    names = {p.name for p in NOTEBOOKS}
    assert {"20-summarise-throughput.ipynb", "21-summarise-latency.ipynb",
            "34-compare-spectrum.ipynb", "39-assemble-article.ipynb"} <= names  # fmt: skip


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_retired_method_in_the_markdown(path):
    text = _markdown(path)
    found = {term: now for term, now in RETIRED.items() if re.search(term, text, re.IGNORECASE)}
    assert not found, f"{path.name} describes methods the code no longer uses: {found}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_named_function_exists(path):
    missing = []
    for name in NAMED.findall(_markdown(path)):
        if name.startswith("stats."):
            if not hasattr(stats, name.split(".", 1)[1]):
                missing.append(name)
        else:
            try:
                importlib.import_module(name)
            except ModuleNotFoundError:
                missing.append(name)
    assert not missing, f"{path.name} names what does not exist: {missing}"


@pytest.mark.parametrize("text", [
    "with a cluster-bootstrap percentile interval that resamples whole runs",
    "the same cluster\nbootstrap", "a paired bootstrap (a run drawn the same number of times)",
    "the job of the replication stage (not built yet)", "a bootstrap interval is narrower",
])  # fmt: skip
def test_the_retired_terms_are_caught(text):
    assert any(re.search(t, text, re.IGNORECASE) for t in RETIRED)


def test_the_mixed_models_parametric_bootstrap_is_not_a_retired_term():
    text = ("Intervals are parametric-bootstrap percentile intervals; the total's 95% "
            "parametric-bootstrap interval; a parametric bootstrap interval")  # fmt: skip
    assert not any(re.search(t, text, re.IGNORECASE) for t in RETIRED)
