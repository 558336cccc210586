"""The isolation spectrum (pipeline/analysis/spectrum.py) on a small synthetic frame with known
answers: the order and classes of the modes, a mode skipped or never planned, the VM slotted in
from an environment comparison, and every ratio and interval carried through unchanged; then on
the committed fixture summaries."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.analysis import figures, spectrum
from pipeline.data import schema

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures"
CPU_RATIOS = {  # mode -> (ratio, lo, hi, verdict, runs)
    "rootless-podman": (0.96, 0.95, 0.97, "overhead", 5),
    "docker-gvisor": (0.50, 0.45, 0.55, "overhead", 4),
    "docker-bridge": (0.99, 0.985, 0.995, "equivalent", 5),
    "podman": (0.98, 0.97, 0.99, "overhead", 5),
    "docker-crun": (0.995, 0.99, 1.0, "equivalent", 5),
    "rootless-docker": (0.97, 0.96, 0.98, "overhead", 5),
    "docker-nat": (0.90, 0.85, 0.95, "overhead", 5),  # a network mode: not on the spectrum
}


def _row(benchmark, mode, ratio, lo, hi, verdict, runs, *, path="host", variant="1thread",
         statistic=None, environment="lab", higher_is_better=True) -> dict:  # fmt: skip
    key = f"{variant}_{statistic}" if statistic else variant
    return {"benchmark": benchmark, "environment": environment, "mode": mode, "path": path,
            "variant": variant, "statistic": statistic, "metric": key, "ratio": ratio, "lo": lo,
            "hi": hi, "verdict": verdict, "n_runs": runs, "higher_is_better": higher_is_better,
            "confidence": 0.95, "source": f"{benchmark}_summary.parquet"}  # fmt: skip


@pytest.fixture
def found() -> pd.DataFrame:
    rows = [_row("cpu", m, *v) for m, v in CPU_RATIOS.items()]
    # latency: only docker-bridge of the spectrum, a p50 and a p99 (a time: lower is better)
    rows += [_row("latency", "docker-bridge", 1.10, 1.08, 1.12, "overhead", 6, path="dc",
                  variant="tcp", statistic="p50", higher_is_better=False),
             _row("latency", "docker-bridge", 1.20, 1.10, 1.30, "overhead", 6, path="dc",
                  variant="tcp", statistic="p99", higher_is_better=False),
             _row("latency", "docker-host", 1.01, 1.0, 1.02, "equivalent", 6, path="dc",
                  variant="tcp", statistic="p50", higher_is_better=False)]  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture
def vm() -> pd.DataFrame:
    """environments.compare's shape: lab-vm's native against lab's, and an overhead row."""
    base = {"reference": "lab", "environment": "lab-vm", "n_reference": 5, "n_environment": 4,
            "higher_is_better": True, "confidence": 0.95, "source": "environments.parquet"}
    return pd.DataFrame([
        {**base, "benchmark": "cpu", "path": "host", "variant": "1thread",
         "metric": "cpu_events_per_s", "mode": "native", "comparison": "native", "ratio": 0.8,
         "lo": 0.75, "hi": 0.85, "verdict": "overhead"},
        {**base, "benchmark": "latency", "path": "dc", "variant": "tcp", "metric": "p50",
         "mode": "native", "comparison": "native", "ratio": 1.3, "lo": 1.2, "hi": 1.4,
         "verdict": "overhead", "higher_is_better": False},
        {**base, "benchmark": "cpu", "path": "host", "variant": "1thread",
         "metric": "cpu_events_per_s", "mode": "docker-bridge", "comparison": "overhead",
         "ratio": 1.0, "lo": 0.9, "hi": 1.1, "verdict": "inconclusive"},
    ])  # fmt: skip


def test_modes_in_spectrum_order_with_their_classes(found):
    table = spectrum.spectrum(found)
    cpu = table[table["benchmark"] == "cpu"]
    assert list(cpu["mode"]) == ["docker-bridge", "rootless-docker", "docker-crun", "podman",
                                 "rootless-podman", "docker-gvisor"]  # fmt: skip
    assert list(cpu["isolation"]) == ["runc", "runc", "crun", "crun", "crun", "gVisor"]
    assert list(cpu["privilege"]) == ["rootful", "rootless", "rootful", "rootful", "rootless",
                                      "rootful"]  # fmt: skip
    assert list(cpu["rank"]) == [0, 1, 2, 3, 4, 5]
    assert "docker-nat" not in set(table["mode"]) and "docker-host" not in set(table["mode"])
    # benchmarks in the benchmarks' order (latency before cpu), p50 before p99
    assert list(dict.fromkeys(table["benchmark"])) == ["latency", "cpu"]
    assert list(table[table["benchmark"] == "latency"]["metric"]) == ["tcp_p50", "tcp_p99"]


