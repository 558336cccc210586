"""pipeline.analysis.article on the committed fixture outputs.

The tree the article is assembled from is built in a temporary directory from committed files
only: tests/fixtures/processed (the summaries notebooks 20-22 wrote on the raw fixture),
tests/fixtures/raw (runs and hosts tables), the article tables written from those summaries by
the same functions the summarise notebooks call, a WAN calibration table from a constructed
calibration summary, one campaign.json (duty cycle) and small figure files. Internet vs
datacenter, memory, disk and the replication have no data there, so they must be reported as
not measured; cpu has its fixture summary (a host benchmark), load balancing, cold start,
footprint and orchestration theirs.

The article's shape: a summary first whose findings come from the summaries' verdicts, the
sections with their sentences and figures, Methods, Limitations, and the tables in an appendix
the sections point to; the HTML is markdown-it's rendering of it.

The central check: every number in the article's own prose is a formatted value of some
numbers.json entry. It is implemented here, independently of the module, and shown to fail on
a stray number and on a number whose entry is removed.
"""

from __future__ import annotations

import base64
import json
import math
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from pipeline.analysis import article, calibration, replication, tables
from pipeline.analysis import coldstart as coldstart
from pipeline.analysis import footprint as footprint
from pipeline.analysis import host as host_analysis
from pipeline.analysis import latency as latency
from pipeline.analysis import lb as lb_analysis
from pipeline.analysis import orchestration as orchestration
from pipeline.analysis import throughput as throughput
from pipeline.analysis.article.methods import _interval as read_interval
from pipeline.data.schema import read_dataset

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
MARGINS = {"network": 0.05, "cpu": 0.02, "memory": 0.02, "disk": 0.02}
# A minimal valid PNG (1x1) and SVG: the article embeds files, it does not read images.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n'  # noqa: E501
# A planned campaign whose pilot already met its target but for one comparison out of budget.
PLAN = {"planned": True, "pilot_runs": 3, "target_half_width": 0.2, "rounds": 0, "cells": [
    {"mode": "native", "path": "dc", "variant": "tcp", "runs": 3, "stopped": "baseline"},
    {"mode": "docker-bridge", "path": "dc", "variant": "tcp", "runs": 3, "half_width": 0.1,
     "stopped": "target"},
    {"mode": "docker-nat", "path": "dc", "variant": "tcp", "runs": 3, "half_width": 0.3,
     "stopped": "budget"}]}  # fmt: skip
WAN = {"delay_ms": 20.0, "jitter_ms": 2.0, "jitter_dist": "normal", "loss_pct": 0.0, "seed": 1}
DUTY = {"campaign": "fixture", "duty_cycle": 0.625, "window_s": 150.0, "wall_s": 240.0,
        "deploy_s": 20.0, "stop_s": 10.0, "client_s": 171.0, "client_overhead_s": 21.0,
        "planning": PLAN}  # fmt: skip


def _wan_summary() -> pd.DataFrame:
    rows = []
    for delay, added in ((0.0, 70.0), (20.0, 40123.0)):
        for variant in ("udp", "tcp"):
            for q, extra in ((0.5, 0.0), (0.99, 300.0)):
                expected = 2000 * delay
                rows.append({
                    "delay_ms": delay, "variant": variant, "q": q,
                    "expected_added_us": expected, "added_us": added + extra,
                    "added_lo_us": added + extra - 20, "added_hi_us": added + extra + 25,
                    "excess_us": added + extra - expected,
                    "excess_lo_us": added + extra - 20 - expected,
                    "excess_hi_us": added + extra + 25 - expected, "n_runs": 5,
                })  # fmt: skip
    return pd.DataFrame(rows, columns=calibration.COLUMNS)


def test_a_one_run_calibration_prints_no_interval_and_tests_nothing():
    """One run per delay (the smoke profile's) has no interval: the table and the sentence say
    so instead of printing "[nan, nan]", and no verdict on the configured delay is drawn."""
    wan = _wan_summary()
    wan[[c for c in wan.columns if c.endswith(("_lo_us", "_hi_us"))]] = float("nan")
    wan["n_runs"] = 1
    table = calibration.article_table(wan)
    cells = table["Measured added RTT (us) [95% CI]"].tolist()
    assert all(c.endswith(calibration.NO_INTERVAL) for c in cells) and "nan" not in str(cells)
    text = calibration.sentence(wan)
    assert "nan" not in text and "no test of the difference" in text
    assert "inside the interval" not in text and "the emulator's own cost" not in text
    assert "the emulator's own cost" in calibration.sentence(_wan_summary())  # with intervals
    # the article's methods read the table back: a cell with no interval has NaN bounds
    point, lo, hi = read_interval(cells[0])
    assert point == 70 and math.isnan(lo) and math.isnan(hi)
    assert read_interval("40,123 [40,091, 40,145]") == (40123, 40091, 40145)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return build_tree(tmp_path_factory.mktemp("study"))


