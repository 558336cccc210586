"""The comparison engine (pipeline/analysis/engine.py) against the summaries it replaces: on the
committed raw fixture, ``compare(per_run(...))`` gives every comparison with native that
article/comparisons.py finds in the committed processed fixture the same ratio, interval and
verdict (1e-9), and the same minimum detectable effect and loss verdicts as the summary modules
compute today on that raw fixture. Plus known answers of the engine's own rules."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.analysis import coldstart, engine, host, latency, stats, throughput
from pipeline.analysis.article.comparisons import comparisons
from pipeline.data import schema

RAW = "tests/fixtures/raw"
PROCESSED = "tests/fixtures/processed"
MARGINS = engine.margins_of({"network": 0.05, "cpu": 0.02, "memory": 0.02, "disk": 0.02},
                            udp_loss_margin=0.005, internet_margin_us=100.0)  # fmt: skip


@pytest.fixture(scope="module")
def per_run() -> pd.DataFrame:
    return engine.per_run(RAW)


@pytest.fixture(scope="module")
def compared(per_run) -> pd.DataFrame:
    return engine.compare(per_run, MARGINS, 0.95, "holm")


def _one(compared: pd.DataFrame, **where) -> pd.Series:
    sel = compared
    for k, v in where.items():
        sel = sel[sel[k] == v]
    assert len(sel) == 1, where
    return sel.iloc[0]


def _close(a, b) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)))


def test_per_run_frame_has_the_standard_shape(per_run):
    assert list(per_run.columns) == engine.PER_RUN_COLUMNS
    assert not per_run.duplicated(
        ["environment", "benchmark", "mode", "path", "variant", "metric", "statistic", "run"]
    ).any()
    assert set(per_run["benchmark"]) == {"throughput", "latency", "http", "cpu", "memory",
                                         "coldstart"}  # fmt: skip
    # direction: rates up, times and loss down
    hib = per_run.groupby(["benchmark", "metric"])["higher_is_better"].agg(set)
    assert hib[("throughput", "received_gbps")] == {True}
    assert hib[("throughput", "loss_pct")] == {False}
    assert hib[("latency", "udp_rtt")] == {False}
    assert hib[("coldstart", "coldstart_s")] == {False}


def test_per_run_values_are_the_summaries_own(per_run):
    samples, runs = throughput.load(RAW)
    tcp = throughput.per_run_throughput(samples, runs)
    mine = per_run[(per_run["benchmark"] == "throughput") & (per_run["variant"] == "tcp")]
    assert len(mine) == len(tcp)
    np.testing.assert_array_equal(
        mine.sort_values(["mode", "path", "run"])["value"].to_numpy(),
        tcp.sort_values(["mode", "path", "run"])["value"].to_numpy(),
    )
    values = host.per_run(*host.load(RAW, "cpu"))
    mine = per_run[per_run["benchmark"] == "cpu"]
    assert len(mine) == len(values)
    assert mine["value"].sum() == pytest.approx(values["value"].sum(), rel=1e-12)


def test_every_comparison_the_article_reads_is_reproduced(compared):
    found = comparisons(PROCESSED)
    assert len(found) == 77
    for c in found:
        where = dict(environment=c.environment, benchmark=c.benchmark, mode=c.mode, path=c.path,
                     variant=c.variant, statistic=c.statistic or "median", baseline="native")
        if c.benchmark == "throughput":
            where["metric"] = "received_gbps"
        r = _one(compared, **where)
        assert _close(c.ratio, r["estimate"]), (where, c.ratio, r["estimate"])
        assert _close(c.lo, r["lo"]) and _close(c.hi, r["hi"]), where
        assert c.verdict == r["verdict"], where
        assert c.margin is None or _close(c.margin, r["margin"]) or c.margin_us is not None


def test_minimum_detectable_effects_are_the_summaries(compared):
    """The committed processed fixture predates the MDE under each table's rule, so the MDEs
    are checked against the summary modules run on the raw fixture now."""
    samples, runs = throughput.load(RAW)
    tcp = throughput.summarise(samples, runs, 0.95, 0.05, "holm")
    udp = throughput.summarise_udp(samples, runs, 0.95, 0.05, "holm", 0.005)
    for summary, variant in ((tcp, "tcp"), (udp, "udp")):
        for r in summary[summary["verdict"].notna()].itertuples():
            got = _one(compared, benchmark="throughput", variant=variant, mode=r.mode,
                       path=r.path, metric="received_gbps")  # fmt: skip
            assert _close(r.resolvable, got["resolvable"]), (variant, r.mode)
            assert got["multiplicity"] == r.multiplicity
    for r in udp[udp["loss_verdict"].notna()].itertuples():
        got = _one(compared, benchmark="throughput", variant="udp", mode=r.mode, path=r.path,
                   metric="loss_pct")  # fmt: skip
        assert got["scale"] == "shift"
        assert _close(r.loss_shift_pp, got["estimate"])
        assert _close(r.loss_shift_lo_pp, got["lo"]) and _close(r.loss_shift_hi_pp, got["hi"])
        assert r.loss_verdict == got["verdict"]
        assert _close(r.loss_resolvable_pp, got["resolvable"])
    cells = latency.load_cells(RAW, "latency", latency.LATENCY_METRICS)
    lat = latency.summarise(cells, latency.load_runs(RAW, "latency"), internet_margin_us=100.0)
    checked = 0
    for r in lat[lat["verdict_p50"].notna()].to_dict("records"):
        for stat in ("p50", "p99"):
            got = _one(compared, benchmark="latency", mode=r["mode"], path=r["path"],
                       variant=r["variant"], statistic=stat)  # fmt: skip
            assert _close(r[f"resolvable_{stat}"], got["resolvable"]), (r["mode"], stat)
            assert got["multiplicity"] == r["multiplicity"]
            checked += 1
    assert checked == 36  # "holm across 36 comparisons": the table's family is the engine's
    for benchmark in ("cpu", "memory"):
        summary = host.summarise(*host.load(RAW, benchmark), benchmark, 0.95, 0.02, "holm")
        for r in summary[summary["verdict"].notna()].itertuples():
            got = _one(compared, benchmark=benchmark, mode=r.mode, variant=r.variant,
                       metric=r.metric)  # fmt: skip
            assert _close(r.resolvable, got["resolvable"]), (benchmark, r.mode, r.metric)
            assert got["multiplicity"] == r.multiplicity


def test_coldstart_family_holds_the_rootful_twin(compared):
    samples = schema.read_dataset(RAW, "coldstart", "samples")
    runs = schema.read_dataset(RAW, "coldstart", "runs")
    summary = coldstart.summarise(samples, runs)
    twin = summary[summary["rootful_verdict_p50"].notna()].iloc[0]
    got = _one(compared, benchmark="coldstart", mode=twin["mode"], baseline=twin["rootful_mode"],
               statistic="p50")  # fmt: skip
    assert _close(twin["rootful_ratio_p50"], got["estimate"])
    assert twin["rootful_verdict_p50"] == got["verdict"]
    assert got["multiplicity"] == summary["multiplicity"].iloc[0] == "holm across 4 comparisons"
    # no margin for start times: never "equivalent", no TOST
    cold = compared[compared["benchmark"] == "coldstart"]
    assert cold["tost_p"].isna().all()
    assert "equivalent" not in set(cold["verdict"])


def test_bound_is_the_far_end_on_the_worse_side(compared):
    ok = compared[compared["estimate"].notna() & compared["lo"].notna()]
    rate = ok[ok["higher_is_better"]]
    time = ok[~ok["higher_is_better"].astype(bool)]
    assert len(rate) and len(time)
    np.testing.assert_array_equal(rate["bound"], rate["lo"])
    np.testing.assert_array_equal(time["bound"], time["hi"])


def test_a_known_comparison_from_constructed_runs():
    """Four runs, mode = native x (1.02, 0.98, 1.01, 0.99) on a rate: the geometric mean of
    the ratios, its t interval and the TOST verdict at 5%, by hand."""
    ratios = np.array([1.02, 0.98, 1.01, 0.99])
    native = np.array([10.0, 11.0, 9.0, 10.5])
    rows = [{"environment": "e", "benchmark": "cpu", "mode": m, "path": "host", "variant": "v",
             "metric": "events", "statistic": "median", "run": i + 1, "value": v, "unit": "ev/s",
             "higher_is_better": True, "n_samples": 10, "pilot": np.nan}
            for m, vals in (("native", native), ("docker-bridge", native * ratios))
            for i, v in enumerate(vals)]  # fmt: skip
    out = engine.compare(pd.DataFrame(rows), {"cpu": 0.05}, 0.95, "holm")
    r = out.iloc[0]
    d = np.log(ratios)
    half = 3.182446305284263 * d.std(ddof=1) / 2.0  # t(0.975, 3) * sd / sqrt(4)
    assert r["estimate"] == pytest.approx(np.exp(d.mean()), rel=1e-12)
    assert r["lo"] == pytest.approx(np.exp(d.mean() - half), rel=1e-9)
    assert r["hi"] == pytest.approx(np.exp(d.mean() + half), rel=1e-9)
    assert r["verdict"] == "equivalent"  # 90% interval inside [0.95, 1.05]
    assert r["bound"] == r["lo"]
    assert r["diff"] == pytest.approx(float(np.mean(native * ratios - native)), rel=1e-12)
    assert r["multiplicity"] == "holm across 1 comparisons"
    # at a 1% margin the same runs cannot be called equivalent
    tight = engine.compare(pd.DataFrame(rows), {"cpu": 0.01}, 0.95, "holm").iloc[0]
    assert tight["verdict"] == "inconclusive"


def test_a_percentile_a_run_is_too_short_for_is_not_compared():
    need = stats.min_samples(0.99)
    rows = [{"environment": "e", "benchmark": "latency", "mode": m, "path": "dc", "variant": "udp",
             "metric": "udp_rtt", "statistic": "p99", "run": run, "value": 50.0 + run + (m == "x"),
             "unit": "us", "higher_is_better": False, "pilot": np.nan,
             "n_samples": need - 1 if (m, run) == ("x", 2) else need}
            for m in ("native", "x") for run in (1, 2, 3)]  # fmt: skip
    r = engine.compare(pd.DataFrame(rows), MARGINS).iloc[0]
    assert math.isnan(r["estimate"]) and r["verdict"] is None


def test_noise_reads_the_engine_and_covers_every_native_benchmark():
    from pipeline.analysis import noise

    values = noise.per_run_values(RAW)
    # every benchmark the engine declares is the noise model's, syscall among them
    assert {"cpu", "memory", "disk", "syscall", "coldstart"} <= set(engine.MEASURES)
    # cold start: each run's p50 of its measured starts (inverted CDF), as its summary compares
    samples = schema.read_dataset(RAW, "coldstart", "samples")
    runs = schema.read_dataset(RAW, "coldstart", "runs")
    starts = coldstart.measured(coldstart.ok_samples(samples, runs))
    one = starts[(starts["mode"] == "docker-bridge") & (starts["run"] == 1)]["value"]
    mine = values[(values["benchmark"] == "coldstart") & (values["mode"] == "docker-bridge")
                  & (values["run"] == 1)]  # fmt: skip
    assert list(mine["metric"]) == ["p50"]  # p95 and p99: runs too short (stats.min_samples)
    assert float(mine["value"].iloc[0]) == np.quantile(one, 0.5, method="inverted_cdf")
    assert "loss_pct" not in set(values["metric"])  # judged in points, not as a ratio


def test_the_articles_comparisons_from_the_engine_frame(compared):
    """One ``engine.compare`` over every benchmark gives the article the same 77 comparisons,
    keys and numbers as the frames the summary stages wrote, benchmark by benchmark
    (``comparisons``), and as the summaries' own columns: the absolute difference is the
    engine's paired one, which the summaries print for latency, HTTP and cold start (in ms)."""
    from pipeline.analysis.article.comparisons import from_frame

    def ident(c):
        return (c.benchmark, c.section, c.environment, c.mode, c.path, c.variant, c.statistic,
                c.key)  # fmt: skip

    new = {ident(c): c for c in from_frame(compared, "engine")}
    old = {ident(c): c for c in comparisons(PROCESSED)}
    assert set(new) == set(old) and len(new) == 77
    for k, a in old.items():
        b = new[k]
        for field in ("ratio", "lo", "hi", "margin", "margin_us", "confidence"):
            assert _close(getattr(a, field), getattr(b, field)), (k, field)
        assert (a.verdict, a.higher_is_better, a.n_runs) == (b.verdict, b.higher_is_better,
                                                               b.n_runs), k  # fmt: skip
        for field in ("diff", "diff_lo", "diff_hi"):
            assert _close(getattr(a, field), getattr(b, field)), (k, field)
        assert a.diff_unit == b.diff_unit
    # the summaries' own ratio columns state the same comparisons, statistic by statistic
    assert sorted(_summary_ratios()) == sorted(
        (c.section, c.mode, c.path, c.variant, c.statistic, round(c.ratio, 9), round(c.lo, 9),
         round(c.hi, 9), c.verdict) for c in old.values())  # fmt: skip