def test_ratios_intervals_and_runs_carried_through_unchanged(found):
    table = spectrum.spectrum(found).set_index("mode")
    cpu = table[table["benchmark"] == "cpu"]
    for mode, (ratio, lo, hi, verdict, runs) in CPU_RATIOS.items():
        if mode == "docker-nat":
            continue
        assert (cpu.loc[mode, "ratio"], cpu.loc[mode, "lo"], cpu.loc[mode, "hi"]) == (
            ratio, lo, hi)  # fmt: skip
        assert cpu.loc[mode, "verdict"] == verdict and cpu.loc[mode, "n_runs"] == runs
    assert (table["reference"] == "lab").all() and table["n_runs_reference"].isna().all()


def test_recorded_runtime_overrides_the_declared_class(found):
    table = spectrum.spectrum(found, runtimes={("lab", "cpu", "podman"): "runc"})
    podman = table[table["mode"] == "podman"].iloc[0]
    assert (podman["isolation"], podman["runtime_recorded"]) == ("runc", "runc")
    # podman on runc now sits with Docker's runc, after rootful docker-bridge (mode order)
    cpu = table[table["benchmark"] == "cpu"]
    assert list(cpu["mode"])[:3] == ["docker-bridge", "podman", "rootless-docker"]


def test_missing_modes_skipped_or_not_planned_and_the_vm(found):
    found = found[found["mode"] != "rootless-docker"]
    table = spectrum.spectrum(found)
    skipped = pd.DataFrame([{"benchmark": "cpu", "environment": "lab",
                             "mode": "rootless-docker", "status": "skipped",
                             "reason": "skipped: no user session"}])  # fmt: skip
    missing = spectrum.not_measured(table, skipped, has_vm=False)
    cpu = missing[missing["benchmark"] == "cpu"].set_index("mode")
    assert set(cpu.index) == {"rootless-docker", spectrum.VM}
    assert cpu.loc["rootless-docker", "status"] == "skipped"
    latency = missing[missing["benchmark"] == "latency"]
    assert set(latency["mode"]) == set(spectrum.SPECTRUM) - {"docker-bridge"} | {spectrum.VM}
    text = spectrum.caption(table, missing)
    assert "Rootless Docker: not in the campaign in latency; skipped in cpu (no user " \
           "session)." in text  # fmt: skip
    assert "VM: not measured (one environment in params.yaml" in text
    # a mode measured nowhere is said once, not per benchmark
    only_latency = spectrum.spectrum(found[found["benchmark"] == "latency"])
    text = spectrum.caption(only_latency, spectrum.not_measured(only_latency, skipped, False))
    assert "Docker bridge, gVisor (runsc): not measured." in text


def test_the_vm_slots_in_after_the_containers_and_its_modes_follow(found, vm):
    inside = pd.DataFrame([_row("cpu", "docker-bridge", 0.9, 0.88, 0.92, "overhead", 4,
                                environment="lab-vm")])  # fmt: skip
    table = spectrum.spectrum(pd.concat([found, inside], ignore_index=True), vm)
    cpu = table[table["benchmark"] == "cpu"]
    assert list(zip(cpu["environment"], cpu["isolation"], strict=True))[-2:] == [
        ("lab-vm", "VM"), ("lab-vm", "runc")]
    row = cpu[cpu["isolation"] == spectrum.VM].iloc[0]
    assert (row["ratio"], row["lo"], row["hi"], row["verdict"]) == (0.8, 0.75, 0.85, "overhead")
    assert (row["n_runs"], row["n_runs_reference"], row["reference"]) == (4, 5, "lab")
    assert row["metric"] == "1thread"  # the summary's key: one metric per variant
    lat = table[(table["benchmark"] == "latency") & (table["isolation"] == spectrum.VM)]
    assert list(lat["metric"]) == ["tcp_p50"] and list(lat["ratio"]) == [1.3]
    # the environment comparison's overhead rows are not the VM
    assert len(table[table["isolation"] == spectrum.VM]) == 2
    labels = [spectrum.position(r, "lab") for r in cpu.to_dict("records")]
    assert labels[-2:] == ["VM: lab-vm's native (against lab's)",
                           "Docker bridge · runc, rootful in lab-vm"]  # fmt: skip
    assert spectrum.not_measured(table, pd.DataFrame(columns=spectrum.MISSING_COLUMNS),
                                 has_vm=True)["mode"].ne(spectrum.VM).all()  # fmt: skip