def build_tree(root: Path) -> Path:
    """The study tree the article is assembled from, under ``root``, and the article built."""
    # cpu is in (a host benchmark's section); memory stays out: a collected-nowhere benchmark.
    host = shutil.ignore_patterns("memory")
    shutil.copytree(FIXTURES / "processed", root / "data" / "processed", ignore=host)
    shutil.copytree(FIXTURES / "raw", root / "data" / "raw", ignore=host)
    (root / "data" / "raw" / "throughput" / "lab" / "campaign.json").write_text(json.dumps(DUTY))
    # The lab's WAN profile, as a lab campaign records it in the notes of its Internet runs.
    runs_file = root / "data" / "raw" / "latency" / "lab" / "runs.parquet"
    runs = pd.read_parquet(runs_file)
    runs.loc[runs["path"] == "internet", "notes"] = json.dumps({"wan": WAN})
    runs.to_parquet(runs_file, index=False)
    tabs = root / "reports" / "tables"
    proc = root / "data" / "processed"
    tp = pd.read_parquet(proc / "throughput" / "throughput_summary.parquet")
    tables.write(throughput.article_table(tp), tabs, "throughput", throughput.table_caption(tp))
    udp = pd.read_parquet(proc / "throughput" / "throughput_udp_summary.parquet")
    tables.write(
        throughput.udp_article_table(udp), tabs, "throughput_udp", throughput.udp_table_caption(udp)
    )
    for name, what in (("latency", "Round-trip time"), ("http", "HTTP request latency")):
        s = pd.read_parquet(proc / name / f"{name}_summary.parquet")
        tables.write(latency.article_table(s), tabs, name, latency.table_caption(s, what))
    cpu = pd.read_parquet(proc / "cpu" / "cpu_summary.parquet")
    tables.write(host_analysis.article_table(cpu), tabs, "cpu", host_analysis.table_caption(cpu))
    cold = pd.read_parquet(proc / "coldstart" / "coldstart_summary.parquet")
    tables.write(coldstart.article_table(cold), tabs, "coldstart", coldstart.table_caption(cold))
    lbs = pd.read_parquet(proc / "lb" / "lb_summary.parquet")
    tables.write(lb_analysis.article_table(lbs), tabs, "lb", lb_analysis.table_caption(lbs))
    fp = pd.read_parquet(proc / "footprint" / "footprint_summary.parquet")
    tables.write(footprint.cost_table(fp), tabs, "footprint", footprint.cost_caption(fp))
    orch = pd.read_parquet(proc / "orchestration" / "orchestration_summary.parquet")
    tables.write(orchestration.article_table(orch), tabs, "orchestration", "Orchestration.")
    wan = _wan_summary()
    tables.write(calibration.article_table(wan), tabs, "wan_calibration", "WAN calibration.")
    (tabs / "wan_calibration_sentence.md").write_text(calibration.sentence(wan) + "\n")
    # The replication stage's table and its input, the published claims
    (root / "data" / "reference").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "reference" / "published.csv", root / "data" / "reference")
    frame = replication.replicate(replication.load_published(ROOT / "data" / "reference" /
                                                             "published.csv"),
                                  replication.load_study(proc), confidence=0.95)  # fmt: skip
    tables.write(replication.article_table(frame), tabs, "replication",
                 replication.table_caption(frame))  # fmt: skip
    # A table no section claims: it must still be in the article, verbatim.
    (tabs / "extra.md").write_text("Table: an extra generated table.\n\n| a |\n| ---: |\n| 1.5 |\n")
    figs = root / "figures"
    (figs / "throughput").mkdir(parents=True)
    (figs / "throughput" / "throughput.svg").write_text(SVG)
    (figs / "throughput" / "throughput.png").write_bytes(PNG)
    (figs / "throughput" / "throughput.caption.md").write_text("Throughput, 95% intervals.\n")
    (figs / "latency").mkdir()
    (figs / "latency" / "latency_ecdf.png").write_bytes(PNG)  # a PNG without its SVG
    article.build(
        proc, root / "data" / "raw", tabs, figs, root / "reports", MARGINS, 0.95, root=root
    )
    return root


