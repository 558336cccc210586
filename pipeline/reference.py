"""The reference results: a finished run's answer, kept in the repository.

`container-overhead reference` copies what a complete run of a profile wrote (`make demo`, or
`dvc repro` with every stage) into `data/reference/<profile>/`, small and text only:

- `article.md`, with the figures it shows (SVG) beside it under `figures/` and its links
  pointing there, so it reads on GitHub without a run;
- `tables/`: every article table as Markdown and CSV;
- `metrics.json`, `verdicts.json` and `numbers.json`;
- `RUN.md`: the profile, the commit, when the runs were taken, the machine and hosts they ran
  on (from the runs' own host records) and each campaign's wall time and harness share.

`reports/metrics.json` itself is committed with it: after a user's own run, `dvc metrics diff`
compares theirs (the workspace) with the reference (HEAD), comparison by comparison.

It refuses a run that is not complete (no article, or an article older than the newest
collected data: the analysis has not caught up) and an article of another profile than asked.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from pipeline.analysis import interference, tables

ROOT = Path(__file__).resolve().parent.parent
FIGURE_LINK = re.compile(r"\]\((?:\.\./)?(figures/[^)\s]+)\)")
COPIED = ("metrics.json", "verdicts.json", "numbers.json")
TABLE_SUFFIXES = (".md", ".csv")
HOST_COLUMNS = {
    "kernel": "kernel", "cpu_model": "CPU", "cpu_count": "CPUs", "mem_total_bytes": "memory",
    "docker_version": "Docker", "containerd_version": "containerd", "runc_version": "runc",
    "cgroup_version": "cgroup",
}  # fmt: skip


class RunRefused(Exception):
    """A run that cannot be the reference: the message says why and what to do."""


def _newest_data(raw: Path) -> float:
    return max((runs.stat().st_mtime for runs, _ in interference.campaigns(raw)), default=0.0)


def _check(root: Path, profile: str) -> Path:
    article = root / "reports" / "article.md"
    if not article.exists():
        raise RunRefused(f"no article at {article}: run `make demo` (or `dvc repro`) with "
                             f"profile {profile} first")  # fmt: skip
    text = article.read_text(encoding="utf-8")
    found = re.search(r"Profile: ([\w-]+)", text)
    if found is None or found.group(1) != profile:
        said = found.group(1) if found else "none named"
        raise RunRefused(f"{article} is from profile {said}, not {profile}: run the "
                             f"pipeline with profile {profile}, or pass --profile {said}")
    if article.stat().st_mtime < _newest_data(root / "data" / "raw"):
        raise RunRefused(f"{article} is older than the newest collected data: the analysis "
                             "has not caught up; run `dvc repro` to finish it")  # fmt: skip
    return article


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""


def _hosts(raw: Path) -> pd.DataFrame:
    frames = [pd.read_parquet(p) for p in sorted(raw.glob("*/*/hosts.parquet"))]
    if not frames:
        return pd.DataFrame()
    hosts = pd.concat(frames, ignore_index=True)
    keep = [c for c in ["environment", "host", "role", *HOST_COLUMNS] if c in hosts.columns]
    hosts = hosts[keep].drop_duplicates()
    if "cpu_count" in hosts:
        # a network campaign's placement pins a host to part of the machine's CPUs, so the
        # campaigns saw different counts on one host: one row per host, the counts listed
        same = [c for c in keep if c != "cpu_count"]
        hosts = (hosts.groupby(same, sort=False, dropna=False)["cpu_count"]
                 .agg(lambda n: ", ".join(str(v) for v in sorted(set(n)))).reset_index()
                 [keep])  # fmt: skip
    return hosts.sort_values(["environment", "host"])


def _campaigns(raw: Path) -> list[dict]:
    rows = []
    for runs_file, parts in interference.campaigns(raw):
        benchmark, environment = parts[-3], parts[-2]
        runs = pd.read_parquet(runs_file, columns=["started_at", "ended_at", "status"])
        record = runs_file.parent / "campaign.json"
        kept = json.loads(record.read_text()) if record.exists() else {}
        wall, harness = kept.get("wall_s"), kept.get("harness_s")
        rows.append({
            "campaign": interference.campaign_label(benchmark, parts, environment),
            "environment": environment, "measurements": int((runs["status"] == "ok").sum()),
            "started": runs["started_at"].min(), "ended": runs["ended_at"].max(),
            "wall_min": None if wall is None else wall / 60,
            "harness": None if wall in (None, 0) or harness is None else harness / wall,
        })  # fmt: skip
    return rows


def run_record(root: Path, profile: str) -> str:
    """RUN.md: what the reference run was, on what, and how long each campaign took."""
    raw = root / "data" / "raw"
    commit = _git(root, "rev-parse", "HEAD") or "unknown"
    dirty = _git(root, "status", "--porcelain", "--untracked-files=no")
    lines = [f"# Reference run: profile {profile}", "",
             f"- Commit: `{commit}`" + (" (with uncommitted changes)" if dirty else ""),
             f"- Profile: `conf/profiles/{profile}.yaml`"]  # fmt: skip
    campaigns = pd.DataFrame(_campaigns(raw))
    if not campaigns.empty:
        first, last = campaigns["started"].min(), campaigns["ended"].max()
        lines.append(f"- Runs taken: {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC")
        recorded = campaigns["wall_min"].dropna()
        if len(recorded):
            of = "" if len(recorded) == len(campaigns) else f" of {len(campaigns)}"
            lines.append(f"- Collection wall time: {recorded.sum():.0f} min over "
                         f"{len(recorded)}{of} campaigns")  # fmt: skip
    hosts = _hosts(raw)
    if not hosts.empty:
        shown = hosts.copy()
        if "mem_total_bytes" in shown:
            shown["mem_total_bytes"] = [f"{v / 2**30:.1f} GiB" for v in shown["mem_total_bytes"]]
        shown = shown.rename(columns=HOST_COLUMNS)
        lines += ["", "## Hosts", "", tables.to_markdown(
            shown, "The hosts as each campaign recorded them (its `hosts` table); CPUs: "
            "every count a campaign saw (a placement pins a host to some of the machine's).",
            "")]
    if not campaigns.empty:
        shown = campaigns.assign(
            started=campaigns["started"].dt.strftime("%Y-%m-%d %H:%M"),
            wall_min=[None if pd.isna(v) else f"{v:.1f}" for v in campaigns["wall_min"]],
            harness=[None if pd.isna(v) else f"{v:.0%}" for v in campaigns["harness"]],
        ).drop(columns="ended")  # fmt: skip
        lines += ["", "## Campaigns", "", tables.to_markdown(
            shown.rename(columns={"wall_min": "wall time (min)"}),
            "Each campaign's wall time over its sessions and the harness's share of it (SSH, "
            "starting and removing servers, waits), from its `campaign.json`.", "")]
    return "\n".join(lines).rstrip("\n") + "\n"


def export(root: Path, out: Path, profile: str) -> list[Path]:
    """Copy the run under ``root`` into ``out``, replacing what was there only once every file
    is written (a refusal half-way leaves the previous reference as it was); the files
    written."""
    article = _check(root, profile)
    partial = out.with_name(f"{out.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        names = _write(root, partial, article, profile)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if out.exists():
        shutil.rmtree(out)
    partial.rename(out)
    return [out / name for name in names]


def _write(root: Path, out: Path, article: Path, profile: str) -> list[Path]:
    """Every file of the reference written under ``out``; their paths relative to it."""
    (out / "tables").mkdir(parents=True)
    written = []

    def link(match: re.Match) -> str:
        source = root / match.group(1)
        if not source.exists():
            raise RunRefused(f"the article shows {source}, which does not exist: run "
                             "`dvc repro` to finish the analysis")  # fmt: skip
        shutil.copyfile(source, _parent(out / match.group(1)))
        written.append(Path(match.group(1)))
        return f"]({match.group(1)})"

    text = FIGURE_LINK.sub(link, article.read_text(encoding="utf-8"))
    (out / "article.md").write_text(text, encoding="utf-8")
    written.append(Path("article.md"))
    for name in COPIED:
        if (root / "reports" / name).exists():
            shutil.copyfile(root / "reports" / name, out / name)
            written.append(Path(name))
    for table in sorted((root / "reports" / "tables").glob("*")):
        if table.suffix in TABLE_SUFFIXES:
            shutil.copyfile(table, out / "tables" / table.name)
            written.append(Path("tables") / table.name)
    (out / "RUN.md").write_text(run_record(root, profile), encoding="utf-8")
    return [*written, Path("RUN.md")]


def _parent(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def main(argv: list[str] | None = None) -> int:
    from pipeline import params

    parser = argparse.ArgumentParser(prog="container-overhead reference",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.add_argument("--profile", help="the profile the run used (default: params.yaml's)")
    parser.add_argument("--out", type=Path, help="default data/reference/<profile>")
    args = parser.parse_args(argv)
    profile = args.profile or params.load().raw["profile"]
    out = args.out or ROOT / "data" / "reference" / profile
    try:
        written = export(ROOT, out, profile)
    except RunRefused as exc:
        print(f"reference: {exc}", file=sys.stderr)
        return 2
    print(f"reference: {len(written)} files in {out}; commit them with reports/metrics.json "
          "(`dvc metrics diff` then compares a new run with this one)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