def _layers(spec: dict) -> dict[str, dict]:
    """The forest plot's layers by what they draw."""
    out = {}
    for layer in spec["spec"]["layer"]:
        mark = layer["mark"]["type"]
        enc = layer["encoding"]
        if mark == "rect":
            out["band"] = layer
        elif mark == "rule":
            out["interval" if "x2" in enc else "one"] = layer
        elif mark == "point":
            out["rootless" if layer["mark"].get("filled") is False else "rootful"] = layer
        elif mark == "text":
            out["numbers"] = layer
    return out


def test_figure_is_one_forest_plot_on_a_shared_log_axis(found, vm):
    table = spectrum.spectrum(found.assign(margin=[0.02] * 7 + [0.05] * 3), vm)
    rows = spectrum.figure_rows(table)
    assert set(rows["metric"]) == {"1thread", "tcp_p50"}  # the p99 stays in the table only
    spec = spectrum.figure(table).to_dict()
    data = spec["datasets"][next(iter(spec["datasets"]))]
    assert len(data) == len(rows) == 9  # latency: bridge, VM; cpu: six modes, VM
    assert spec["facet"]["row"]["sort"] == [
        "round trip p50 (tcp), datacenter: time", "CPU (1thread), on the host: rate"]
    # one x scale for every row: only y (the modes present in a row) is resolved per row
    assert spec["resolve"]["scale"] == {"y": "independent"}
    layers = _layers(spec)
    x = layers["rootful"]["encoding"]["x"]
    assert x["scale"]["type"] == "log"
    lo, hi = x["scale"]["domain"]
    assert lo < 0.45 and hi > 1.4  # gVisor's interval and the VM's latency
    ticks = x["axis"]["values"]
    assert 1.0 in ticks and 0.5 in ticks and all(lo <= t <= hi for t in ticks)
    assert "'×'" in x["axis"]["labelExpr"]
    assert layers["interval"]["encoding"]["x"]["field"] == "lo"
    assert layers["interval"]["encoding"]["x2"]["field"] == "hi"
    assert layers["one"]["encoding"]["x"]["datum"] == 1.0
    gvisor = next(d for d in data if d["colour"] == "docker-gvisor")
    assert (gvisor["ratio"], gvisor["lo"], gvisor["hi"]) == (0.5, 0.45, 0.55)
    assert gvisor["label"] == "0.500× [0.450, 0.550]" and gvisor["runs"] == "4"
    # the margin band: the row's own margin where the verdict is on the ratio
    bands = {(d["panel"], d["margin_lo"], d["margin_hi"]) for d in data if d["colour"] != "VM"}
    assert bands == {("CPU (1thread), on the host: rate", 0.98, 1.02),
                     ("round trip p50 (tcp), datacenter: time", 0.95, 1.05)}  # fmt: skip
    tips = {t.get("title", t["field"]) for t in layers["rootful"]["encoding"]["tooltip"]}
    assert {"mode", "estimate", "interval", "runs"} <= tips
    scale = layers["interval"]["encoding"]["color"]["scale"]
    assert dict(zip(scale["domain"], scale["range"], strict=True))["docker-gvisor"] == \
        figures.MODE_COLORS["docker-gvisor"]  # fmt: skip
    assert dict(zip(scale["domain"], scale["range"], strict=True))[spectrum.VM] == \
        spectrum.VM_COLOR  # fmt: skip


def test_no_margin_band_where_the_verdict_is_not_on_the_ratio(found):
    """The Internet path's verdict is on the added microseconds and cold start has no margin:
    their rows get no band (NaN in the data, filtered out by the band's layer)."""
    internet = found.assign(path="internet", margin=np.nan)
    frame = spectrum._figure_frame(spectrum.spectrum(internet))
    assert frame["margin_lo"].isna().all() and frame["margin_hi"].isna().all()
    band = _layers(spectrum.figure(spectrum.spectrum(internet)).to_dict())["band"]
    assert band["transform"][0] == {"filter": "isValid(datum.margin_lo)"}


