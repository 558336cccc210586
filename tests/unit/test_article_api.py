"""The names other modules and tests use from ``pipeline.analysis.article`` stay importable from
it and keep their behaviour: ``Inputs`` built by keyword (and rebuilt from its ``__dict__``),
``Numbers(root=...).entries``, ``_noise`` and ``_instrument`` (Methods paragraphs that name their
tables), ``_placement`` (the duty cycle's CPU placement clause), ``build``, ``format_number``,
``decimals_for``. Small constructed inputs: the modules that produce them are tested elsewhere.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from pipeline.analysis import article

TABLE = "Table: {}.\n\n| a |\n| ---: |\n| 1 |\n"


def _inputs(tmp_path, **changes) -> article.Inputs:
    inputs = article.Inputs(
        processed=tmp_path / "processed", raw=tmp_path / "raw", tables=tmp_path / "tables",
        figures=tmp_path / "figures", out=tmp_path, margins={}, confidence=0.95, root=tmp_path,
    )  # fmt: skip
    return article.Inputs(**{**inputs.__dict__, **changes})


def test_public_names():
    for name in ("Inputs", "Numbers", "Number", "build", "assemble", "format_number",
                 "decimals_for", "to_html", "data_uri", "include", "figure_files", "SECTIONS",
                 "_noise", "_instrument", "_placement", "metrics", "comparisons"):  # fmt: skip
        assert hasattr(article, name), name
    assert article.INCLUDE_END == "<!-- end include -->"


def test_noise_paragraph_states_the_range_and_names_its_table(tmp_path):
    rows = [{"benchmark": "cpu", "environment": "lab", "path": "host", "variant": v,
             "metric": "cpu_events_per_s", "status": "ok", "reason": None,
             "cv_sd_within_pct": cv, "cv_sd_within_lo_pct": cv / 2,
             "cv_sd_within_hi_pct": cv * 2, "confidence": 0.95, "resolvable_pct": res}
            for v, cv, res in (("1thread", 0.41, 1.2), ("allthreads", 1.37, 3.4))]  # fmt: skip
    (tmp_path / "processed" / "noise").mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(tmp_path / "processed" / "noise" / "noise_summary.parquet")
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "noise.md").write_text(TABLE.format("noise"))
    numbers = article.Numbers(root=tmp_path)
    text = "\n\n".join(article._noise(_inputs(tmp_path), numbers))
    assert text.startswith("Noise floor of this machine.")
    assert "cpu 0.41% to 1.37%" in text and "tables/noise.md" in text
    assert "resolves differences of 1.2% (cpu) to 3.4% (cpu)" in text
    assert numbers.entries["noise.cpu.lab.host.1thread.cpu_events_per_s.cv_pct"].value == 0.41


def _noise_row(benchmark: str, path: str, cv: float, resolvable: float) -> dict:
    """A noise_summary row: the SD as % of native's mean with an interval, what it resolves."""
    return {"benchmark": benchmark, "environment": "lab", "path": path, "variant": "v",
            "metric": "m", "status": "ok", "reason": None, "cv_sd_within_pct": cv,
            "cv_sd_within_lo_pct": cv / 2, "cv_sd_within_hi_pct": cv * 2, "confidence": 0.95,
            "resolvable_pct": resolvable}  # fmt: skip


def _noise_summary(tmp_path, rows: list[dict]) -> None:
    (tmp_path / "processed" / "noise").mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(tmp_path / "processed" / "noise" / "noise_summary.parquet")


def test_noise_paragraph_leaves_out_a_benchmark_far_from_natives_level(tmp_path):
    """Cold start's modes run at 14x native's p50 in the fixture: its noise model's SD over
    native's mean (and the "resolvable" built on it) is no relative noise, and is not quoted."""
    import shutil
    from pathlib import Path

    fixture = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "processed"
    shutil.copytree(fixture / "coldstart", tmp_path / "processed" / "coldstart")
    _noise_summary(tmp_path, [_noise_row("cpu", "host", 0.41, 1.2),
                              _noise_row("coldstart", "host", 812.0, 34262.6)])  # fmt: skip
    numbers = article.Numbers(root=tmp_path)
    text = "\n\n".join(article._noise(_inputs(tmp_path), numbers))
    assert "34,262.6" not in text and "812" not in text
    assert "resolves differences of 1.2% (cpu); a smaller" in text
    assert "Left out: coldstart (a mode at 14.0x native)" in text


def test_noise_paragraph_leaves_out_the_internet_path_judged_in_microseconds(tmp_path):
    """Latency's Internet path: a 40 ms round trip's jitter over native's mean is no relative
    noise of a ratio (its comparisons are on added microseconds), so neither its SD nor the
    difference "resolved" from it is quoted; the datacenter path's are."""
    _noise_summary(tmp_path, [_noise_row("latency", "dc", 0.47, 1.5),
                              _noise_row("latency", "internet", 57.59, 1127.1)])  # fmt: skip
    text = "\n\n".join(article._noise(_inputs(tmp_path), article.Numbers(root=tmp_path)))
    assert "latency 0.47%" in text and "57.59" not in text and "1,127.1" not in text
    assert "The Internet path (latency) is left out" in text
    assert "resolves differences of 1.5% (latency); a smaller" in text