@pytest.fixture(scope="module")
def md(tree) -> str:
    return (tree / "reports" / "article.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def numbers(tree) -> dict:
    return json.loads((tree / "reports" / "numbers.json").read_text(encoding="utf-8"))


def _section(md: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", md, re.S | re.M)
    assert match, f"no section {title!r}"
    return match.group(1)


# --- "no number typed by hand" ------------------------------------------------------------

INCLUDE = re.compile(r"<!-- include: [^>]* -->\n.*?\n<!-- end include -->", re.S)
# A number: not glued to a word (p99, overlay2, IPv4) nor inside a dotted version.
NUMBER = re.compile(r"(?<![\w.\-,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w]|\.\d)", re.ASCII)


def _recorded_reasons() -> set[str]:
    """Every reason the fixture's runs tables record, as the article quotes it."""
    out = set()
    for benchmark in ("throughput", "latency", "http", "cpu", "coldstart", "lb", "footprint",
                      "density", "orchestration"):  # fmt: skip
        runs = read_dataset(FIXTURES / "raw", benchmark, "runs")
        out |= {re.sub(r"^(skipped|failed): ", "", r) for r in runs["reason"].dropna()}
    return out


RECORDED = _recorded_reasons()


def prose(md: str) -> str:
    """The article's own text: without verbatim includes, code spans, images, comments and
    quoted reasons, each of which must be a reason the runs tables record."""
    text = INCLUDE.sub("", md)
    for quoted in re.findall(r"“([^”]*)”", text):
        assert quoted in RECORDED, f"quoted text that is no recorded reason: {quoted!r}"
    text = re.sub(r"“[^”]*”", "", text)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)
    return re.sub(r"<!--.*?-->", "", text)


def allowed(numbers: dict) -> set[str]:
    out = set()
    for entry in numbers.values():
        d = entry["decimals"]
        values = [entry["value"], *(entry["interval"] or [])]
        out |= {f"{abs(v):,.{d}f}" for v in values}
    return out


def stray_numbers(md: str, numbers: dict) -> list[str]:
    ok = allowed(numbers)
    return [n for n in NUMBER.findall(prose(md)) if n not in ok]


def test_every_number_in_the_prose_is_in_numbers_json(md, numbers):
    found = NUMBER.findall(prose(md))
    assert len(found) > 100  # the prose does state numbers: the check below is not vacuous
    assert stray_numbers(md, numbers) == []


def test_a_stray_number_is_caught(md, numbers):
    assert "123,456.7" not in allowed(numbers)
    injected = md.replace(
        "## Network throughput\n", "## Network throughput\n\nContainers cost 123,456.7 more.\n"
    )
    assert stray_numbers(injected, numbers) == ["123,456.7"]


def test_a_number_without_its_entry_is_caught(md, numbers):
    key = "throughput.lab.dc.native.median_gbps"
    assert numbers[key]["text"] == "9.41"
    assert "9.41 Gbit/s [9.38, 9.44]" in _section(md, "Network throughput")
    pruned = {k: v for k, v in numbers.items() if k != key}
    assert "9.41" in stray_numbers(md, pruned)


def test_numbers_json_entries(numbers, tree):
    native = numbers["throughput.lab.dc.native.median_gbps"]
    assert native["value"] == pytest.approx(9.41)
    assert native["interval"] == pytest.approx([9.38, 9.44])
    assert native["unit"] == "Gbit/s"
    assert native["source"] == "data/processed/throughput/throughput_summary.parquet"
    assert numbers["methods.margin.network_pct"]["value"] == pytest.approx(5.0)
    assert numbers["methods.equivalence_level_pct"]["text"] == "90"
    assert numbers["methods.throughput.lab.duty_cycle"]["value"] == pytest.approx(0.625)
    assert numbers["methods.throughput.lab.duty_cycle.servers_s"]["value"] == 30.0
    assert numbers["methods.throughput.lab.duty_cycle.client_overhead_s"]["value"] == 21.0
    for key, entry in numbers.items():
        assert entry["text"] == article.format_number(entry["value"], entry["decimals"]), key
        if entry["source"] == "parameters" or entry["source"].startswith("simulation: "):
            continue  # a setting, or a simulated fact checked by the test the source names
        assert (tree / entry["source"]).exists(), (key, entry["source"])


def test_formatting_known_answers():
    assert article.format_number(1234.6, 0) == "1,235"
    assert article.format_number(12.34, 1, signed=True) == "+12.3"
    assert article.format_number(-0.04, 1) == "0.0"
    assert article.format_number(-3.25, 2) == "-3.25"
    assert article.decimals_for(9.41, 9.38, 9.44) == 2
    assert article.decimals_for(41560.2, 41452.0, 41681.0) == 0
    assert article.decimals_for(3) == 0
    assert article.decimals_for(0.0, 0.0, 0.02) == 3


# --- what the sections say -------------------------------------------------------------------


def _main_sentences(md: str) -> list[str]:
    """The sentences of the main text (before the appendix), without included files."""
    body = INCLUDE.sub("", md.split("\n## Appendix: tables\n")[0])
    return [x.strip() for x in re.split(r"(?<=[.:])\s+(?=[A-Z*“-])", body) if x.strip()]


def test_no_verdict_counts_and_no_sentence_twice(md):
    assert not re.search(r"[Vv]erdicts: of the \d+", md)
    assert "container modes compared" not in md
    long = [x for x in _main_sentences(md) if len(x.split()) >= 6]
    assert len(long) > 30
    assert [x for x in set(long) if long.count(x) > 1] == []


SENTENCE = re.compile(r"(?<=\.)\s+(?=[A-Z\"“(])")
BLANK = re.compile(r"[±+-]?\d[\d,]*(?:\.\d+)?%?")
MAIN_TEXT_WORDS = 6_000  # the study article's main text at most; the tables are the appendix


def test_the_main_text_is_short_and_says_nothing_twice_with_other_numbers(md):
    """A sentence that comes back with only its numbers changed belongs in a table."""
    body = INCLUDE.sub("", md.split("\n## Appendix: tables\n")[0])
    assert 500 < len(body.split()) <= MAIN_TEXT_WORDS
    shapes = [BLANK.sub("#", x) for x in _main_sentences(md) if len(x.split()) >= 6]
    assert [x for x in set(shapes) if shapes.count(x) > 1] == []


CAPTION = re.compile(r"<!-- include: [^>]*\.caption\.md -->\n.*?\n<!-- end include -->", re.S)
MARKER = re.compile(r"<!-- (?:include: [^>]*|end include) -->")


def test_generated_prose_says_nothing_twice_with_other_numbers(md):
    """The generated text the sections include (the Internet-vs-datacenter answer, the
    articles confronted, ...) is held to the same rule; a table's rows and a figure's caption,
    which stands beside its figure, are not sentences of the text."""
    body = MARKER.sub("", CAPTION.sub("", md.split("\n## Appendix: tables\n")[0]))
    prose = "\n".join(line for line in body.splitlines() if not line.startswith("|"))
    sentences = [x.strip() for x in re.split(r"(?<=[.:])\s+(?=[A-Z*“-])", prose) if x.strip()]
    shapes = [BLANK.sub("#", x) for x in sentences if len(x.split()) >= 6]
    assert [x for x in set(shapes) if shapes.count(x) > 1] == []


def test_a_sentence_repeated_with_other_numbers_is_caught(md):
    said = next(x for x in _main_sentences(md) if len(BLANK.findall(x)) >= 2
                and x.endswith(".") and x[0].isupper() and len(x.split()) >= 6)
    repeated = md.replace(said, f"{said} {BLANK.sub('7.5', said)}", 1)
    shapes = [BLANK.sub("#", x) for x in _main_sentences(repeated) if len(x.split()) >= 6]
    assert [x for x in set(shapes) if shapes.count(x) > 1] != []


def _block(md: str, name: str) -> tuple[str, bool]:
    """An included file's text in the article, and whether its shared parts were factored."""
    found = re.search(rf"<!-- include: reports/tables/{re.escape(name)}( \([^)]*\))? -->\n"
                      rf"(.*?)\n<!-- end include -->", md, re.S)  # fmt: skip
    assert found, name
    return found.group(2), bool(found.group(1))


def _reason_ids(md: str) -> dict[str, str]:
    rows = re.findall(r"^\| (R\d+) \| “([^”]*)” \|", _section(md, "Limitations"), re.M)
    return {reason: rid for rid, reason in rows}


def test_tables_are_included_as_generated_with_shared_parts_stated_once(md, tree):
    """Each table is in the article: verbatim, or with the caption sentences several tables
    share moved to "How to read the tables" (each stated there once) and each recorded reason
    of its notes replaced by its id in Limitations, where that reason is quoted once."""
    tabs = sorted((tree / "reports" / "tables").glob("*.md"))
    assert {p.stem for p in tabs} >= {"throughput", "latency", "http", "wan_calibration", "extra"}
    how = md.split("### How to read the tables")[1].split("\n### ")[0]
    said = {BLANK.sub("#", x[2:].split(" [numbers of")[0]) for x in how.splitlines()
            if x.startswith("- ")}  # fmt: skip
    assert len(said) >= 4 and len(INCLUDE.findall(how)) == 1
    ids = _reason_ids(md)
    factored = 0
    for path in tabs:
        text = path.read_text().rstrip()
        block, changed = _block(md, path.name)
        if not changed:
            assert block == text, path.name
            continue
        factored += 1
        caption, _, rows = text.partition("\n\n")
        for sentence in SENTENCE.split(caption.removeprefix("Table: ")):
            assert sentence in block or BLANK.sub("#", sentence) in said, (path.name, sentence)
        for reason, rid in ids.items():
            for status in ("skipped: ", "failed: "):
                rows = rows.replace(status + reason, status + rid)
        assert block.endswith(rows), path.name
    assert factored >= 6
    for sentence in said:  # once: in no caption any more
        assert not [b for b in INCLUDE.findall(md.split("## Appendix: tables")[1])
                    if "several tables share" not in b and sentence in BLANK.sub("#", b)], sentence
    # a reason is quoted in Limitations only (the replication's own prose may give it as why a
    # claim has no figure)
    rest = md.replace(_section(md, "Against the articles"), "")
    for reason in ids:
        assert rest.count(reason) == 1, reason
    assert "reports/tables/throughput.md" in _section(md, "Network throughput")
    assert "reports/tables/wan_calibration.md" in _section(md, "Methods")


def test_skipped_and_failed_modes_are_in_the_limitations_with_their_reasons(md):
    limits = _section(md, "Limitations")
    expected = 0
    for benchmark in ("throughput", "latency", "http", "cpu"):
        runs = read_dataset(FIXTURES / "raw", benchmark, "runs")
        for r in runs[runs.status != "ok"].itertuples():
            reason = re.sub(r"^(skipped|failed): ", "", r.reason)
            line = next(
                (x for x in limits.splitlines() if f"`{benchmark}`" in x and f"`{r.mode}`" in x
                 and reason in x), None,
            )  # fmt: skip
            assert line is not None, (benchmark, r.mode, reason)
            assert r.status in line
            expected += 1
    assert expected >= 5  # swarm-ingress skipped in three benchmarks, two failed macvlan runs
    assert "failed in 1 of 5 runs" in limits  # the throughput macvlan failure


def test_missing_benchmarks_are_reported_as_not_measured_once(md):
    headings = re.findall(r"^## (.+)$", md, re.M)
    limits = _section(md, "Limitations")
    for title, stage in (
        ("Memory bandwidth", "`collect-memory` collects it and `summarise-memory` summarises it"),
        ("Disk", "`collect-disk` collects it and `summarise-disk` summarises it"),
        ("Internet vs datacenter", "`compare-internet-datacenter`"),
    ):
        assert title not in headings  # no section that only says it is missing
        line = next(x for x in limits.splitlines() if x.startswith(f"| {title} | "))
        assert stage in line, title
        assert md.count(stage) == 1, stage
    for title in ("Network throughput", "Latency", "HTTP", "CPU"):
        assert "Not measured" not in _section(md, title)
    for title in ("Load balancing", "Cold start and scaling"):
        assert "Not measured" not in _section(md, title).split("Table:")[0]


def test_against_the_articles_follows_the_findings(md):
    from pipeline.analysis.article.against import TITLES

    headings = re.findall(r"^## (.+)$", md, re.M)
    assert headings.index("Swarm orchestration") < headings.index("Against the articles") \
        < headings.index("Methods")  # fmt: skip
    text = _section(md, "Against the articles")
    published = pd.read_csv(ROOT / "data" / "reference" / "published.csv", dtype=str)
    for article_file in set(published["article"]):
        assert f"**{TITLES[article_file]}**" in text, article_file
    assert "The study reproduces" in text or "It contradicts" in text
    assert "Full table in the appendix: `reports/tables/replication.md`." in text


def test_lb_and_coldstart_prose_states_their_fixtures_known_answers(md, numbers):
    """tests/fixtures/make_fixture_coldstart_lb.py: direct-r1 at 20,000 req/s, HAProxy with one
    replica at 45% of it; rootless Docker's p50 20% above Docker's."""
    text = _section(md, "Load balancing")
    direct = numbers["lb.lab.direct-r1.rps"]
    assert direct["value"] == 20000.0 and direct["interval"] == [19600.0, 20400.0]
    assert "One replica dialled directly served 20,000 req/s [19,600, 20,400]" in text
    haproxy = numbers["lb.lab.haproxy-r1.pct_of_direct"]
    assert haproxy["value"] == pytest.approx(45.0, abs=0.1)  # geometric mean of run ratios
    assert f"| HAProxy | {haproxy['value']:.1f}% [" in text
    assert "Swarm VIP" not in text.split("Table:")[0]
    cold = _section(md, "Cold start and scaling")
    plus = numbers["coldstart.lab.rootless-docker.p50_plus_pct_vs_rootful"]
    assert plus["value"] == pytest.approx(20.0, abs=0.7) and plus["interval"][0] < plus["value"]
    assert "Rootless Docker against Docker bridge: +20." in cold
    assert numbers["coldstart.lab.docker-bridge.p50_ms"]["text"] == "138.6"
    assert "reports/tables/coldstart.md" in cold and "reports/tables/lb.md" in text


def test_host_benchmark_prose_states_ratios_with_intervals_and_verdicts(md, numbers):
    """The cpu fixture's known answers (tests/fixtures/make_fixture.py): docker-bridge at 0.97
    of native's rate, rootless-docker skipped, compile time (lower is better) 1.03x."""
    cpu = _section(md, "CPU")
    one = numbers["cpu.lab.1thread.cpu_events_per_s.docker-bridge.pct_of_native"]
    assert one["value"] == pytest.approx(97.0, abs=0.01) and one["interval"][0] < 97.0
    assert "| `1thread` (`cpu_events_per_s`, a rate) | 1,000 events/s [996, 1,004] (6 runs) | " \
        "Docker bridge 97.0% [96.9, 97.1]; " in cpu  # fmt: skip
    assert "| `compile` (`compile_s`, a time) | 60.0 s [59.4, 60.6] (6 runs) |" in cpu
    built = numbers["cpu.lab.compile.compile_s.docker-bridge.pct_of_native"]
    assert built["value"] == pytest.approx(103.0, abs=0.1)
    assert "Rootless Docker" not in cpu.split("Table:")[0]  # skipped: no ratio in the prose
    assert "rootless" in _section(md, "Limitations").lower()


def test_methods(md):
    methods = _section(md, "Methods")
    assert "`6.1.0-fixture-amd64`" in methods and "`26.1.5`" in methods
    assert "network ±5%" in methods and "cpu ±2%" in methods
    assert "the 90% interval" in methods
    # a row per campaign: duty cycle, seconds inside windows and of wall time, the harness's
    # server and client seconds, where its hosts ran (this fixture's record names no placement)
    assert "| `throughput` (`lab`) | 0.62 | 150 | 240 | 30 | 21 | not recorded |" in methods
    assert "Not recorded (no campaign.json): `coldstart` (`lab`), `cpu` (`lab`)" in methods
    assert "`latency` (`lab`)" in methods
    assert ("| `throughput` (`lab`) | 3 | 0 | half-width 0.200 of the log ratio "
            "| 1 budget, 1 target |" in methods)  # fmt: skip
    assert "intervals labelled 95% cover 90-93%" in methods
    assert methods.count("Precision-planned") == 1  # the unplanned latency campaign: nothing
    assert "| 20 ms | UDP | 40,123 us [40,103, 40,148] | 40,000 us | +123 us [+103, +148] |" \
        in methods  # fmt: skip
    # one row per distinct set of host facts, its hosts named together
    assert "| `lab` | `node1` (server), `node2` (server), `dc-client` (dc_client), " \
        "`inet-client` (internet_client) | `6.1.0-fixture-amd64` |" in methods  # fmt: skip
    assert "| `cpu` | 15 | 6 | 6 | 5 to 6 | 5 to 30 |" in methods


def test_html_is_self_contained_with_every_figure_inline(tree, md):
    page = (tree / "reports" / "article.html").read_text(encoding="utf-8")
    figs = tree / "figures"
    svg = base64.b64encode((figs / "throughput" / "throughput.svg").read_bytes()).decode()
    png = base64.b64encode((figs / "latency" / "latency_ecdf.png").read_bytes()).decode()
    assert f"data:image/svg+xml;base64,{svg}" in page
    assert f"data:image/png;base64,{png}" in page
    assert page.count("<img ") == md.count("![") == 2
    assert not re.search(r'src="(?!data:)', page)  # nothing loaded from elsewhere
    separators = re.findall(r"^\|(?: *:?-{3,}:? *\|)+$", md, re.M)
    assert page.count("<table>") == len(separators) >= 7
    assert "<!--" not in page


def test_notebook_is_thin_with_a_literal_parameters_cell():
    import ast

    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / "analysis" / "39-assemble-article.ipynb", 4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1
    names = {}
    for node in ast.parse(params[0].source).body:
        assert isinstance(node, ast.AnnAssign | ast.Assign), ast.dump(node)
        assert isinstance(node.value, ast.Constant), ast.dump(node)  # literals only
        names[node.target.id] = node.value.value
    assert names["margin_network"] == MARGINS["network"] and names["confidence"] == 0.95
    for cell in code:
        tree = ast.parse(cell.source)
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)]
        assert cell.outputs == [] and cell.execution_count is None
    assert "article.build(" in "".join(c.source for c in code)


