"""pipeline.analysis.tables, pipeline.analysis.figures and the table/figure builders of
throughput_analysis."""

from __future__ import annotations

import json
import struct

import altair as alt
import numpy as np
import pandas as pd
import pytest

from pipeline.analysis import figures, tables
from pipeline.analysis import throughput as ta

# --- tables --------------------------------------------------------------------------------


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Scenario": ["Docker bridge", "a|b", "Swarm ingress"],
            "Impact %": ["-12.9 [-13.3, -12.1]", "50% & more_x", None],
            "Runs": [5, 4, np.nan],
        }
    )


def test_latex_escape_all_specials_once():
    assert tables.latex_escape(r"50% & $x_1$ #{a}~^\ <b>") == (
        r"50\% \& \$x\_1\$ \#\{a\}\textasciitilde{}\textasciicircum{}\textbackslash{} "
        r"\textless{}b\textgreater{}"
    )


def test_markdown_table(frame):
    md = tables.to_markdown(frame, "Caption: what it shows.")
    lines = md.splitlines()
    assert lines[0] == "Table: Caption: what it shows."
    assert lines[1] == ""
    assert lines[2] == "| Scenario | Impact % | Runs |"
    assert lines[3] == "| :--- | :--- | ---: |"  # numbers right-aligned
    assert lines[5] == r"| a\|b | 50% & more_x | 4.0 |"  # a pipe in a cell cannot split it
    assert lines[6] == "| Swarm ingress | n/a | n/a |"
    assert len(lines) == 7


def test_latex_fragment(frame):
    tex = tables.to_latex(frame, "Caption with 95% CI")
    lines = tex.splitlines()
    assert lines[0] == r"% Caption with 95% CI"
    assert lines[1] == r"\begin{tabular}{llr}"
    assert lines[3] == r"Scenario & Impact \% & Runs \\"
    assert r"a|b & 50\% \& more\_x & 4.0 \\" in lines
    assert lines[-1] == r"\end{tabular}"
    assert tex.count(r"\\") == 4  # header + 3 rows


def test_write_round_trips_csv(frame, tmp_path):
    paths = tables.write(frame, tmp_path / "t", "demo", "A caption")
    assert [p.name for p in paths] == ["demo.md", "demo.csv", "demo.tex"]
    back = pd.read_csv(paths[1], keep_default_na=False)
    assert back["Scenario"].tolist() == frame["Scenario"].tolist()
    assert back["Impact %"].tolist()[2] == "n/a"


# --- figures -------------------------------------------------------------------------------

NETWORK_MODES = [
    "native", "docker-host", "docker-bridge", "docker-nat", "docker-proxy", "swarm-overlay",
    "macvlan", "swarm-ingress", "podman", "rootless-docker", "rootless-podman", "pasta",
    "swarm-overlay-mtu",
]  # fmt: skip


def test_every_mode_has_one_order_and_one_colour():
    assert set(NETWORK_MODES) <= set(figures.MODE_ORDER)
    assert len(figures.MODE_ORDER) == len(set(figures.MODE_ORDER))
    assert set(figures.MODE_ORDER) == set(figures.MODE_COLORS) == set(figures.MODE_LABELS)
    colours = [figures.MODE_COLORS[m] for m in NETWORK_MODES]
    assert len(set(colours)) == len(colours), "two network modes share a colour"
    assert figures.MODE_ORDER[0] == "native"