def _summary_ratios() -> list[tuple]:
    """Every ratio to native a committed summary states (``ratio``, or ``ratio_p50`` ... for
    percentiles), with its interval and verdict: throughput's rows carry no variant (its TCP
    and UDP tables are two files)."""
    out = []
    for path in sorted(Path(PROCESSED).glob("*/*_summary.parquet")):
        frame = pd.read_parquet(path)
        if "baseline" not in frame or not path.stem.startswith(path.parent.name):
            continue
        rows = frame[(frame["baseline"] == "native") & (frame["mode"] != "native")]
        for r in rows[rows["status"] == "ok"].to_dict("records"):
            variant = r.get("variant", "udp" if "udp" in path.stem else "tcp")
            for stat in (None, "p50", "p95", "p99"):
                end = f"_{stat}" if stat else ""
                if pd.notna(r.get(f"ratio{end}", np.nan)):
                    out.append((path.parent.name, r["mode"], r["path"], variant, stat,
                                round(r[f"ratio{end}"], 9), round(r[f"ratio{end}_lo"], 9),
                                round(r[f"ratio{end}_hi"], 9), r[f"verdict{end}"]))  # fmt: skip
    return out


def test_the_spectrum_from_the_engine_frame_is_the_summaries(compared):
    from pipeline.analysis import spectrum

    def table(**kw):
        found, missing, env = spectrum.load(PROCESSED, **kw)
        return spectrum.spectrum(found, env).drop(columns="source")

    pd.testing.assert_frame_equal(table(), table(compared=compared), rtol=1e-9)


