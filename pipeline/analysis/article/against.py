"""The article's confrontation with the five published articles: one short paragraph per
article, by its title, on its headline claims only.

It reads the frame ``pipeline.analysis.replication.replicate`` returns (one row per claim and
environment) and says, per article, which headline claims this study reproduces, contradicts,
cannot resolve, cannot transfer to its machine (and the mechanism that differs) or does not
measure (and why), with the study's number and interval beside the claim's region. Every other
row stays in the replication table; a verdict group is one sentence, so no sentence repeats
with only its numbers changed.
"""

from __future__ import annotations

import math

import pandas as pd

from pipeline.analysis import replication as rp

# The five articles (shared/seeds/README.md), by the file their rows cite.
TITLES = {
    "000_e7680198a571d7ae.txt": (
        "Docker Swarm Performance Overhead: Bare Metal Benchmarks & Reality Check"
    ),
    "001_51a87db589330686.txt": "So, how much slower are containers?",
    "002_72551f68f92ce212.txt": (
        "SQL Server containers and docker network driver performance considerations"
    ),
    "003_5e5fbe927933ca57.txt": "Load balancing: Rancher vs Swarm",
    "004_fa4b67d62916377b.txt": "Docker Rootless vs Rootful: Performance Benchmarks 2026",
}
# A quote longer than this is named by its configuration instead.
QUOTE_CHARS = 170


def against_the_articles(replication: pd.DataFrame) -> str:
    """Markdown: per article (by title, in the order of ``TITLES``), its headline claims
    confronted with this study: what is reproduced, contradicted, not resolved, not
    transferable here and not measured, each with its reason, the study's number and interval
    beside the claim's."""
    several = replication["environment"].nunique() > 1
    paragraphs = []
    articles = [a for a in TITLES if a in set(replication["article"])]
    articles += sorted(set(replication["article"]) - set(TITLES))
    for article in articles:
        rows = replication[(replication["article"] == article) & replication["headline"]]
        title = TITLES.get(article, article)
        if rows.empty:
            paragraphs.append(f"**{title}**: no headline claim of this article is typed.")
            continue
        shared = _shared(rows)
        sentences = []
        for verdict in rp.VERDICTS:
            group = rows[rows["verdict"] == verdict]
            if not group.empty:
                sentences.append(_SENTENCES[verdict](group, several, shared))
        paragraphs.append(f"**{title}** — " + " ".join(sentences))
    return "\n\n".join(paragraphs)


def _claim(r, shared: dict[str, str]) -> str:
    """The claim in the article's words when its quote is a sentence, else what it measured;
    a quote that carries several claims is told apart by what differs between them."""
    quote = str(r.quote).strip()
    words = sum(w.isalpha() for w in quote.split())
    if words < 5 or len(quote) > QUOTE_CHARS:
        return f"{r.configuration}'s {r.metric}"
    said = f"“{quote.rstrip('.')}”"
    return f"{said} ({getattr(r, shared[quote])})" if quote in shared else said


def _shared(rows: pd.DataFrame) -> dict[str, str]:
    """Quotes that carry several headline claims -> the column that tells them apart."""
    out = {}
    for quote, group in rows.drop_duplicates("id").groupby("quote"):
        if len(group) > 1:
            out[quote] = "configuration" if group["configuration"].is_unique else "metric"
    return out


def _numbers(r, several: bool) -> str:
    """The study's figure beside the claim's region, on the comparison's scale."""
    where = f"{r.environment}: " if several else ""
    claim = rp.region_text(r)
    study = rp.study_text(r)
    runs = f" over {int(r.study_n_runs)} runs" if r.study_n_runs else ""
    if claim and study:
        return f"{where}claim {claim}, study {study}{runs}"
    if study:
        return f"{where}study {study}{runs}"
    return f"{where}claim {claim}" if claim else ""


def _items(group: pd.DataFrame, several: bool, shared: dict[str, str], extra=None) -> str:
    parts = []
    for r in group.itertuples():
        numbers = _numbers(r, several)
        detail = ", ".join(p for p in (numbers, extra(r) if extra else "") if p)
        parts.append(f"{_claim(r, shared)} ({detail})" if detail else _claim(r, shared))
    return _join(parts)


def _join(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return "; ".join(parts[:-1]) + "; and " + parts[-1]


def _side(r) -> str:
    if math.isnan(r.study_lo) or math.isnan(r.claim_lo):
        return ""
    return "above the claim" if r.study_lo > r.claim_hi else "below the claim"


def _reproduced(group: pd.DataFrame, several: bool, shared: dict[str, str]) -> str:
    return (
        f"The study reproduces {_items(group, several, shared)}: its whole interval lies "
        f"inside what {'the claim allows' if len(group) == 1 else 'each claim allows'}."
    )


def _contradicted(group: pd.DataFrame, several: bool, shared: dict[str, str]) -> str:
    return (
        f"It contradicts {_items(group, several, shared, _side)}, with no overlap between the "
        "interval and the claim."
    )


def _not_resolved(group: pd.DataFrame, several: bool, shared: dict[str, str]) -> str:
    return (
        f"Still open: {_items(group, several, shared)}; the interval straddles the claim's "
        "boundary, and only more runs can settle it."
    )


def _not_transferable(group: pd.DataFrame, several: bool, shared: dict[str, str]) -> str:
    by_reason = []
    for reason, rows in group.groupby("reason", sort=False):
        claims = _join([_claim(r, shared) for r in rows.drop_duplicates("id").itertuples()])
        by_reason.append(f"{claims}, because {reason}")
    return f"What this machine cannot test: {_join(by_reason)}."


def _not_measured(group: pd.DataFrame, several: bool, shared: dict[str, str]) -> str:
    by_reason = []
    for reason, rows in group.groupby("reason", sort=False):
        claims = _join([_claim(r, shared) for r in rows.drop_duplicates("id").itertuples()])
        by_reason.append(f"{claims}: {reason}")
    return f"Left without a figure here: {_join(by_reason)}."


_SENTENCES = {
    rp.REPRODUCED: _reproduced,
    rp.CONTRADICTED: _contradicted,
    rp.NOT_RESOLVED: _not_resolved,
    rp.NOT_TRANSFERABLE: _not_transferable,
    rp.NOT_MEASURED: _not_measured,
}
