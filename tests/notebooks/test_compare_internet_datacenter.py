"""Run notebooks/analysis/23-compare-internet-datacenter.ipynb with papermill on the committed
fixture and check the decomposition against a mixed model fitted here, independently, with
statsmodels' formula interface on per-run values computed from the parquet files; then that
this run reproduces the checked cells of the executed copy (23-compare-internet-datacenter.fixture.ipynb)."""

from __future__ import annotations

import warnings

import notebook_checks as nc
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import statsmodels.formula.api as smf

NOTEBOOK = nc.ANALYSIS / "23-compare-internet-datacenter.ipynb"
EXECUTED = nc.HERE / "23-compare-internet-datacenter.fixture.ipynb"
LAB = nc.FIXTURE / "latency" / "lab"
CONFIDENCE, N_SIM, SEED = 0.95, 40, 20261121
# make_fixture.py's RUN_OFFSET_US: the run effects put into each path.
RUN_OFFSETS = {
    "dc": [0.0, 2.0, -1.0, 3.0, -2.0, 1.0],
    "internet": [0.0, 1800.0, -1200.0, 2500.0, -600.0, 900.0],
}


executed = nc.executed_fixture("internet_vs_dc", confidence=CONFIDENCE, n_sim=N_SIM, seed=SEED)


@pytest.fixture(scope="module")
def components(executed) -> pd.DataFrame:
    return pd.read_parquet(executed["processed"] / "internet_vs_dc_components.parquet").set_index(
        ["path", "variant", "statistic"]
    )


@pytest.fixture(scope="module")
def per_run() -> pd.DataFrame:
    """Per-run median and p99 from the parquet files, without the pipeline package."""
    samples = pq.read_table(LAB / "samples.parquet").to_pandas()
    runs = pq.read_table(LAB / "runs.parquet").to_pandas()
    ok = runs.loc[runs["status"] == "ok", [*nc.KEYS, "run"]]
    rtt = samples[~samples["warmup"]].merge(ok, on=[*nc.KEYS, "run"])
    rows = []
    for (mode, path, variant, run), part in rtt.groupby(["mode", "path", "variant", "run"]):
        for stat, q in (("p50", 0.5), ("p99", 0.99)):
            value = np.quantile(part["value"], q, method="inverted_cdf")
            rows.append((mode, path, variant, run, stat, value))
    return pd.DataFrame(rows, columns=["mode", "path", "variant", "run", "statistic", "value"])


