"""The section registry and the limitations on a tree built from the committed fixtures plus:

- a `syscall` host benchmark: its summary and comparison frame are the cpu fixture's relabelled
  as perf's `syscall-basic` and `sched-pipe` (ns and us per operation), with its table and a
  figure;
- a benchmark no section knows (`tracing`): a summary, a comparison frame, a table and a figure;
- a Docker daemon failure that stopped three modes of the throughput campaign in one run, its
  reason recorded as tests/fixtures/article/docker-run-failure.txt (multi-line, with Docker's
  usage hint).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from pipeline.analysis import article, figures, tables
from pipeline.analysis import host as host_analysis
from pipeline.data.schema import read_dataset

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
DOCKER_FAILURE = (FIXTURES / "article" / "docker-run-failure.txt").read_text()
MARGINS = {"network": 0.05, "cpu": 0.02, "memory": 0.02, "disk": 0.02}
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n'  # noqa: E501
STOPPED = ("docker-host", "docker-bridge", "docker-nat")
# perf bench's variants, their metrics and units, standing in for cpu's
SYSCALL = {"1thread": ("syscall-basic", "syscall_ns", "ns"),
           "allthreads": ("sched-pipe", "pipe_roundtrip_us", "us")}  # fmt: skip


def _relabelled(summary: pd.DataFrame, benchmark: str) -> pd.DataFrame:
    out = summary[summary["variant"].isin(SYSCALL)].copy()
    out["benchmark"] = benchmark
    out["metric"] = out["variant"].map(lambda v: SYSCALL[v][1])
    out["unit"] = out["variant"].map(lambda v: SYSCALL[v][2])
    out["variant"] = out["variant"].map(lambda v: SYSCALL[v][0])
    out["higher_is_better"] = False
    return out


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("study")
    proc, raw = root / "data" / "processed", root / "data" / "raw"
    shutil.copytree(FIXTURES / "processed", proc)
    shutil.copytree(FIXTURES / "raw", raw)
    tabs, figs = root / "reports" / "tables", root / "figures"
    cpu = pd.read_parquet(proc / "cpu" / "cpu_summary.parquet")
    cpu_compared = pd.read_parquet(proc / "cpu" / "cpu_compared.parquet")
    for name in ("syscall", "tracing"):
        summary = _relabelled(cpu, name)
        (proc / name).mkdir()
        summary.to_parquet(proc / name / f"{name}_summary.parquet", index=False)
        compared = _relabelled(cpu_compared, name).assign(family=name)
        compared.to_parquet(proc / name / f"{name}_compared.parquet", index=False)
        caption = host_analysis.table_caption(summary)
        tables.write(host_analysis.article_table(summary), tabs, name, caption)
        (figs / name).mkdir(parents=True)
        (figs / name / f"{name}.svg").write_text(SVG)
        (figs / name / f"{name}.caption.md").write_text(f"{name}: 95% intervals.\n")
    runs_file = raw / "throughput" / "lab" / "runs.parquet"
    runs = pd.read_parquet(runs_file)
    hit = (runs["run"] == 2) & runs["mode"].isin(STOPPED)
    runs.loc[hit, "status"] = "failed"
    runs.loc[hit, "reason"] = DOCKER_FAILURE
    runs.to_parquet(runs_file, index=False)
    article.build(proc, raw, tabs, figs, root / "reports", MARGINS, 0.95, root=root)
    return root


@pytest.fixture(scope="module")
def md(tree) -> str:
    return (tree / "reports" / "article.md").read_text(encoding="utf-8")


def _section(md: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", md, re.S | re.M)
    assert match, f"no section {title!r}"
    return match.group(1)


def test_the_docker_failure_fixture_is_read_back_verbatim(tree):
    runs = read_dataset(tree / "data" / "raw", "throughput", "runs")
    recorded = runs[runs["reason"] == DOCKER_FAILURE]
    assert set(recorded["mode"]) == set(STOPPED) and recorded["run"].nunique() == 1


def test_a_repeated_failure_reason_is_quoted_once_naming_every_step(md):
    assert md.count("Error response from daemon") == 1
    assert "docker run --help" not in md and "stderr (last" not in md
    limits = _section(md, "Limitations")
    (line,) = [x for x in limits.splitlines() if "Error response from daemon" in x]
    assert re.match(r"\| R\d+ \| ", line) and line.split(" | ", 1)[1].startswith(
        "“on host node1: command exited with status 125: docker: Error response from daemon: "
        "failed to create task for container:"
    )
    assert "no such file or directory: unknown.” […] | " in line  # cut, and it says so
    named = [f"{figures.MODE_LABELS[m]} (`{m}`)" for m in STOPPED]
    assert line.endswith(f" | `throughput` {named[0]}, {named[1]} and {named[2]} on the "
                         "datacenter path (tcp, udp) failed in 1 of 5 runs |")  # fmt: skip
    # the other reasons keep a line each, quoted once
    assert limits.count("“kernel has no IPVS (ip_vs module missing)") == 1


def test_first_line_of_recorded_reasons():
    assert article.first_line(DOCKER_FAILURE) == (
        "on host node1: command exited with status 125: docker: Error response from daemon: "
        + DOCKER_FAILURE.split("daemon: ", 1)[1].splitlines()[0],
        True,
    )
    assert article.first_line("failed: sockperf client exited 1 (no reply within 5 s)") == (
        "sockperf client exited 1 (no reply within 5 s)", False)
    assert article.first_line("\n\nUsage: docker run [OPTIONS]\n") == ("", False)
    assert article.first_line(None) == ("", False)


def test_syscall_goes_through_the_host_section(md, tree):
    assert "syscall" in article.SECTIONS
    text = _section(md, "System calls and context switches")
    assert "Not measured" not in text
    assert "| `syscall-basic` (`syscall_ns`, a time) | " in text
    assert "Docker bridge 103.1% [" not in text  # cpu's compile
    assert "Docker bridge 97.0% [96.9, 97.1]" in text
    assert "![syscall](../figures/syscall/syscall.svg)" in text and "**Figure" in text
    assert "Full table in the appendix: `reports/tables/syscall.md`." in text
    appendix = md.split("\n## Appendix: tables\n")[1]
    assert "### Tables: System calls and context switches" in appendix
    assert "<!-- include: reports/tables/syscall.md" in appendix
    assert "| System calls and context switches |" not in _section(md, "Limitations")


def test_a_benchmark_without_a_section_gets_the_generic_one(md):
    assert "tracing" not in article.SECTIONS
    text = _section(md, "tracing")
    source = "`data/processed/tracing/tracing_compared.parquet`"
    assert f"Each container mode against native ({source})" in text
    assert "- Docker bridge (`docker-bridge`) on the host, tracing (`syscall-basic`): 97.0% " \
           "[96.9, 97.1] of native, overhead." in text  # fmt: skip
    assert "![tracing](../figures/tracing/tracing.svg)" in text
    assert "Full table in the appendix: `reports/tables/tracing.md`." in text
    # before Methods, after the registered sections
    headings = re.findall(r"^## (.+)$", md, re.M)
    assert headings.index("Swarm orchestration") < headings.index("tracing") \
        < headings.index("Methods")  # fmt: skip


def test_figures_are_numbered_in_reading_order(md):
    numbers = [int(n) for n in re.findall(r"^\*\*Figure (\d+)[.*]", md, re.M)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) == 2
    summary = _section(md, "Summary")
    # the syscall answer points to the syscall figure
    line = next(x for x in summary.splitlines() if x.startswith("- **System calls"))
    assert "(Figure [1](#figure-syscall-syscall))" in line


INCLUDE = re.compile(r"<!-- include: [^>]* -->\n.*?\n<!-- end include -->", re.S)
NUMBER = re.compile(r"(?<![\w.\-,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w]|\.\d)", re.ASCII)


def test_every_number_of_the_added_sections_is_registered(md, tree):
    """test_article.py's central check, on this tree: the generic section, the host section of
    syscall, the summary's findings and the grouped limitations state no number of their own."""
    numbers = json.loads((tree / "reports" / "numbers.json").read_text())
    allowed = set()
    for entry in numbers.values():
        for v in [entry["value"], *(entry["interval"] or [])]:
            allowed.add(f"{abs(v):,.{entry['decimals']}f}")
    text = INCLUDE.sub("", md)
    for pattern in (r"“[^”]*”", r"`[^`]*`", r"!\[[^\]]*\]\([^)]*\)", r"<!--.*?-->"):
        text = re.sub(pattern, "", text)
    found = NUMBER.findall(text)
    assert len(found) > 100
    assert [n for n in found if n not in allowed] == []


def test_a_skip_counts_the_runs_its_cell_was_scheduled_in(tmp_path):
    # a precision-planned campaign: native and docker-bridge went on to run 6, swarm-ingress
    # (skipped) stayed at the 3-run pilot
    from types import SimpleNamespace

    from pipeline.analysis.article.methods import _steps_not_ok
    from pipeline.analysis.article.numbers import Numbers

    rows = [{"run": r, "mode": m, "path": "dc", "variant": "tcp", "status": "ok", "reason": None}
            for m in ("native", "docker-bridge") for r in range(1, 7)]  # fmt: skip
    rows += [{"run": r, "mode": "swarm-ingress", "path": "dc", "variant": "tcp",
              "status": "skipped", "reason": "kernel has no IPVS"} for r in (1, 2, 3)]  # fmt: skip
    inputs = SimpleNamespace(raw=tmp_path, raw_table=lambda b, t: pd.DataFrame(rows))
    ((why, bench, mode, what),) = _steps_not_ok(inputs, Numbers(tmp_path), ["throughput"])
    assert mode == "swarm-ingress" and what.endswith("skipped in 3 of 3 runs")