def test_an_empty_input_gives_an_empty_table():
    empty = spectrum.spectrum(pd.DataFrame([_row("cpu", "docker-nat", 1, 1, 1, None, 3)]))
    assert empty.empty and list(empty.columns) == spectrum.COLUMNS


def test_fixture_summaries(tmp_path):
    found, skipped, environments = spectrum.load(FIXTURE / "processed")
    assert environments is None
    table = spectrum.spectrum(found, None, spectrum.recorded_runtimes(FIXTURE / "raw"))
    assert len(table) == 30
    assert table.groupby("mode").size().to_dict() == {
        "docker-bridge": 18, "podman": 6, "rootless-docker": 1, "rootless-podman": 5}
    cold = table[table["benchmark"] == "coldstart"].set_index("mode")
    assert list(cold.index) == ["docker-bridge", "rootless-docker", "podman"]
    np.testing.assert_allclose(cold.loc["rootless-docker", ["ratio", "lo", "hi"]].astype(float),
                               [13.999932, 13.949982, 14.050061], rtol=1e-6)  # fmt: skip
    missing = spectrum.not_measured(table, skipped, has_vm=False).set_index(["benchmark", "mode"])
    assert missing.loc[("cpu", "rootless-docker"), "status"] == "skipped"
    assert missing.loc[("coldstart", "rootless-podman"), "status"] == "skipped"
    assert missing.loc[("throughput", "podman"), "status"] == "not in the campaign"


def test_recorded_runtimes_read_the_runs_notes(tmp_path):
    runs = schema.read_dataset(FIXTURE / "raw", "cpu", "runs")
    notes = {"podman": {"oci_runtime": "crun"}, "docker-bridge": {"oci_runtime": "runc"}}
    runs["notes"] = [json.dumps(notes[m]) if m in notes else None for m in runs["mode"]]
    out = tmp_path / "cpu" / "lab"
    out.mkdir(parents=True)
    runs.to_parquet(out / "runs.parquet", index=False)
    assert spectrum.recorded_runtimes(tmp_path) == {("lab", "cpu", "podman"): "crun",
                                                     ("lab", "cpu", "docker-bridge"): "runc"}


def test_article_section_states_registered_numbers(tmp_path):
    import re
    import shutil

    from pipeline.analysis import article, tables

    proc, raw = tmp_path / "data" / "processed", tmp_path / "data" / "raw"
    shutil.copytree(FIXTURE / "processed", proc)
    shutil.copytree(FIXTURE / "raw", raw)
    found, skipped, environments = spectrum.load(proc)
    table = spectrum.spectrum(found, environments, spectrum.recorded_runtimes(raw))
    missing = spectrum.not_measured(table, skipped, environments is not None)
    tables.write_processed({"spectrum": table, "spectrum_not_measured": missing},
                           proc / "spectrum")  # fmt: skip
    tables.write(spectrum.article_table(table), tmp_path / "tables", "spectrum",
                 spectrum.caption(table, missing))  # fmt: skip
    margins = {"network": 0.05, "cpu": 0.02, "memory": 0.02, "disk": 0.02}
    built = article.assemble(proc, raw, tmp_path / "tables", tmp_path / "figures",
                             tmp_path / "reports", margins, root=tmp_path)  # fmt: skip
    text = re.search(r"^## The isolation spectrum\n(.*?)(?=^## )", built.markdown,
                     re.S | re.M).group(1)  # fmt: skip
    numbers = built.numbers.entries
    assert numbers["spectrum.lab.docker-bridge.comparisons"].value == 13
    assert numbers["spectrum.lab.docker-bridge.benchmarks"].value == 6
    assert numbers["spectrum.lab.docker-bridge.n_overhead"].value == 11
    far = numbers["spectrum.lab.rootless-docker.furthest.coldstart.host.nginx_p50.pct_of_native"]
    assert (round(far.value, 2), round(far.lo, 2), round(far.hi, 2)) == (1399.99, 1395.0, 1405.01)
    assert ("| Rootless Docker (`rootless-docker`; runc, rootless) | 1 in 1 | 1 overhead | cold "
            "start p50 (`nginx`) on the host: 1,400% [1,395, 1,405] of native |") in text
    assert ("Not measured in this campaign: Docker bridge, crun runtime (`docker-crun`); Docker "
            "bridge, gVisor (runsc) (`docker-gvisor`); the VM") in text  # fmt: skip
    assert "`reports/tables/spectrum.md`" not in text and "tables/spectrum.md" in text