def test_footprint_and_orchestration_prose_states_their_fixtures_known_answers(md, numbers):
    """tests/fixtures/make_fixture_scaling.py: rootful Docker's engine 90 MiB idle + 3.2 MiB per
    container, rootless Docker 5.0 MiB (1.5625x); Swarm scale to 10 replicas in 2.8 s, scale-50
    capped at 20 replicas; rootless Podman skipped (not in the prose)."""
    text = _section(md, "Engine memory footprint and density")
    per = numbers["footprint.lab.docker-bridge.pss_per_container_mib"]
    assert per["value"] == pytest.approx(3.2) and per["interval"][0] < 3.2 < per["interval"][1]
    assert "| Docker bridge | 90.0 MiB [89.3, 90.7] | 3.20 MiB [3.18, 3.22] | 410 MiB [408, 412] " \
        "| reference |" in text  # fmt: skip
    ratio = numbers["footprint.lab.rootless-docker.per_container_vs_rootful_docker"]
    assert ratio["value"] == pytest.approx(1.5625, rel=1e-5)
    assert "Rootless Podman" not in text.split("Table:")[0]
    assert "a cap of 50 is the profile's, not a limit of the engine" in text
    # the density summary holds MemAvailable's drop (6 MiB a container); the article its change
    assert "| Docker bridge | 50 [50, 50] (the cap, every run) | -6.00 MiB [-6.00, -6.00], " \
        "memory taken |" in text  # fmt: skip
    orch = _section(md, "Swarm orchestration")
    assert numbers["orchestration.lab.scale-10.median_s"]["value"] == pytest.approx(2.8)
    assert "scaling from one replica to 20 replicas (the profile's cap) 4.40 s [4.00, 4.80]" in orch
    assert "reports/tables/footprint.md" in text and "reports/tables/orchestration.md" in orch