def test_a_stein_planned_comparison_gets_the_pilots_interval():
    """Six runs planned from a 3-run pilot: the interval uses the pilot's SD with 2 df
    (``stats.log_ratio_ci``), wider here than the usual t interval on all six runs."""
    ratios = np.array([1.10, 0.90, 1.00, 1.01, 0.99, 1.00])
    rows = [{"environment": "e", "benchmark": "cpu", "mode": m, "path": "host", "variant": "v",
             "metric": "events", "statistic": "median", "run": i + 1,
             "value": 100.0 * (r if m == "x" else 1.0), "unit": "ev/s",
             "higher_is_better": True, "n_samples": 10, "pilot": 3.0 if m == "x" else np.nan}
            for m in ("native", "x") for i, r in enumerate(ratios)]  # fmt: skip
    planned = engine.compare(pd.DataFrame(rows), {"cpu": 0.05}).iloc[0]
    fixed = engine.compare(pd.DataFrame(rows).assign(pilot=np.nan), {"cpu": 0.05}).iloc[0]
    d = np.log(ratios)
    half = 4.302652729911275 * d[:3].std(ddof=1) / np.sqrt(6)  # t(0.975, 2) * s_pilot / sqrt(6)
    assert planned["lo"] == pytest.approx(np.exp(d.mean() - half), rel=1e-9)
    assert planned["hi"] == pytest.approx(np.exp(d.mean() + half), rel=1e-9)
    assert fixed["hi"] - fixed["lo"] < planned["hi"] - planned["lo"]


