"""What the benchmark figures draw, read from their Vega-Lite specs: no panel without data
(Kubernetes not measured), the equivalence margin's band on every ratio panel whose metric has a
margin, tick labels that cannot collide, the Internet path in milliseconds, and an estimate
outside its own interval named in the caption rather than hidden."""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline.analysis import lb
from pipeline.analysis import throughput as ta
from tests.unit.test_lb_analysis import _data


def _walk(spec):
    """Every (sub)spec of a compound Vega-Lite spec, depth first."""
    yield spec
    for key in ("hconcat", "vconcat", "concat", "layer"):
        for child in spec.get(key, []):
            yield from _walk(child)
    if isinstance(spec.get("spec"), dict):
        yield from _walk(spec["spec"])


# --- load balancing ---------------------------------------------------------------------------


def _swarm_and_unmeasured_kubernetes() -> tuple[pd.DataFrame, pd.DataFrame]:
    direct = [1000.0, 1100.0, 900.0]
    swarm = _data({"direct-r1": direct, "haproxy-r2": [d / 2 for d in direct]})
    why = "Kubernetes is not built on this machine (make kubernetes)"
    k8s = _data({"direct-r1": [None] * 3, "haproxy-r2": [None] * 3},
                status={(v, r): ("skipped", why) for v in ("direct-r1", "haproxy-r2")
                        for r in range(1, 4)}, mode="k8s-pod")  # fmt: skip
    return pd.concat([swarm[0], k8s[0]]), pd.concat([swarm[1], k8s[1]])


def test_lb_draws_no_panel_for_an_orchestrator_never_measured():
    samples, runs = _swarm_and_unmeasured_kubernetes()
    summary = lb.summarise(samples, runs)
    assert lb.shows_modes(summary)  # the table still names both orchestrators
    chart, caption = lb.figure(summary, lb.per_run(samples, runs))
    spec = chart.to_dict()
    assert "hconcat" not in spec and spec["title"].startswith("Docker Swarm")
    assert "One panel per orchestrator" not in caption
    assert "Kubernetes is not built" in caption and "(Kubernetes) with 2 replica(s)" in caption


def test_lb_tooltip_gives_mode_estimate_interval_and_runs():
    samples, runs = _data({"direct-r1": [100.0, 120.0, 110.0], "haproxy-r2": [50.0, 66.0, 55.0]})
    summary = lb.summarise(samples, runs)
    spec = lb.figure(summary, lb.per_run(samples, runs))[0].to_dict()
    tips = [layer["encoding"]["tooltip"] for layer in _walk(spec)
            if layer.get("mark", {}) == {"type": "point", "shape": "diamond", "size": 90,
                                         "filled": True}]  # fmt: skip
    titles = {t.get("title", t["field"]) for t in tips[0]}
    assert {"mode", "balancer", "median req/s", "interval", "runs", "% of direct"} <= titles
    data = [d for rows in spec["datasets"].values() for d in rows]
    row = next(d for d in data if d.get("variant") == "haproxy-r2" and "rps_interval" in d)
    # 3 runs: the median's order-statistic interval is the range of the runs
    assert row["rps_interval"] == "[50, 66]" and row["n_runs"] == 3
    assert row["pct_text"].startswith("51.6% [")  # geometric mean of 50/100, 66/120, 55/110


# --- throughput --------------------------------------------------------------------------------


def _throughput(margin: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = [("native", r, 9.0 + r / 100) for r in range(1, 6)]
    rows += [("docker-bridge", r, 0.9 * (9.0 + r / 100)) for r in range(1, 6)]
    samples = pd.DataFrame([{"environment": "lab", "metric": ta.METRIC, "mode": m, "path": "dc",
                             "run": r, "warmup": False, "value": v * 1e9}
                            for m, r, v in rows])  # fmt: skip
    runs = pd.DataFrame([{"environment": "lab", "mode": m, "path": "dc", "run": r,
                          "status": "ok", "reason": None} for m, r, _ in rows])  # fmt: skip
    return ta.summarise(samples, runs, margin=margin), ta.per_run_throughput(samples, runs)


@pytest.mark.parametrize("margin", [0.05, 0.02])
def test_throughput_ratio_panel_has_its_margin_band(margin):
    summary, per_run = _throughput(margin)
    chart, caption = ta.figure(summary, per_run)
    spec = chart.to_dict()
    ratio_panel = spec["hconcat"][1]
    rects = [layer for layer in _walk(ratio_panel) if layer.get("mark", {}).get("type") == "rect"]
    assert len(rects) == 1
    band = spec["datasets"][rects[0]["data"]["name"]]
    assert band == [{"lo": pytest.approx(1 - margin), "hi": pytest.approx(1 + margin)}]
    assert f"equivalence margin of ±{margin:.0%}" in caption
    # the bridge's ratio is 0.9 in every run: its point and interval, and the hover text
    data = [d for rows in spec["datasets"].values() for d in rows]
    bridge = next(d for d in data if d.get("mode") == "docker-bridge" and "ratio_interval" in d)
    assert bridge["ratio"] == pytest.approx(0.9) and bridge["ratio_interval"] == "[0.900, 0.900]"
    tips = {t.get("title") for layer in _walk(ratio_panel)
            for t in layer.get("encoding", {}).get("tooltip", [])}  # fmt: skip
    assert {"mode", "estimate", "interval", "runs"} <= tips


def test_throughput_caption_names_an_estimate_outside_its_interval():
    summary, per_run = _throughput(0.05)
    broken = summary.copy()
    row = broken.index[broken["mode"] == "docker-bridge"][0]
    broken.loc[row, ["ratio_lo", "ratio_hi"]] = [0.95, 0.97]  # the point (0.9) below its bar
    _, caption = ta.figure(broken, per_run)
    assert "Estimate outside its own interval" in caption
    assert "Docker bridge" in caption.split("Estimate outside its own interval")[1]
    assert "Estimate outside" not in ta.figure(summary, per_run)[1]