def _independent_fit(data: pd.DataFrame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = smf.mixedlm(
            "value ~ C(mode, Treatment(reference='native'))", data, groups=data["run"]
        )
        return model.fit(reml=True)


def test_per_run_summaries_match(executed, per_run):
    got = pd.read_parquet(executed["processed"] / "latency_per_run.parquet")
    merged = got.merge(per_run, on=["mode", "path", "variant", "run", "statistic"])
    assert len(merged) == len(got) == len(per_run)
    np.testing.assert_array_equal(merged["value_x"], merged["value_y"])


@pytest.mark.parametrize("path", ["dc", "internet", "local"])
@pytest.mark.parametrize("stat", ["p50", "p99"])
@pytest.mark.parametrize("variant", ["udp", "tcp"])
def test_components_match_an_independent_mixed_model(components, per_run, path, stat, variant):
    data = per_run[
        (per_run["path"] == path) & (per_run["statistic"] == stat) & (per_run["variant"] == variant)
    ]
    fit = _independent_fit(data)
    row = components.loc[(path, variant, stat)]
    assert row["status"] == "ok"
    tol = 1e-3 * max(1.0, float(data["value"].std()))
    assert row["sd_run"] == pytest.approx(np.sqrt(float(fit.cov_re.iloc[0, 0])), abs=tol)
    assert row["sd_resid"] == pytest.approx(np.sqrt(fit.scale), abs=tol)
    effects = np.r_[0.0, fit.fe_params.to_numpy()[1:]]
    assert row["mode_range"] == pytest.approx(effects.max() - effects.min(), abs=tol)
    assert row["n_runs"] == data["run"].nunique() and row["n_modes"] == data["mode"].nunique()


def test_run_effects_are_recovered_and_the_verdict_follows(components):
    # The fixture's run offsets: SD 1.94 us in the datacenter, 1.44 ms over the WAN.
    for path, offsets in RUN_OFFSETS.items():
        truth = np.std(offsets, ddof=1)
        row = components.loc[(path, "udp", "p50")]
        assert row["sd_run"] == pytest.approx(truth, rel=0.25)
    dc, inet = components.loc[("dc", "udp", "p50")], components.loc[("internet", "udp", "p50")]
    assert dc["mode_range"] > 5 * dc["sd_within"]  # swarm-overlay's +25 us stands out
    assert dc["max_effect_mode"] == "swarm-overlay"
    assert dc["max_effect"] == pytest.approx(25.0, abs=1.0)
    assert inet["sd_within"] > 5 * inet["mode_range"]  # the WAN's run-to-run swamps +10 us


def test_the_answer_says_which_is_larger_only_where_the_intervals_part(executed, components):
    text = (executed["tables"] / "internet_vs_dc_answer.md").read_text()
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(components)  # a row per variant, statistic and path
    for r in components.reset_index().itertuples():
        where = {"dc": "datacenter", "local": "localhost", "internet": "Internet"}[r.path]
        word = {"p50": "median", "p99": "p99"}[r.statistic]
        row = next(x for x in rows if x[:3] == [f"| `{r.variant}`", word, where])
        apart = r.mode_range_lo > r.sd_within_hi or r.sd_within_lo > r.mode_range_hi
        which = "modes" if r.mode_range > r.sd_within else "run to run"
        # decided only where the intervals part, for the larger estimate
        assert row[5].startswith(f"{which}, " if apart else f"not resolved ({which} "), (row, r)
    inet = components.loc[("internet", "udp", "p50")]
    assert inet["sd_within_lo"] > inet["mode_range_hi"]  # the WAN's run-to-run swamps +10 us
    native = next(x[6] for x in rows if x[:3] == ["| `udp`", "median", "Internet"])
    assert native.startswith("40.") and "(+40." in native  # the Internet path adds ~40 ms
    table = pd.read_csv(executed["tables"] / "internet_vs_dc.csv", keep_default_na=False)
    assert set(table["Path"]) == {"datacenter", "localhost", "internet"}
    assert table.loc[table["Path"] == "datacenter", "Larger"].str.startswith("modes").all()
    assert table.loc[table["Path"] == "internet", "Larger"].str.contains("run to run").all()


def test_figures_exist(executed):
    for stem in ("internet_vs_dc_components", "internet_vs_dc_runs"):
        assert (executed["figures"] / f"{stem}.svg").read_text().startswith("<svg")
        assert len((executed["figures"] / f"{stem}.png").read_bytes()) > 10_000
        assert (executed["figures"] / f"{stem}.caption.md").stat().st_size > 100


def test_source_notebook_is_clean_and_thin():
    nc.assert_source_clean_and_thin(NOTEBOOK, {*nc.DIR_PARAMETERS, "confidence", "n_sim", "seed"})


# --- the executed copy ------------------------------------------------------------------


def test_executed_copy_matches_source():
    nc.assert_copy_matches_source(NOTEBOOK, EXECUTED, "internet_vs_dc")


def test_executed_copy_has_checked_headline_outputs():
    text = nc.headline_text(EXECUTED, n_cells=2)
    assert "lab internet udp p99: 6 runs x 4 modes, sd_within 1483.5" in text
    assert "lab dc udp p50: 6 runs x 6 modes, sd_within 1.9" in text
    assert ("| `udp` | p99 | Internet | 315.0 us [152.9 us, 769.4 us] "
            "| 1.48 ms [434.6 us, 2.76 ms] | not resolved (run to run 4.7x) |") in text


def test_a_fresh_run_reproduces_the_copys_checked_cells(executed):
    nc.assert_reproduces_copy(executed)
