"""No estimate lies outside its own interval, anywhere in the generated outputs.

The outputs are the article tree of test_article.py (every article table written from the
committed fixture summaries, numbers.json and article.md), plus the tables that tree leaves
out (memory, density, the engines' processes). Every cell or sentence that prints
"estimate [lo, hi]" (with or without units, signs or a trailing verdict) is read back and the
estimate must lie inside, to the printed precision; every numbers.json entry with an interval
likewise. The checker is shown to catch the two shapes of the bugs it was written for.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_article import FIXTURES, MARGINS, build_tree

from pipeline.analysis import article, footprint, latency, network, tables
from pipeline.analysis import host as host_analysis

NUM = r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
UNIT = r"(?: ?(%|[A-Za-z/]+))?"
# "12.3 [11.0, 13.1]", "+91.1 us [-75.1, +257.2]", "1.41 ms [428.5 us, 2.66 ms]", "11.67x [..]"
PRINTED = re.compile(rf"(?<![\w.,])({NUM}){UNIT}x? \[({NUM}){UNIT}, ({NUM}){UNIT}\]")
# a printed unit -> its size in the smallest of its kind, so that ends in another unit compare
SCALE = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6, "KiB": 1.0, "MiB": 1024.0, "GiB": 1024.0**2}


def _value(text: str, unit: str | None, fallback: str | None) -> float:
    return float(text.replace(",", "")) * SCALE.get(unit or fallback or "", 1.0)


def outside(text: str) -> list[str]:
    """Every "estimate [lo, hi]" in ``text`` whose estimate is not inside its interval (an end
    without a unit has the estimate's)."""
    bad = []
    for match in PRINTED.finditer(text):
        p, pu, lo, lu, hi, hu = match.groups()
        point = _value(p, pu, None)
        if not _value(lo, lu, pu) <= point <= _value(hi, hu, pu):
            bad.append(match.group(0))
    return bad


def test_the_checker_catches_an_estimate_outside_its_interval():
    assert outside("- Internet, udp, median: largest mode difference 3.2 us [6.1, 234.9] (x)") \
        == ["3.2 us [6.1, 234.9]"]  # fmt: skip
    assert outside("| Docker | 3.2 us [6.1 us, 234.9 us] | -2.55 [-3.10, -2.90] |") == [
        "3.2 us [6.1 us, 234.9 us]", "-2.55 [-3.10, -2.90]"]  # fmt: skip
    assert outside("1,000 events/s [996, 1,004]; +20.0% [+19.6, +20.4]; 0.56x [0.55, 0.58]") \
        == []  # fmt: skip
    assert outside("p99.9 [1, 2]; 40,123 [40,103, 40,148]") == []
    assert outside("1.41 ms [428.5 us, 2.66 ms]; 900 us [0.5 ms, 1.2 ms]") == []
    assert outside("1.41 ms [1.5 ms, 2.66 ms]") == ["1.41 ms [1.5 ms, 2.66 ms]"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = build_tree(tmp_path_factory.mktemp("intervals"))
    tabs = root / "reports" / "tables"
    memory = pd.read_parquet(FIXTURES / "processed" / "memory" / "memory_summary.parquet")
    tables.write(host_analysis.article_table(memory), tabs, "memory",
                 host_analysis.table_caption(memory))  # fmt: skip
    # the Internet vs datacenter decomposition, as its stage writes it (fewer refits)
    cells = latency.load_cells(FIXTURES / "raw", "latency", latency.LATENCY_METRICS)
    per_run = network.per_run_summaries(cells)
    components, effects = network.decompose(per_run, confidence=0.95, n_sim=20, seed=1)
    network.write_outputs(per_run, components, effects,
                          root / "data" / "processed" / "internet_vs_dc")  # fmt: skip
    tables.write(network.article_table(components), tabs, "internet_vs_dc",
                 network.table_caption(components))  # fmt: skip
    (tabs / "internet_vs_dc_answer.md").write_text(
        network.answer(components, network.path_effects(per_run)) + "\n")
    density = pd.read_parquet(FIXTURES / "processed" / "footprint" / "density_summary.parquet")
    tables.write(footprint.density_table(density), tabs, "density",
                 footprint.density_caption(density))  # fmt: skip
    # the article again, with the Internet vs datacenter section
    article.build(root / "data" / "processed", root / "data" / "raw", tabs, root / "figures",
                  root / "reports", MARGINS, 0.95, root=root)  # fmt: skip
    return root


def test_no_table_prints_an_estimate_outside_its_interval(tree):
    files = sorted((tree / "reports" / "tables").glob("*.csv"))
    assert {p.stem for p in files} >= {"throughput", "latency", "cpu", "coldstart", "lb",
                                       "footprint", "memory", "density", "replication",
                                       "internet_vs_dc"}
    printed = 0
    for path in files:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        for column in frame.columns:
            for cell in frame[column]:
                printed += len(PRINTED.findall(cell))
                assert outside(cell) == [], (path.name, column, cell)
        for point, lo, hi in triplets(frame.columns):  # an estimate and its ends as columns
            values = frame[[point, lo, hi]].apply(pd.to_numeric, errors="coerce").dropna()
            bad = values[(values[point] < values[lo]) | (values[point] > values[hi])]
            assert bad.empty, (path.name, point, bad)
    assert printed > 200  # the check reads the tables' intervals, it is not vacuous


def triplets(columns) -> list[tuple[str, str, str]]:
    """(estimate, lo, hi) column names: ``x``, ``x_lo``, ``x_hi`` or ``estimate``, ``lo``,
    ``hi``."""
    names = set(columns)
    out = [(c, f"{c}_lo", f"{c}_hi") for c in columns if {f"{c}_lo", f"{c}_hi"} <= names]
    return out + ([("estimate", "lo", "hi")] if {"estimate", "lo", "hi"} <= names else [])


def test_triplet_columns_are_read():
    assert triplets(["ratio", "ratio_lo", "ratio_hi", "n"]) == [("ratio", "ratio_lo", "ratio_hi")]
    assert triplets(["estimate", "lo", "hi"]) == [("estimate", "lo", "hi")]


def test_no_number_of_the_article_lies_outside_its_interval(tree):
    numbers = json.loads((tree / "reports" / "numbers.json").read_text(encoding="utf-8"))
    with_interval = {k: v for k, v in numbers.items() if v["interval"]}
    assert len(with_interval) > 100
    for key, entry in with_interval.items():
        lo, hi = entry["interval"]
        slack = 1e-9 * max(1.0, abs(entry["value"]))
        assert lo - slack <= entry["value"] <= hi + slack, (key, entry)
    md = (tree / "reports" / "article.md").read_text(encoding="utf-8")
    assert "## Internet vs datacenter" in md
    assert len(PRINTED.findall(md)) > 300
    assert outside(md) == []
    answer = (tree / "reports" / "tables" / "internet_vs_dc_answer.md").read_text()
    assert len(PRINTED.findall(answer)) >= 12 and outside(answer) == []
    assert answer.split("\n\n")[1] in md  # the section's table is the answer


def test_an_interval_above_its_own_estimate_is_taken_down_to_the_boundary():
    """The largest difference between modes is a maximum of noisy differences: its bootstrap
    percentile interval can lie wholly above the estimate (the Internet path's "3.2 us [6.1,
    234.9]"). network.decompose's frame then reaches down to 0; an interval that held its
    estimate is left as it was."""
    comps = pd.DataFrame({
        "mode_range": [3.2, 30.0], "mode_range_lo": [6.1, 20.0], "mode_range_hi": [234.9, 40.0],
        "sd_run": [0.0, 1.0], "sd_run_lo": [0.4, 0.5], "sd_run_hi": [9.0, 2.0],
        "max_effect": [-3.2, 5.0], "max_effect_lo": [-2.0, 4.0], "max_effect_hi": [8.0, 6.0],
    })  # fmt: skip
    fixed = network._containing(comps)
    assert fixed.loc[0, ["mode_range_lo", "mode_range_hi"]].tolist() == [0.0, 234.9]
    assert fixed.loc[0, ["sd_run_lo", "sd_run_hi"]].tolist() == [0.0, 9.0]
    assert fixed.loc[0, ["max_effect_lo", "max_effect_hi"]].tolist() == [-3.2, 8.0]
    assert fixed.loc[1].equals(comps.loc[1].astype(float))  # untouched
    for name in ("mode_range", "sd_run", "max_effect"):
        assert (fixed[f"{name}_lo"] <= fixed[name]).all() and (
            fixed[name] <= fixed[f"{name}_hi"]).all()  # fmt: skip
    assert np.isclose(comps.loc[0, "mode_range_lo"], 6.1)  # the input is not modified


def test_a_rise_of_available_memory_is_said_as_one(tmp_path):
    """The density summary holds MemAvailable's drop per container; a negative drop (the demo's
    "-2.55 MiB") is a rise, which resolves no cost: the article writes the signed change, its
    interval in order, and says so; the table calls the column memory taken."""
    import shutil

    from pipeline.analysis.article.sections import _density

    processed = tmp_path / "processed"
    shutil.copytree(FIXTURES / "processed" / "footprint", processed / "footprint")
    path = processed / "footprint" / "density_summary.parquet"
    summary = pd.read_parquet(path)
    bridge = summary["mode"] == "docker-bridge"
    summary.loc[bridge, ["mem_per_container_mib", "mem_per_container_lo_mib",
                         "mem_per_container_hi_mib"]] = [-2.55, -3.1, -1.2]  # fmt: skip
    summary.to_parquet(path, index=False)
    inputs = article.Inputs(processed=processed, raw=tmp_path / "raw", tables=tmp_path / "t",
                            figures=tmp_path / "f", out=tmp_path, margins={}, confidence=0.95,
                            root=tmp_path)  # fmt: skip
    numbers = article.Numbers(root=tmp_path)
    text = "\n".join(_density(inputs, numbers))
    assert "| Docker bridge | 50 [50, 50] (the cap, every run) | +2.55 MiB [+1.20, +3.10], " \
        "no cost resolved |" in text  # fmt: skip
    assert "dropping by -" not in text and outside(text) == []
    entry = numbers.entries["density.lab.docker-bridge.host_memavailable_change_mib_per_container"]
    assert (entry.value, entry.lo, entry.hi) == (2.55, 1.2, 3.1)
    assert "Host memory taken per container MiB [95% CI]" in footprint.density_table(summary)