def _latency_rows(statistic: str, sizes: dict) -> list[dict]:
    """Three paired runs of native and "x" at one statistic; ``sizes``: (mode, run) -> samples
    (else 20,000), "x" 1 us slower in every run."""
    return [{"environment": "e", "benchmark": "latency", "mode": m, "path": "dc",
             "variant": "udp", "metric": "udp_rtt", "statistic": statistic, "run": run,
             "value": 50.0 + run + (m == "x"), "unit": "us", "higher_is_better": False,
             "pilot": np.nan, "n_samples": sizes.get((m, run), 20_000)}
            for m in ("native", "x") for run in (1, 2, 3)]  # fmt: skip


def test_any_percentile_label_is_held_to_its_sample_count():
    """p99.9 needs 10,000 samples per run (10 beyond it: ``stats.min_samples``, not 10,001 from
    0.999 read as 0.9990000000000001); the reason names the shortest paired run, as the
    summaries' ``stats.short_runs_reason`` does."""
    assert stats.min_samples(0.999) == 10_000
    r = engine.compare(pd.DataFrame(_latency_rows("p99.9", {("native", 2): 9_999})),
                       MARGINS).iloc[0]  # fmt: skip
    assert math.isnan(r["estimate"]) and r["verdict"] is None
    assert r["tost_reason"] == ("p99.9 needs 10,000 samples per run (10 beyond it); "
                                "the shortest run has 9,999")  # fmt: skip
    long_enough = engine.compare(pd.DataFrame(_latency_rows("p99.9", {})), MARGINS).iloc[0]
    # +1 us on ~52 us in every run: about 1.9%, inside the 5% network margin
    assert long_enough["diff"] == pytest.approx(1.0) and long_enough["verdict"] == "equivalent"