def test_mode_scale_follows_project_order_and_colours():
    scale = figures.mode_scale(["swarm-overlay", "native", "something-new", "docker-bridge"])
    assert scale.domain == ["native", "docker-bridge", "swarm-overlay", "something-new"]
    assert scale.range == [
        figures.MODE_COLORS["native"],
        figures.MODE_COLORS["docker-bridge"],
        figures.MODE_COLORS["swarm-overlay"],
        figures.UNKNOWN_COLOR,
    ]


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_save_writes_svg_png_spec_and_caption(tmp_path):
    df = pd.DataFrame({"mode": ["native", "docker-bridge"], "gbps": [9.4, 8.2]})
    chart = (
        alt.Chart(df)
        .mark_point()
        .encode(
            x="gbps:Q", y="mode:N", color=alt.Color("mode:N", scale=figures.mode_scale(df["mode"]))
        )
        .properties(width=200, height=80)
    )
    paths = figures.save(chart, tmp_path / "f", "demo", caption="Points: medians.")
    assert [p.name for p in paths] == [
        "demo.svg", "demo.png", "demo.html", "demo.vl.json", "demo.caption.md"]  # fmt: skip
    svg = paths[0].read_text()
    assert svg.startswith("<svg") and "docker-bridge" in svg
    width = float(svg.split('width="', 1)[1].split('"', 1)[0])
    png_w, _ = _png_size(paths[1].read_bytes())
    assert png_w == pytest.approx(2 * width, abs=2)  # rendered at scale 2
    html = paths[2].read_text()
    # the interactive page embeds the same spec (its data, its theme) and renders it with
    # vega-embed, whose tooltip handler shows a mark's tooltip fields on hover
    assert "vegaEmbed" in html and '"docker-bridge"' in html and figures.FONT in html
    spec = json.loads(paths[3].read_text())
    assert spec["config"]["font"] == figures.FONT  # the project theme is in the spec
    assert paths[4].read_text() == "Points: medians.\n"


@pytest.mark.parametrize("lo,hi,width", [
    (0.85, 15.0, 520), (0.95, 1.05, 240), (0.008, 4000.0, 300), (0.1, 1.05, 260),
    (0.5, 60.0, 400), (0.97, 1.03, 200), (1.0e-3, 2.0, 150), (0.9, 1.3, 600)])  # fmt: skip
def test_log_ticks_never_collide_and_keep_one(lo, hi, width):
    ticks = figures.log_ticks(lo, hi, width)
    px = [width * np.log(t / lo) / np.log(hi / lo) for t in ticks]
    assert ticks == sorted(ticks) and all(lo <= t <= hi for t in ticks)
    assert min(np.diff(px), default=np.inf) >= figures.MIN_TICK_GAP_PX
    assert len(ticks) >= 2
    if lo <= 1 <= hi:
        assert 1.0 in ticks  # native's ratio is always labelled