def test_instrument_paragraph_and_its_tables(tmp_path):
    directory = tmp_path / "processed" / "instrument"
    directory.mkdir(parents=True)
    rate = {"comparisons": 12, "equivalent": 10, "inconclusive": 2, "false_differences": 0,
            "false_difference_rate": 0.0}  # fmt: skip
    (directory / "instrument_rate.json").write_text(json.dumps(rate))
    injected = [{"environment": "lab", "control": "native-cpuquota", "variant": "1thread",
                 "injected": "CFS quota 0.5 CPU", "expected": 0.5, "unit": "ratio",
                 "recovered": 0.501, "recovered_lo": 0.49, "recovered_hi": 0.51, "coverage": 0.95,
                 "interval_kind": "cluster bootstrap", "recovered_within": True,
                 "error_pct": 0.2}]  # fmt: skip
    pd.DataFrame(injected).to_parquet(directory / "instrument_injected_summary.parquet")
    (tmp_path / "tables").mkdir()
    for stem in ("instrument_aa", "instrument_injected"):
        (tmp_path / "tables" / f"{stem}.md").write_text(TABLE.format(stem))
    inputs = _inputs(tmp_path, margins={"cpu": 0.02})
    numbers = article.Numbers(root=tmp_path)
    text = "\n\n".join(article._instrument(inputs, numbers))
    assert "gave 12 comparisons" in text and "(false-difference rate 0.0%)" in text
    # a table row per injected overhead: expected, recovered with its interval, the error
    assert "| CFS quota 0.5 CPU (`1thread`) | 0.500 ratio | 0.501 [0.490, 0.510] ratio | " in text
    assert text.count("| yes |") == 1 and "| Expected inside the interval |" in text
    assert "instrument_aa.md" in text and "instrument_injected.md" in text
    assert numbers.entries["instrument.injected.lab.native-cpuquota.1thread.recovered"].value \
        == pytest.approx(0.501)  # fmt: skip
    empty = _inputs(tmp_path, processed=tmp_path / "none")
    assert "not measured" in article._instrument(empty, article.Numbers(root=tmp_path))[0]


def test_placement_clause():
    split = {"placement": "split", "cpus": {"node1": "0", "dc-client": "1"}}
    assert article._placement([split]) == "; servers' hosts on CPU 0, clients' hosts on CPU 1"
    assert article._placement([]) == ""


def test_build_on_nothing_says_so(tmp_path):
    paths = article.build(tmp_path / "p", tmp_path / "r", tmp_path / "t", tmp_path / "f",
                          tmp_path / "out", {"network": 0.05}, root=tmp_path)  # fmt: skip
    md = paths["markdown"].read_text()
    assert md.index("## Summary") < md.index("## Methods") < md.index("## Limitations")
    assert "## Network throughput" not in md  # nothing measured: named once, in Limitations
    assert "| Network throughput | stage `collect-throughput` collects it" in md
    assert "No processed summary carries a verdict against native yet" in md
    assert json.loads(paths["metrics"].read_text()) == {}
    assert paths["html"].read_text().count("<table>") == 1  # Limitations' not-measured table


def test_a_caption_sentence_an_earlier_figure_said_is_left_out_and_pointed_to(tmp_path):
    """Figures drawn alike (the host benchmarks') explain their marks once: a later caption
    keeps its own sentences and points to the figure that said the rest."""
    from pipeline.analysis.article.inputs import REPEATED, figure_blocks

    marks = "Diamonds are medians. Bars are 95% intervals."
    for name, own in (("cpu", "CPU rate per mode."), ("memory", "Memory bandwidth per mode."),
                      ("disk", "Diamonds are medians. Bars are 95% intervals.")):  # fmt: skip
        (tmp_path / "figures" / name).mkdir(parents=True)
        (tmp_path / "figures" / name / f"{name}.svg").write_text("<svg/>")
        caption = own if name == "disk" else f"{own} {marks}"
        (tmp_path / "figures" / name / f"{name}.caption.md").write_text(caption + "\n")
    inputs, numbers = _inputs(tmp_path), article.Numbers(root=tmp_path)
    cpu, memory, disk = (figure_blocks(inputs, numbers, d)[0] for d in ("cpu", "memory", "disk"))
    assert f"CPU rate per mode. {marks}" in cpu and REPEATED not in cpu
    assert "Memory bandwidth per mode. Otherwise read as Figure 1.\n" in memory
    assert f"memory.caption.md{REPEATED} -->" in memory and "Diamonds" not in memory
    assert "**Figure 3.**" in disk and "Read as Figure 1.\n" in disk and "Diamonds" not in disk