# --- the shape of a paper --------------------------------------------------------------------


def _native_comparisons() -> pd.DataFrame:
    """Every comparison with native in the fixture summaries the tree holds, read here from the
    parquet files by their column names (independently of the module): ratio, interval, verdict."""
    rows = []
    specs = [
        ("throughput", "throughput_summary", [""]),
        ("throughput", "throughput_udp_summary", [""]),
        ("latency", "latency_summary", ["_p50", "_p99"]),
        ("http", "http_summary", ["_p50", "_p99"]),
        ("cpu", "cpu_summary", [""]),
        ("coldstart", "coldstart_summary", ["_p50", "_p95", "_p99"]),
    ]
    for directory, name, suffixes in specs:
        s = pd.read_parquet(FIXTURES / "processed" / directory / f"{name}.parquet")
        s = s[(s["baseline"] == "native") & (s["mode"] != "native") & (s["status"] == "ok")]
        for suffix in suffixes:
            verdict = "verdict" + suffix
            for r in s.to_dict("records"):
                if isinstance(r[verdict], str):
                    rows.append({"benchmark": directory, "mode": r["mode"], "path": r["path"],
                                 "ratio": r["ratio" + suffix], "lo": r[f"ratio{suffix}_lo"],
                                 "hi": r[f"ratio{suffix}_hi"], "verdict": r[verdict],
                                 "resolvable": r.get(f"resolvable{suffix}")})  # fmt: skip
    return pd.DataFrame(rows)


