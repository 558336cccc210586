"""Cold-start analysis on constructed samples with known answers: per-run percentiles, the rank
interval over runs, pooled percentiles, and the paired overheads (difference, ratio, "+%")."""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.analysis import coldstart as ca
from pipeline.data import schema

# 20 starts per run: 10 ms .. 200 ms in 10 ms steps, so a run's p50 (inverted CDF: the 10th
# of 20) is 100 ms and its p95 (the 19th) 190 ms.
BASE = np.arange(1, 21) * 0.010


def _samples(modes: dict, runs: int = 10, env: str = "lab") -> pd.DataFrame:
    """``modes``: mode -> f(run, base values) -> that run's start times (seconds)."""
    rows = []
    for mode, make in modes.items():
        for run in range(1, runs + 1):
            for i, v in enumerate(make(run, BASE)):
                key = {"environment": env, "mode": mode, "run": run, "sample": i}
                rows.append({**key, "metric": "coldstart_s", "value": float(v), "warmup": False})
            rows.append({**rows[-1], "value": 99.0, "warmup": True})  # never analysed
    return pd.DataFrame(rows)


def test_per_run_percentiles_are_each_runs_own():
    # run r is the base shifted by r ms
    samples = _samples({"native": lambda r, b: b + r / 1000}, runs=3)
    per_run = ca.per_run_percentiles(samples)
    p50 = per_run[per_run["q"] == 0.5].set_index("run")["value"]
    assert p50.to_dict() == pytest.approx({1: 0.101, 2: 0.102, 3: 0.103})
    p95 = per_run[per_run["q"] == 0.95].set_index("run")["value"]
    assert p95.to_dict() == pytest.approx({1: 0.191, 2: 0.192, 3: 0.193})
    assert (per_run["value"] < 1).all()  # the 99 s warm-up starts are left out


def test_a_mode_slower_by_a_constant_shows_that_difference_exactly():
    # docker adds exactly 250 ms to every start, on top of a run-to-run wobble both share
    wobble = {r: (r % 4) / 100 for r in range(1, 11)}
    samples = _samples({
        "native": lambda r, b: b + wobble[r],
        "docker-bridge": lambda r, b: b + wobble[r] + 0.250,
    })  # fmt: skip
    out = ca.overheads(samples)
    assert set(out["mode"]) == {"docker-bridge"} and set(out["baseline"]) == {"native"}
    # 20 starts a run: enough for p50 (20), not for p95 (200) or p99 (1,000)
    tails = out[out["q"] > 0.5]
    assert tails["ratio"].isna().all() and tails["verdict"].isna().all()
    assert tails["reason"].str.contains("starts|samples per run").all()
    for row in out[out["q"] == 0.5].itertuples():
        # paired per-run differences: the shared wobble cancels, every run shows the shift
        assert row.shift == pytest.approx(0.250)
        assert (row.lo, row.hi) == pytest.approx((0.250, 0.250))
        assert row.n_runs == 10
        assert row.verdict == "overhead"  # slower: the interval and the paired t test agree


def test_rootless_plus_percent_against_its_rootful_engine():
    rng = np.random.default_rng(3)
    noise = {r: rng.uniform(0.9, 1.1) for r in range(1, 11)}  # a run's shared slowness
    samples = _samples({
        "native": lambda r, b: b * 0.02 * noise[r],
        "docker-bridge": lambda r, b: b * noise[r],
        "rootless-docker": lambda r, b: b * 1.20 * noise[r],  # +20 %
        "podman": lambda r, b: b * noise[r],
        "rootless-podman": lambda r, b: b * 1.25 * noise[r],  # +25 %
    })  # fmt: skip
    out = ca.overheads(samples)
    rootless = out[out["baseline"] != "native"].set_index(["mode", "q"])
    assert rootless.loc[("rootless-docker", 0.5), "baseline"] == "docker-bridge"
    assert rootless.loc[("rootless-podman", 0.5), "baseline"] == "podman"
    q = 0.5  # the tails need more starts per run than the 20 here
    assert rootless.loc[("rootless-docker", q), "plus_pct"] == pytest.approx(20.0)
    assert rootless.loc[("rootless-docker", q), "plus_pct_lo"] == pytest.approx(20.0)
    assert rootless.loc[("rootless-podman", q), "plus_pct_hi"] == pytest.approx(25.0)
    assert (rootless.xs(0.5, level="q")["verdict"] == "overhead").all()
    vs_native = out[out["baseline"] == "native"].set_index(["mode", "q"])
    assert vs_native.loc[("docker-bridge", 0.5), "ratio"] == pytest.approx(50.0)
    assert len(vs_native) == 4 * len(ca.QUANTILES)


