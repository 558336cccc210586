"""reports/metrics.json, written by ``article.build`` from the committed processed fixture
(tests/fixtures/processed: the summaries and comparison frames notebooks 20-22, 26 and 27
wrote on the raw fixture).

The values are checked against the summaries' own columns and against the generated article
tables' text, and the file against what ``dvc exp show`` needs: one flat level of plain string
keys, JSON numbers only (the verdict as a code whose legend is verdicts.json), a key per
comparison and field.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from dvc.utils.flatten import flatten

from pipeline.analysis import article, throughput
from pipeline.analysis import host as host_analysis

ROOT = Path(__file__).resolve().parents[2]
PROCESSED = ROOT / "tests" / "fixtures" / "processed"
RAW = ROOT / "tests" / "fixtures" / "raw"
MARGINS = {"network": 0.05, "cpu": 0.02, "memory": 0.02, "disk": 0.02}


def _build(tmp: Path, processed: Path = PROCESSED, **kwargs) -> dict[str, Path]:
    return article.build(processed, RAW, tmp / "tables", tmp / "figures", tmp / "reports",
                         MARGINS, 0.95, root=tmp, **kwargs)  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    paths = _build(tmp_path_factory.mktemp("metrics"))
    assert paths["metrics"].name == "metrics.json" and paths["metrics"].parent.name == "reports"
    return paths


@pytest.fixture(scope="module")
def flat(built) -> dict:
    return json.loads(built["metrics"].read_text())


def _tree(flat: dict) -> dict:
    """The flat keys read back as benchmark -> mode -> path -> key -> {field: number}."""
    tree: dict = {}
    for key, value in flat.items():
        benchmark, mode, path, cell, field = key.split(".")
        tree.setdefault(benchmark, {}).setdefault(mode, {}).setdefault(path, {}).setdefault(
            cell, {})[field] = value  # fmt: skip
    return tree


@pytest.fixture(scope="module")
def metrics(flat) -> dict:
    return _tree(flat)


def test_the_file_is_flat_and_numbers_only(flat, built):
    assert len(flat) > 200
    assert flatten(flat) == flat  # nothing left for DVC to flatten: every key is a column
    for key, value in flat.items():
        assert len(key.split(".")) == 5, key
        assert isinstance(value, int | float) and not isinstance(value, bool), key
        assert math.isfinite(value), key
    legend = json.loads(built["verdicts"].read_text())
    assert built["verdicts"].parent == built["metrics"].parent
    codes = {int(k): v for k, v in legend["codes"].items()}
    assert codes == {-1: "faster", 0: "equivalent", 1: "overhead", 2: "inconclusive"}
    assert set(legend["meaning"]) == set(codes.values())
    verdicts = {v for k, v in flat.items() if k.endswith(".verdict")}
    assert verdicts <= set(codes) and {0, 1, 2} <= verdicts


def test_every_leaf_is_a_ratio_with_its_interval_and_verdict(metrics):
    leaves = [leaf for modes in metrics.values() for paths in modes.values()
              for cells in paths.values() for leaf in cells.values()]  # fmt: skip
    assert len(leaves) > 50
    for leaf in leaves:
        assert set(leaf) == {"estimate", "lo", "hi", "verdict"}
        assert leaf["lo"] <= leaf["estimate"] <= leaf["hi"]


def test_only_comparisons_with_native(metrics):
    assert set(metrics) == {"throughput", "latency", "http", "cpu", "memory", "coldstart"}
    # lb (against a directly dialled replica) and footprint (against rootful Docker) are not
    for modes in metrics.values():
        assert "native" not in modes
    assert "swarm-ingress" not in metrics["throughput"]  # skipped: no ratio
    assert set(metrics["throughput"]["docker-proxy"]) == {"local"}


OVERHEAD, INCONCLUSIVE = article.VERDICT_CODES["overhead"], article.VERDICT_CODES["inconclusive"]


def test_values_are_the_summaries_own(metrics):
    tcp = pd.read_parquet(PROCESSED / "throughput" / "throughput_summary.parquet")
    r = tcp[(tcp["mode"] == "docker-bridge") & (tcp["path"] == "dc")].iloc[0]
    assert metrics["throughput"]["docker-bridge"]["dc"]["tcp"] == {
        "estimate": r["ratio"], "lo": r["ratio_lo"], "hi": r["ratio_hi"], "verdict": OVERHEAD}
    udp = pd.read_parquet(PROCESSED / "throughput" / "throughput_udp_summary.parquet")
    r = udp[(udp["mode"] == "docker-proxy")].iloc[0]
    assert metrics["throughput"]["docker-proxy"]["local"]["udp"]["estimate"] == r["ratio"]

    lat = pd.read_parquet(PROCESSED / "latency" / "latency_summary.parquet")
    r = lat[(lat["mode"] == "swarm-overlay") & (lat["variant"] == "udp")].iloc[0]
    p99 = metrics["latency"]["swarm-overlay"]["dc"]["udp_p99"]
    assert (p99["estimate"], p99["lo"], p99["hi"]) == (r["ratio_p99"], r["ratio_p99_lo"],
                                                        r["ratio_p99_hi"])  # fmt: skip
    # the Internet path is judged on the added microseconds: six jittery runs cannot resolve it
    internet = metrics["latency"]["docker-bridge"]["internet"]["tcp_p50"]
    assert internet["verdict"] == INCONCLUSIVE

    assert metrics["http"]["docker-host"]["dc"]["1k_p99"]["verdict"] == INCONCLUSIVE
    assert metrics["http"]["docker-host"]["dc"]["1k_p50"]["verdict"] == OVERHEAD
    compile_ratio = metrics["cpu"]["docker-bridge"]["host"]["compile"]["estimate"]
    assert compile_ratio == pytest.approx(1.03, rel=1e-4)
    assert metrics["memory"]["podman"]["host"]["read"]["verdict"] == INCONCLUSIVE
    cold = metrics["coldstart"]["rootless-docker"]["host"]
    assert set(cold) == {"nginx_p50"}  # 20 starts a run: no p95 (200) or p99 (1,000)
    assert cold["nginx_p50"]["estimate"] == pytest.approx(14.0, abs=1e-3)  # 1.2 x 140 / 12


def test_values_match_the_generated_tables_text(metrics):
    """The article tables print "% of native [95% CI]" at one decimal: the same numbers."""
    tcp = pd.read_parquet(PROCESSED / "throughput" / "throughput_summary.parquet")
    table = throughput.article_table(tcp)
    column = next(c for c in table.columns if c.startswith("% of native"))
    for row, mode, path in zip(table.to_dict("records"), tcp["mode"], tcp["path"], strict=True):
        leaf = metrics["throughput"].get(mode, {}).get(path, {}).get("tcp")
        if leaf is None:
            continue
        pct = [100 * leaf[k] for k in ("estimate", "lo", "hi")]
        assert row[column] == f"{pct[0]:.1f} [{pct[1]:.1f}, {pct[2]:.1f}]", (mode, path)
    cpu = pd.read_parquet(PROCESSED / "cpu" / "cpu_summary.parquet")
    table = host_analysis.article_table(cpu)
    column = next(c for c in table.columns if c.startswith("% of native"))
    checked = 0
    for row, r in zip(table.to_dict("records"), cpu.itertuples(), strict=True):
        leaf = metrics["cpu"].get(r.mode, {}).get("host", {}).get(r.variant)
        if leaf is not None:
            assert row[column].startswith(f"{100 * leaf['estimate']:.1f} ["), (r.mode, r.variant)
            checked += 1
    assert checked == 9


def test_a_comparison_without_a_finite_interval_is_left_out(tmp_path):
    processed = tmp_path / "processed"
    shutil.copytree(PROCESSED / "throughput", processed / "throughput")
    path = processed / "throughput" / "throughput_compared.parquet"
    compared = pd.read_parquet(path)
    compared.loc[compared["mode"] == "docker-nat", "lo"] = float("nan")
    compared.to_parquet(path, index=False)
    out = tmp_path / "elsewhere" / "m.json"
    paths = _build(tmp_path, processed, metrics_file=out)
    assert paths["metrics"] == out
    text = out.read_text()
    assert "NaN" not in text
    assert (out.parent / "verdicts.json").exists()
    tcp = _tree(json.loads(text))["throughput"]
    assert "docker-nat" not in tcp or "tcp" not in tcp["docker-nat"].get("dc", {})
    assert "tcp" in tcp["docker-bridge"]["dc"]


def test_two_environments_are_kept_apart(tmp_path):
    processed = tmp_path / "processed"
    shutil.copytree(PROCESSED / "cpu", processed / "cpu")
    path = processed / "cpu" / "cpu_compared.parquet"
    compared = pd.read_parquet(path)
    other = compared.assign(environment="bare-metal", estimate=compared["estimate"] * 0.5)
    pd.concat([compared, other]).to_parquet(path, index=False)
    found = _tree(article.metrics(article.comparisons(processed)))
    bridge = found["cpu"]["docker-bridge"]
    assert set(bridge) == {"host@lab", "host@bare-metal"}
    assert bridge["host@bare-metal"]["compile"]["estimate"] == pytest.approx(0.515, rel=1e-4)


def test_a_profiles_headline_questions_are_counted_and_named(tmp_path, flat, built):
    """The fixture's comparisons against a headline naming some of them: metrics.json counts
    them and those a test resolved, Methods names them once; without a headline, neither."""
    from pipeline.analysis.article.comparisons import comparisons, questions, resolved

    headline = {"throughput": {"modes": "docker-bridge", "paths": "dc", "variants": "tcp"},
                "cpu": {"modes": "docker-bridge"}, "latency": {"modes": "docker-host"}}
    found = comparisons(PROCESSED, RAW)
    asked = questions(found, headline)
    assert asked and all(c.statistic in (None, "p50") for c in asked)
    assert {c.benchmark for c in asked} <= set(headline)
    assert all(c.mode == "docker-bridge" for c in asked if c.benchmark != "latency")
    assert all((c.path, c.variant) == ("dc", "tcp") for c in asked if c.benchmark == "throughput")
    # what the summaries say, counted independently of questions()
    expected = [c for c in found if c.benchmark == "cpu" and c.mode == "docker-bridge"
                and c.statistic in (None, "p50") and not c.pinned]  # fmt: skip
    assert set(map(id, expected)) <= set(map(id, asked))
    paths = _build(tmp_path, headline=headline)
    got = json.loads(paths["metrics"].read_text())
    assert got["headline.questions"] == len(asked)
    assert got["headline.resolved"] == sum(map(resolved, asked))
    assert 0 < got["headline.resolved"] <= got["headline.questions"]
    text = paths["markdown"].read_text()
    assert text.count("Headline questions: the profile names") == 1
    assert "headline.questions" not in flat  # the committed profile-less build counts none
    assert "Headline questions" not in built["markdown"].read_text()