def _first_page(md: str) -> str:
    return md[: md.index("\n## ", md.index("## Summary") + 1)]


def test_the_first_page_says_what_was_measured_on_what_and_answers_per_benchmark(md):
    headings = re.findall(r"^## (.+)$", md, re.M)
    assert headings[0] == "Summary"
    order = ["Summary", "Network throughput", "CPU", "Methods", "Limitations", "Appendix: tables"]
    assert [headings.index(h) for h in order] == sorted(headings.index(h) for h in order)
    page = _first_page(md)
    assert len(page.split()) <= 400
    # the machine and the lab as the hosts facts and the runs' notes record them
    assert "4 hosts that are network namespaces of one machine" in page
    assert "2 cores, 4.0 GiB" in page and "virtualisation not recorded" in page
    assert "20 ms added each way (40 ms per round trip), 2 ms jitter" in page
    assert page.count("**What this lab cannot tell.**") == 1
    # answers, not counts of verdicts
    assert not re.search(r"\d+ of the \d+ comparisons", page)
    assert "inconclusive" not in page
    found = _native_comparisons()
    bullets = [x for x in page.splitlines() if x.startswith("- **")]
    assert found["benchmark"].nunique() == 5
    others = {"- **Load balancing**": " (4 replicas): 49.0% [48.8, 49.1] (HAProxy) to 93.0% "
              "[92.7, 93.3] (Swarm DNS round robin (dnsrr)) of one replica's rate dialled "
              "directly.",
              "- **Engine memory footprint and density**": ": Docker's own processes take 90.0 "
              "MiB [89.3, 90.7] idle, 3.20 MiB [3.18, 3.22] per idle container.",
              "- **Swarm orchestration**": ": a service created in 1.20 s [1.10, 1.30], scaled to "
              "10 replicas in 2.80 s [2.60, 3.00]."}  # fmt: skip
    for head, said in others.items():  # no comparison with native: their own known answers
        assert f"{head}{said}" in bullets
    bullets = [x for x in bullets if not x.startswith(tuple(others))]
    assert len(bullets) == 5
    value = r"[+-]?[\d,]+(?:\.\d+)?"
    for bullet in bullets:  # a number, its interval and a unit, twice: the ratio, the difference
        assert re.search(rf"{value}(?:% of|x) native's (?:rate|time) \[{value}, {value}\]",
                         bullet), bullet  # fmt: skip
        assert re.search(rf"{value} [A-Za-z/]+ \[{value}, {value}\]", bullet), bullet
    # cold start's known answer (tests/fixtures/make_fixture_coldstart_lb.py), read from the
    # summary here: Docker bridge 140 / 12 of native's p50, as a multiple and in milliseconds
    cold = pd.read_parquet(FIXTURES / "processed" / "coldstart" / "coldstart_summary.parquet")
    r = cold[cold["mode"] == "docker-bridge"].iloc[0]
    line = next(x for x in bullets if x.startswith("- **Cold start"))
    assert f"Docker bridge {r['ratio_p50']:.1f}x native's time [" in line
    assert f"+{1000 * r['d_p50_s']:.1f} ms [+{1000 * r['d_p50_lo_s']:.1f}, " in line
    # the Internet path is answered by its bound, from the far end of the difference's interval
    latency = next(x for x in bullets if x.startswith("- **Latency"))
    lat = pd.read_parquet(FIXTURES / "processed" / "latency" / "latency_summary.parquet")
    r = lat[(lat["mode"] == "docker-bridge") & (lat["path"] == "internet")
            & (lat["variant"] == "udp")].iloc[0]  # fmt: skip
    assert f"; Internet path +{r['d_p50_us']:.1f} us [" in latency
    assert f"at most {r['d_p50_hi_us']:.1f} us longer at 95%" in latency