def test_log_ticks_known_answers():
    assert figures.log_ticks(0.5, 60.0, 400) == [0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0]
    assert figures.log_ticks(0.95, 1.05, 240) == [0.95, 0.98, 1.0, 1.02, 1.05]
    assert figures.log_ticks(0.008, 4000.0, 300) == [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
    with pytest.raises(ValueError):
        figures.log_ticks(0.0, 1.0, 100)


def test_log_domain_pads_symmetrically_in_log_units():
    lo, hi = figures.log_domain([0.5, 2.0, np.nan, None, -1.0], pad=0.1)
    assert lo == pytest.approx(0.5 / 4**0.1) and hi == pytest.approx(2.0 * 4**0.1)


def test_outside_interval_finds_an_estimate_outside_its_bar():
    frame = pd.DataFrame({"name": ["in", "below", "above", "edge", "no interval"],
                          "v": [1.0, 0.5, 3.0, 2.0, 1.0], "lo": [0.9, 0.6, 1.0, 2.0, np.nan],
                          "hi": [1.1, 0.7, 2.5, 2.5, np.nan]})  # fmt: skip
    assert figures.outside_interval(frame, "v", "lo", "hi")["name"].tolist() == ["below", "above"]
    text = figures.outside_text(frame, "v", "lo", "hi", lambda r: r["name"])
    assert "below: 0.5 outside [0.6, 0.7]; above: 3 outside [1, 2.5]" in text
    assert figures.outside_text(frame.iloc[[0, 3]], "v", "lo", "hi", str) == ""


# --- throughput table/figure builders on edge cases ----------------------------------------


def _samples(rows):
    return pd.DataFrame(
        [
            {"environment": "lab", "metric": ta.METRIC, "mode": m, "path": p, "run": r,
             "warmup": False, "value": v * 1e9}
            for m, p, r, v in rows
        ]
    )  # fmt: skip


def _runs(rows):
    return pd.DataFrame(
        [{"environment": "lab", "mode": m, "path": p, "run": r, "status": s, "reason": why}
         for m, p, r, s, why in rows]
    )  # fmt: skip


def test_summary_edge_cases_failed_and_no_baseline():
    samples = _samples(
        [("native", "dc", r, 9.0 + r / 100) for r in range(1, 8)]
        + [("docker-bridge", "dc", r, 8.0 + r / 100) for r in range(1, 8)]
        + [("docker-bridge", "internet", r, 0.1) for r in range(1, 8)]
    )
    runs = _runs(
        [("native", "dc", r, "ok", None) for r in range(1, 8)]
        + [("docker-bridge", "dc", r, "ok", None) for r in range(1, 8)]
        + [("docker-bridge", "internet", r, "ok", None) for r in range(1, 8)]
        + [("macvlan", "dc", r, "failed", "failed: parent NIC not found") for r in range(1, 8)]
    )
    s = ta.summarise(samples, runs).set_index(["mode", "path"])
    bridge = s.loc[("docker-bridge", "dc")]
    assert bridge["median_ci_reached"] and bridge["median_coverage"] >= 0.95  # 7 runs suffice
    assert (bridge["median_lo_gbps"], bridge["median_hi_gbps"]) == (8.01, 8.07)
    assert s.loc[("macvlan", "dc"), "status"] == "failed"
    assert s.loc[("macvlan", "dc"), "reason"] == "failed: parent NIC not found"
    internet = s.loc[("docker-bridge", "internet")]
    assert internet["status"] == "ok" and np.isnan(internet["ratio"])
    assert "no native baseline" in internet["reason"]
    table = ta.article_table(s.reset_index())
    assert table.columns.tolist() == [
        "Scenario", "Path", "Throughput Gbit/s [95% CI]", "% of native [95% CI]",
        "Impact % [95% CI]", "Verdict (±5%)", "TOST p", "Runs", "Note",
    ]  # fmt: skip
    # 7 paired runs, bridge 11% below native in each: an overhead; the internet row has no
    # native to compare with, so no verdict.
    assert s.loc[("docker-bridge", "dc"), "verdict"] == "overhead"
    assert pd.isna(s.loc[("docker-bridge", "internet"), "verdict"])
    # Rows: datacenter path first (baseline on top), then internet.
    assert table["Scenario"].tolist()[0] == "Native (host network)"
    assert table["Path"].tolist()[-1] == "internet"
    chart, caption = ta.figure(s.reset_index(), ta.per_run_throughput(samples, runs))
    assert "Not measured: Docker macvlan (failed: parent NIC not found)" in caption
    assert "Too few runs" not in caption and "too few runs" not in caption
    chart.to_dict()  # a valid Vega-Lite spec


def test_scenario_labels():
    assert ta.scenario_label("docker-proxy", "local") == "Docker proxy (localhost)"
    assert ta.scenario_label("swarm-overlay", "dc") == "Swarm overlay (container on another node)"
    assert ta.scenario_label("podman", "internet") == "Podman (rootful) (internet)"
    assert ta.scenario_label("brand-new", "dc") == "brand-new"


def test_percent_of_native_and_its_figure_label_say_when_there_is_no_interval():
    """One paired run: a ratio without an interval reads "(no interval)", never "[nan, nan]";
    native itself is the baseline, a cell without a ratio n/a."""
    from types import SimpleNamespace

    nan = float("nan")

    def row(mode, n_runs, ratio, lo, hi):
        return SimpleNamespace(mode=mode, n_runs=n_runs, ratio=ratio, ratio_lo=lo, ratio_hi=hi)

    two = row("docker-bridge", 2, 0.9712, 0.95, 0.99)
    one = row("docker-bridge", 1, 0.9712, nan, nan)
    native = row("native", 3, 1.0, 1.0, 1.0)
    none = row("macvlan", 0, nan, nan, nan)
    assert tables.percent_of_native(two) == "97.1 [95.0, 99.0]"
    assert tables.percent_of_native(one) == "97.1 (no interval)"
    assert tables.percent_of_native(native) == "100 (baseline)"
    assert tables.percent_of_native(none) is None
    assert tables.percent_text(two) == "97.1% [95.0, 99.0]"
    assert tables.percent_text(one) == "97.1% (no interval)"
    assert (tables.percent_text(native), tables.percent_text(none)) == ("baseline", "n/a")


def test_rows_of_selects_one_cell_and_runs_text_counts_the_missing_runs():
    frame = pd.DataFrame({"mode": ["native", "native", "podman"], "path": ["dc", "local", "dc"],
                          "run": [1, 1, 1]})  # fmt: skip
    assert list(tables.rows_of(frame, mode="native", path="dc").index) == [0]
    assert tables.rows_of(frame, mode="crun").empty
    assert (tables.runs_text(5, 5), tables.runs_text(4, 5)) == ("5", "4 of 5")