def test_named_pairs_and_a_side_that_never_ran():
    rows = pd.DataFrame(_latency_rows("p50", {}))
    y = rows[rows["mode"] == "x"].assign(mode="y", value=lambda f: f["value"] + 1.0)
    both = pd.concat([rows, y], ignore_index=True)
    out = engine.compare(both, MARGINS, pairs=[("y", "x"), ("z", "native")])
    assert list(zip(out["mode"], out["baseline"], strict=True)) == [("y", "x")]
    assert out["diff"].iloc[0] == pytest.approx(1.0)
    assert out["multiplicity"].iloc[0] == "holm across 1 comparisons"
    assert engine.compare(both, MARGINS, pairs=[("z", "w")]).empty


def test_the_engine_reads_no_summary_and_every_summary_reads_the_engine():
    """No import cycle: the engine's per-run values come from ``per_run``, whose closure (lazy
    imports included) holds no summary module, and the summaries import the engine itself."""
    from pipeline import imports

    summaries = {f"pipeline.analysis.{m}" for m in
                 ("latency", "throughput", "host", "coldstart", "network")}  # fmt: skip
    assert not imports.closure(["pipeline.analysis.engine"]) & summaries
    for module in summaries - {"pipeline.analysis.network"}:
        assert "pipeline.analysis.engine" in imports.closure([module]), module