def test_no_margin_for_start_times_so_never_equivalent_and_noise_is_inconclusive():
    rng = np.random.default_rng(5)
    both = {r: rng.uniform(0.95, 1.05) for r in range(1, 11)}
    own = {r: rng.uniform(0.97, 1.03) for r in range(1, 11)}  # podman's own run-to-run noise
    samples = _samples({
        "native": lambda r, b: b * 0.02,
        "docker-bridge": lambda r, b: b * both[r],
        "podman": lambda r, b: b * both[r] * own[r],  # the same engine cost, noisier
    })  # fmt: skip
    out = ca.overheads(samples, [("podman", "docker-bridge")])
    said = set(out["verdict"].dropna())
    assert said == {"inconclusive"}, out[["q", "ratio_lo", "ratio_hi", "verdict"]]
    # two runs: the paired t test cannot run, so not even a clear difference is decided
    two = _samples({"native": lambda r, b: b, "docker-bridge": lambda r, b: b + 0.3}, runs=2)
    assert set(ca.overheads(two)["verdict"].dropna()) == {"inconclusive"}


def test_run_to_run_spread_widens_the_overhead_interval():
    rng = np.random.default_rng(7)
    extra = {r: rng.uniform(0.1, 0.4) for r in range(1, 11)}  # docker's cost varies by run
    samples = _samples({
        "native": lambda r, b: b,
        "docker-bridge": lambda r, b: b + extra[r],
    })  # fmt: skip
    row = ca.overheads(samples, qs=(0.5,)).iloc[0]
    assert row["lo"] < row["shift"] < row["hi"]
    assert row["lo"] >= min(extra.values()) - 1e-12 and row["hi"] <= max(extra.values()) + 1e-12
    assert row["hi"] - row["lo"] > 0.05


def test_unmeasured_pairs_are_left_out():
    samples = _samples({"native": lambda r, b: b, "podman": lambda r, b: b + 0.2}, runs=2)
    out = ca.overheads(samples)
    assert set(zip(out["mode"], out["baseline"], strict=True)) == {("podman", "native")}
    assert ca.overheads(samples[samples["mode"] == "native"]).empty


# --- the summary per mode, on the committed fixture (make_fixture_coldstart_lb.py) ----------

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "tests" / "fixtures" / "raw"


