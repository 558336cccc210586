"""The reference results (``pipeline/reference.py``): a finished run copied into
``data/reference/<profile>/`` reads on its own (every figure link resolves inside it), keeps the
run's metrics byte for byte, records the run's hosts and campaigns, and a run that is not
finished, or of another profile, is refused with what to do. ``dvc metrics diff`` then compares
a new run's metrics with the committed ones."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pipeline import reference
from pipeline.analysis import article, tables
from pipeline.analysis import host as host_analysis

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
MARGINS = {"network": 0.05, "cpu": 0.02, "memory": 0.02, "disk": 0.02}
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n'  # noqa: E501
DVC = Path(sys.executable).with_name("dvc")


def _run(root: Path, profile: str = "study") -> Path:
    """A finished run of ``profile`` under ``root``: the fixtures' data, one figure and one
    table, and the article built from them."""
    proc, raw = root / "data" / "processed", root / "data" / "raw"
    shutil.copytree(FIXTURES / "processed", proc)
    shutil.copytree(FIXTURES / "raw", raw)
    tabs, figs = root / "reports" / "tables", root / "figures"
    cpu = pd.read_parquet(proc / "cpu" / "cpu_summary.parquet")
    tables.write(host_analysis.article_table(cpu), tabs, "cpu", host_analysis.table_caption(cpu))
    (figs / "cpu").mkdir(parents=True)
    (figs / "cpu" / "cpu.svg").write_text(SVG)
    (figs / "cpu" / "cpu.caption.md").write_text("cpu: 95% intervals.\n")
    article.build(proc, raw, tabs, figs, root / "reports", MARGINS, 0.95, root=root,
                  profile=profile)  # fmt: skip
    return root


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Path, list[Path]]:
    root = _run(tmp_path_factory.mktemp("run"))
    out = root / "data" / "reference" / "study"
    return root, out, reference.export(root, out, "study")


def test_the_article_reads_on_its_own(exported):
    root, out, written = exported
    text = (out / "article.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+\.svg)\)", text)
    assert "figures/cpu/cpu.svg" in links and "../figures" not in text
    for link in links:
        assert (out / link).is_file(), link
    assert (out / "article.md") in written and (out / "figures" / "cpu" / "cpu.svg") in written


def test_the_metrics_and_tables_are_the_runs_own(exported):
    root, out, _ = exported
    for name in ("metrics.json", "verdicts.json", "numbers.json"):
        assert (out / name).read_bytes() == (root / "reports" / name).read_bytes(), name
    assert len(json.loads((out / "metrics.json").read_text())) > 200
    assert sorted(p.name for p in (out / "tables").iterdir()) == ["cpu.csv", "cpu.md"]


def test_the_run_record_names_the_profile_the_hosts_and_the_campaigns(exported):
    _, out, _ = exported
    text = (out / "RUN.md").read_text(encoding="utf-8")
    assert text.startswith("# Reference run: profile study\n")
    assert "- Profile: `conf/profiles/study.yaml`" in text
    assert "| lab | node1 | server | 6.1.0-fixture-amd64 | Fixture CPU @ 2.0GHz | 2 | 4.0 GiB |" \
        in text  # fmt: skip
    campaigns = text.split("## Campaigns")[1]
    for benchmark in ("throughput", "latency", "cpu", "coldstart"):
        assert f"| {benchmark} | lab |" in campaigns, benchmark


def test_an_unfinished_run_or_another_profile_is_refused(tmp_path):
    with pytest.raises(reference.RunRefused, match="no article at .*make demo"):
        reference.export(tmp_path, tmp_path / "out", "study")
    root = _run(tmp_path / "run")
    with pytest.raises(reference.RunRefused, match="is from profile study, not demo"):
        reference.export(root, root / "out", "demo")
    later = (root / "reports" / "article.md").stat().st_mtime + 60
    os.utime(root / "data" / "raw" / "latency" / "lab" / "runs.parquet", (later, later))
    with pytest.raises(reference.RunRefused, match="older than the newest collected data"):
        reference.export(root, root / "out", "study")
    assert not (root / "out").exists()
    # a refusal half-way (a figure the article shows is gone) keeps the previous reference
    os.utime(root / "reports" / "article.md", (later + 1, later + 1))
    previous = reference.export(root, root / "out", "study")
    (root / "figures" / "cpu" / "cpu.svg").unlink()
    with pytest.raises(reference.RunRefused, match="cpu.svg, which does not exist"):
        reference.export(root, root / "out", "study")
    assert all(p.is_file() for p in previous) and not (root / "out.partial").exists()


def test_dvc_metrics_diff_compares_a_new_run_with_the_committed_reference(exported, tmp_path):
    _, out, _ = exported
    repo = tmp_path / "repo"
    (repo / "reports").mkdir(parents=True)
    shutil.copyfile(out / "metrics.json", repo / "reports" / "metrics.json")
    (repo / "dvc.yaml").write_text("metrics:\n- reports/metrics.json\n")

    def run(*cmd: str) -> str:
        done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, check=True)
        return done.stdout

    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    run(*git, "init", "-q")
    run(str(DVC), "init", "-q")
    run(*git, "add", "-A")
    run(*git, "commit", "-q", "-m", "reference")
    metrics = json.loads((repo / "reports" / "metrics.json").read_text())
    key = next(k for k in metrics if k.startswith("cpu.docker-bridge.") and k.endswith(".estimate"))
    metrics[key] += 0.25
    (repo / "reports" / "metrics.json").write_text(json.dumps(metrics))
    diff = json.loads(run(str(DVC), "metrics", "diff", "--json"))["reports/metrics.json"]
    assert list(diff) == [key]
    assert diff[key]["diff"] == pytest.approx(0.25)


def test_a_host_pinned_to_fewer_cpus_by_a_placement_is_one_row(tmp_path):
    """Campaigns under a placement record a host with the CPUs it was given: one row per host,
    the counts listed."""
    raw = tmp_path / "data" / "raw"
    shutil.copytree(FIXTURES / "raw", raw)
    campaign = sorted(raw.glob("*/*/hosts.parquet"))[0]
    hosts = pd.read_parquet(campaign)
    pinned = hosts.assign(cpu_count=1)  # the same host, as a pinned campaign records it
    pd.concat([hosts, pinned.iloc[:1]]).to_parquet(campaign)
    host = pinned.iloc[0]["host"]
    rows = reference._hosts(raw)
    mine = rows[(rows["host"] == host) & (rows["environment"] == pinned.iloc[0]["environment"])]
    counts = sorted({1, *hosts.loc[hosts["host"] == host, "cpu_count"]})
    assert len(mine) == 1 and mine["cpu_count"].iloc[0] == ", ".join(map(str, counts))