def test_equivalent_only_where_the_test_could_fail(md):
    """UDP throughput runs at a fixed offered rate (the runs' commands carry ``-b``): it is no
    answer, and nothing on the first page calls it equivalent."""
    page = _first_page(md)
    assert "No answer from throughput (`udp`): offered rate fixed at 3G" in page
    assert "- **Network throughput** (`tcp`)" in page
    assert "- **Network throughput** (`udp`" not in page
    findings = md.split("### Findings: every comparison with native")[1].split("\n### ")[0]
    rows = [x for x in findings.splitlines() if x.startswith("| ") and "---" not in x][1:]
    assert not [x for x in rows if x.startswith("| throughput | `udp`")]
    found = _native_comparisons()
    udp = len(pd.read_parquet(FIXTURES / "processed" / "throughput" /
                              "throughput_udp_summary.parquet").query(
        "status == 'ok' and mode != 'native'"))  # fmt: skip
    assert len(rows) == len(found) - udp


def test_an_inconclusive_comparison_answers_with_its_bound(md):
    """Every inconclusive row of the findings table quotes the far end of its interval on the
    worse side, computed here from the summaries' columns."""
    findings = md.split("### Findings: every comparison with native")[1].split("\n### ")[0]
    found = _native_comparisons()
    inconclusive = found[(found["verdict"] == "inconclusive") & (found["path"] != "internet")]
    assert len(inconclusive) == 5
    for r in inconclusive.itertuples():  # all of them times: the upper end
        assert f"at most {100 * (r.hi - 1):.1f}% longer at 95%" in findings, r
    assert "inconclusive" not in findings


def _comparison(**changes) -> article.Comparison:
    base = dict(benchmark="cpu", section="cpu", environment="lab", mode="docker-bridge",
                path="host", variant="1thread", statistic=None, key="1thread", ratio=0.998,
                lo=0.967, hi=1.031, verdict="inconclusive", margin=0.02, higher_is_better=True,
                confidence=0.95, source=Path("x.parquet"))  # fmt: skip
    return article.Comparison(**{**base, **changes})


def test_bounds_are_direction_aware():
    from pipeline.analysis.article import answers

    numbers = article.Numbers(root=Path("/"))
    rate = _comparison()
    assert answers.bound(numbers, rate, "t") == "at most 3.3% slower"
    time = _comparison(higher_is_better=False, statistic="p50", key="p50")
    assert answers.bound(numbers, time, "t") == "at most 3.1% longer"
    better = _comparison(lo=1.01, hi=1.05)
    assert answers.bound(numbers, better, "t") == "not slower than native"
    shift = _comparison(higher_is_better=False, statistic="p50", margin_us=100.0, diff=91.07,
                        diff_lo=-75.1, diff_hi=257.24, diff_unit="us", path="internet")
    assert answers.bound(numbers, shift, "t") == "at most 257.2 us longer"
    conf = numbers.add("c", 95, "%", "parameters")
    assert answers.verdict_text(numbers, rate, "t", conf) == "at most 3.3% slower at 95%"
    eq = _comparison(verdict="equivalent")
    assert answers.verdict_text(numbers, eq, "t", conf) == "equivalent within ±2%"
    big = _comparison(ratio=50.2, lo=48.0, hi=52.5, higher_is_better=False, verdict="overhead")
    assert answers.ratio_number(numbers, big, "t")[1] == "50.2x native [48.0, 52.5]"
    assert answers.ratio_number(numbers, rate, "t")[1] == "99.8% of native [96.7, 103.1]"


def test_a_check_profile_says_it_is_no_result(tree):
    proc, tabs = tree / "data" / "processed", tree / "reports" / "tables"
    built = article.assemble(proc, tree / "data" / "raw", tabs, tree / "figures",
                             tree / "reports", MARGINS, 0.95, root=tree,
                             profile="demo")  # fmt: skip
    page = _first_page(built.markdown)
    assert "a **demo**-profile run: a check that the pipeline works end to end" in page
    assert "**not a result**" in page
    assert len(page.split()) <= 400
    study = article.assemble(proc, tree / "data" / "raw", tabs, tree / "figures",
                             tree / "reports", MARGINS, 0.95, root=tree,
                             profile="study")  # fmt: skip
    assert "not a result" not in _first_page(study.markdown)


def test_tables_are_in_the_appendix_and_sections_point_to_them(md):
    appendix = md.split("\n## Appendix: tables\n")[1]
    for stem in ("throughput", "latency", "cpu", "lb", "wan_calibration", "extra"):
        assert f"<!-- include: reports/tables/{stem}.md" in appendix, stem
    body = md.split("\n## Appendix: tables\n")[0]
    # the body's own tables are compact (what would be a sentence per row); no generated table
    # is included there
    assert "<!-- include: reports/tables/throughput.md -->" not in body
    for grid in re.findall(r"(?:^\|.*\|\n)+", body.split("## Methods")[0], re.M):
        assert len(grid.splitlines()) <= 12 and len(grid.splitlines()[0].split("|")) <= 8
    assert "Full tables in the appendix: `reports/tables/throughput.md`, " \
           "`reports/tables/throughput_udp.md`." in _section(md, "Network throughput")  # fmt: skip
    # a generated sentence stays where its section needs it
    assert "<!-- include: reports/tables/wan_calibration_sentence.md -->" in _section(md, "Methods")