def _generator():
    path = ROOT / "tests" / "fixtures" / "make_fixture_coldstart_lb.py"
    spec = importlib.util.spec_from_file_location("make_fixture_coldstart_lb", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FX = _generator()


@pytest.fixture(scope="module")
def fixture_data():
    samples = schema.read_dataset(RAW, "coldstart", "samples")
    runs = schema.read_dataset(RAW, "coldstart", "runs")
    return samples, runs, ca.summarise(samples, runs).set_index("mode")


def test_the_fixture_is_what_the_generator_writes():
    frames = FX.build_coldstart()
    for table in ("samples", "runs"):
        stored = schema.read_table(RAW / "coldstart" / "lab" / f"{table}.parquet", table)
        fresh = schema.to_table(frames[table], schema.TABLES[table])
        assert stored.equals(fresh), f"coldstart {table}: run make_fixture_coldstart_lb.py"


def test_summary_quantiles_are_the_geometric_mean_of_the_ok_runs_own(fixture_data):
    _, _, summary = fixture_data
    for mode in ("native", "docker-bridge", "podman", "rootless-docker"):
        runs = [r for r in range(1, FX.CS_RUNS + 1) if (mode, r) != FX.CS_FAILED]
        per_run = [np.quantile(FX.cs_starts_ms(mode, r) / 1000, 0.5, method="inverted_cdf")
                   for r in runs]  # fmt: skip
        row = summary.loc[mode]
        assert row["p50_s"] == pytest.approx(np.exp(np.mean(np.log(per_run))), rel=1e-6)
        assert row["p50_lo_s"] <= row["p50_s"] <= row["p50_hi_s"]
        # the fixture's runs have 20 starts: p95 and p99 are not reported
        assert np.isnan(row["p95_s"]) and np.isnan(row["p99_s"])
        assert row["n_runs"] == len(runs) and row["n_starts"] == FX.CS_STARTS * len(runs)
    # 0.99 of the shape, median run factor 1.00: docker-bridge's p50 is 138.6 ms
    assert summary.loc["docker-bridge", "p50_s"] == pytest.approx(0.1386, abs=2e-3)


def test_summary_rootless_plus_percent_is_the_constructed_twenty(fixture_data):
    _, _, summary = fixture_data
    row = summary.loc["rootless-docker"]
    assert row["rootful_mode"] == "docker-bridge" and row["rootful_n_runs"] == FX.CS_RUNS
    # 1.20 x a per-run wobble within ±0.5%
    assert row["rootful_plus_pct_p50"] == pytest.approx(20.0, abs=0.7)
    assert 19.3 <= row["rootful_plus_pct_p50_lo"] <= row["rootful_plus_pct_p50_hi"] <= 20.7
    assert np.isnan(row["rootful_plus_pct_p99"])  # 20 starts a run: no p99
    assert summary.loc["docker-bridge", "ratio_p50"] == pytest.approx(140.0 / 12.0, rel=1e-3)


def test_summary_keeps_skipped_and_failed_with_reasons(fixture_data):
    _, _, summary = fixture_data
    skipped = summary.loc["rootless-podman"]
    assert skipped["status"] == "skipped" and skipped["reason"] == FX.CS_SKIP_REASON
    assert skipped["n_runs"] == 0 and np.isnan(skipped["p50_s"])
    podman = summary.loc["podman"]
    assert podman["n_runs_planned"] == FX.CS_RUNS and FX.CS_FAILED_REASON in podman["reason"]
    table = ca.article_table(summary.reset_index()).set_index("Mode")
    assert table.loc["Rootless Podman", "Note"] == FX.CS_SKIP_REASON
    cell = table.loc["Rootless Docker", "Rootless vs rootful p50 +% [95% CI], verdict"]
    assert cell.startswith("+20.") and cell.endswith(", slower"), cell


def test_smoke_data_gives_no_interval_and_no_exception():
    samples = _samples({"native": lambda r, b: b, "docker-bridge": lambda r, b: b + 0.1}, runs=1)
    runs = samples[["environment", "mode", "run"]].drop_duplicates()
    runs = runs.assign(path="host", variant="nginx", status="ok", reason=None)
    samples = samples.assign(path="host", variant="nginx")
    summary = ca.summarise(samples, runs)
    row = summary.set_index("mode").loc["docker-bridge"]
    assert np.isnan(row["p50_lo_s"]) and row["d_p50_s"] == pytest.approx(0.1)
    assert "one run: no interval" in ca.article_table(summary).iloc[1]["Note"]
    chart, caption = ca.figure(summary, samples, runs)
    assert chart.to_dict() and "t intervals across runs" in caption