HEADLINE = {"latency": {"modes": "docker-host,docker-bridge", "paths": "dc"},
            "cpu": {"modes": "docker-bridge", "variants": "1thread"}}  # fmt: skip


def test_a_profiles_headline_questions_are_adjusted_as_a_family_of_their_own(per_run, compared):
    """The headline comparisons (the quoted statistic of each named mode, path and variant) are
    adjusted among themselves, the rest of the table without them; their minimum detectable
    effect follows the smaller family."""
    asked = engine.compare(per_run, MARGINS, 0.95, "holm", headline=HEADLINE)
    own = asked[asked["family"] == "latency headline"]
    assert sorted(zip(own["mode"], own["variant"], own["statistic"], strict=True)) == [
        (m, v, "p50") for m in ("docker-bridge", "docker-host") for v in ("tcp", "udp")]
    assert set(own["path"]) == {"dc"} and set(own["multiplicity"]) == {
        "holm across 4 headline comparisons"}  # fmt: skip
    np.testing.assert_allclose(own["diff_p_adj"], stats.adjust_p(own["diff_p"].to_numpy(), "holm"))
    rest = asked[asked["family"] == "latency"]
    assert len(rest) == 36 - 4 and set(rest["multiplicity"]) == {"holm across 32 comparisons"}
    # the same tests, each adjusted among fewer: never a larger adjusted p, a smaller MDE
    before = compared.set_index(engine.KEYS[1:] + ["mode"])
    after = asked.set_index(engine.KEYS[1:] + ["mode"])
    latency = after[after.index.get_level_values("benchmark") == "latency"]
    assert (latency["diff_p_adj"] <= before.loc[latency.index, "diff_p_adj"] + 1e-15).all()
    shrunk = own.set_index(engine.KEYS[1:] + ["mode"])
    assert (shrunk["resolvable"] < before.loc[shrunk.index, "resolvable"]).all()
    # the tests themselves are the same
    pd.testing.assert_series_equal(after["diff_p"].sort_index(), before["diff_p"].sort_index())
    cpu = asked[(asked["benchmark"] == "cpu") & (asked["family"] == "cpu headline")]
    assert list(cpu["mode"]) == ["docker-bridge"] and list(cpu["variant"]) == ["1thread"]
    # another benchmark's table is untouched
    same = asked[asked["benchmark"] == "throughput"].reset_index(drop=True)
    pd.testing.assert_frame_equal(same, compared[compared["benchmark"] == "throughput"]
                                  .reset_index(drop=True))  # fmt: skip


def test_the_summaries_adjust_the_headline_questions_as_the_engine_does(compared):
    samples, runs = host.load(RAW, "cpu")
    summary = host.summarise(samples, runs, "cpu", margin=0.02, headline=HEADLINE)
    frame = engine.compare(engine.per_run(RAW, ["cpu"]), {"cpu": 0.02}, 0.95, "holm",
                           headline=HEADLINE)  # fmt: skip
    row = summary[(summary["mode"] == "docker-bridge") & (summary["variant"] == "1thread")]
    mine = frame[(frame["mode"] == "docker-bridge") & (frame["variant"] == "1thread")]
    assert len(row) == len(mine) == 1
    assert row["verdict"].iloc[0] == mine["verdict"].iloc[0]
    assert row["resolvable"].iloc[0] == pytest.approx(mine["resolvable"].iloc[0], rel=1e-12)
    assert summary["multiplicity"].iloc[0] == (
        "holm across 1 headline comparisons; holm across 8 comparisons")
    questions = [c for c in comparisons(PROCESSED) if engine.asks(HEADLINE, c.benchmark, c.mode,
                                                                   c.path, c.variant)]  # fmt: skip
    assert {(c.benchmark, c.mode) for c in questions} >= {("cpu", "docker-bridge")}