def test_the_html_renders_tables_through_markdown_it(tree):
    from markdown_it import MarkdownIt

    page = (tree / "reports" / "article.html").read_text(encoding="utf-8")
    md = (tree / "reports" / "article.md").read_text(encoding="utf-8")
    table = _block(md, "throughput.md")[0]
    rendered = MarkdownIt("commonmark", {"html": False}).enable("table").render(table)
    html_table = rendered[rendered.index("<table>"):]
    assert html_table.strip() in page  # the whole table, cell for cell, as markdown-it renders it
    assert page.count("<thead>") == page.count("<table>") >= 7
    assert '<p class="caption">Table: iperf3 TCP throughput' in page
    assert re.search(r'<img src="data:image/svg\+xml;base64,[^"]+" alt="throughput" '
                     r'id="figure-throughput-throughput" ?/?>', page)  # fmt: skip
    assert '<a href="#figure-throughput-throughput">1</a>' in page  # the summary's link


def test_a_profile_that_measures_less_says_so_first_in_the_limitations(tree):
    said = ["Throughput: native and Docker host and bridge only.",
            "Use the study profile (`dvc exp run -S profile=study`) for every mode."]  # fmt: skip
    proc, tabs = tree / "data" / "processed", tree / "reports" / "tables"
    built = article.assemble(proc, tree / "data" / "raw", tabs, tree / "figures",
                             tree / "reports", MARGINS, 0.95, root=tree, profile="demo",
                             leaves_out=said)  # fmt: skip
    limits = _section(built.markdown, "Limitations")
    assert limits.lstrip().startswith(
        "This run used the **demo** profile (`conf/profiles/demo.yaml`), which measures less "
        "than the study:\n\n- Throughput: native and Docker host and bridge only.\n- Use the "
        "study profile"
    )
    assert "Profile: demo (fewer modes and paths; see Limitations)." in built.markdown
    # a profile that leaves nothing out adds only its name
    full = article.assemble(
        proc, tree / "data" / "raw", tabs, tree / "figures", tree / "reports", MARGINS, 0.95,
        root=tree, profile="study",
    )  # fmt: skip
    assert "Profile: study." in full.markdown and "measures less" not in full.markdown


def test_identical_hosts_outside_the_lab_are_not_called_one_machine(tmp_path):
    """Four servers of one model are several machines: only a lab campaign (its runs record
    the emulated path) or the environment named lab is said to be one machine."""
    from pipeline.analysis.article.summary import _machine

    for env in ("lab", "rack"):
        d = tmp_path / "raw" / "cpu" / env
        d.mkdir(parents=True)
        hosts = pd.read_parquet(FIXTURES / "raw" / "cpu" / "lab" / "hosts.parquet")
        hosts.assign(environment=env).to_parquet(d / "hosts.parquet", index=False)
        runs = pd.read_parquet(FIXTURES / "raw" / "cpu" / "lab" / "runs.parquet")
        runs.assign(environment=env, notes=None).to_parquet(d / "runs.parquet", index=False)
    inputs = article.Inputs(processed=tmp_path / "p", raw=tmp_path / "raw", tables=tmp_path / "t",
                            figures=tmp_path / "f", out=tmp_path, margins={}, confidence=0.95,
                            root=tmp_path)  # fmt: skip
    said, one = _machine(inputs, article.Numbers(root=tmp_path), ["cpu"])
    lab, rack = said
    assert one and "in `lab` on 1 host that is a network namespace of one machine" in lab
    assert "in `rack` on 1 host: 2 cores" in rack and "one machine" not in rack
    only_rack = article.Inputs(**{**inputs.__dict__, "raw": tmp_path / "rack-only"})
    (tmp_path / "rack-only" / "cpu").mkdir(parents=True)
    (tmp_path / "raw" / "cpu" / "rack").rename(tmp_path / "rack-only" / "cpu" / "rack")
    said, one = _machine(only_rack, article.Numbers(root=tmp_path), ["cpu"])
    assert not one and said == [rack.replace("Measured in `rack` on", "Measured on")]


def test_a_placement_that_pins_the_labs_hosts_leaves_them_one_machine(tmp_path):
    """A campaign under a CPU placement records each host with the CPUs it was pinned to (1 of
    the machine's 2), another campaign all 2: still one machine of 2 cores, with its emulated
    path, as a demo on the lab records them."""
    from pipeline.analysis.article.summary import _machine

    for benchmark, cpus in (("cpu", 2), ("latency", 1)):
        d = tmp_path / "raw" / benchmark / "lab"
        d.mkdir(parents=True)
        hosts = pd.read_parquet(FIXTURES / "raw" / "cpu" / "lab" / "hosts.parquet")
        hosts.assign(cpu_count=cpus).to_parquet(d / "hosts.parquet", index=False)
        runs = pd.read_parquet(FIXTURES / "raw" / "cpu" / "lab" / "runs.parquet")
        notes = json.dumps({"wan": {"delay_ms": 20.0, "jitter_ms": 2.0}})
        runs.assign(notes=notes).to_parquet(d / "runs.parquet", index=False)
    inputs = article.Inputs(processed=tmp_path / "p", raw=tmp_path / "raw", tables=tmp_path / "t",
                            figures=tmp_path / "f", out=tmp_path, margins={}, confidence=0.95,
                            root=tmp_path)  # fmt: skip
    said, one = _machine(inputs, article.Numbers(root=tmp_path), ["cpu", "latency"])
    assert one and said[0].startswith("Measured on 1 host that is a network namespace of one "
                                      "machine (the embedded lab")  # fmt: skip
    assert "2 cores" in said[0]
    assert said[1].startswith('Its "Internet" path is emulated there: 20 ms added each way (40 ms')

