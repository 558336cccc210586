"""The article assembled only from generated files: numbers.json, metrics.json (with the
legend of its verdict codes, verdicts.json), article.md and article.html.

Inputs are what the stages wrote: the processed summaries under ``<processed>/<benchmark>/``, the
``runs`` and ``hosts`` tables under ``<raw>/<benchmark>/<environment>/`` (plus ``campaign.json``,
the duty cycle, where the campaign recorded one), ``reports/tables/*`` and ``figures/<dir>/``.

The article answers first: a one-page Summary says what was measured on what (the hosts facts,
the lab, the emulated Internet path, the profile) and answers each benchmark's question with a
ratio to native and an absolute difference, or the bound an inconclusive interval gives. Then
one section per benchmark (what repeats with only its numbers changed as compact tables, and
figures), the confrontation with the five articles, Methods, Limitations (each recorded skip
reason once, with an id), and the Appendix: how to read the tables (what their captions share,
once), every comparison with native answered, the full tables. No number is typed here: every
number the prose states is registered in ``Numbers`` (key, value, unit, interval, source file)
first and written from the registered, formatted value, so ``numbers.json`` holds every number
of the text. ``metrics.json`` holds every comparison with native the summaries carry, one flat
level of numbers for ``dvc exp show`` and ``dvc metrics diff``.

The modules: ``numbers`` (the registry and formatting), ``inputs`` (reading and including
generated files), ``sections`` (the per-benchmark registry), ``comparisons`` (the comparisons with
native, and metrics.json), ``answers`` (a comparison in the reader's terms), ``summary``,
``methods`` (Methods and Limitations), ``appendix`` (what the tables share, said once),
``against`` (the five articles), ``html``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.analysis.article import answers, appendix
from pipeline.analysis.article.comparisons import (
    VERDICT_CODES,
    Comparison,
    comparisons,
    headline_metrics,
    metrics,
    metrics_json,
    questions,
    verdicts_json,
)
from pipeline.analysis.article.html import data_uri, to_html
from pipeline.analysis.article.inputs import (
    BASELINE,
    INCLUDE_BEGIN,
    INCLUDE_END,
    PATH_LABELS,
    PATH_ORDER,
    Inputs,
    figure_blocks,
    figure_files,
    include,
    rel,
    table_blocks,
)
from pipeline.analysis.article.methods import (
    _instrument,
    _noise,
    _placement,
    first_line,
    limitations,
    methods,
)
from pipeline.analysis.article.numbers import Number, Numbers, decimals_for, format_number
from pipeline.analysis.article.sections import (
    SECTIONS,
    Section,
    discovered,
    generic_section,
    render,
)
from pipeline.analysis.article.summary import summary

TITLE = "# How much do containers really cost?"
PROVENANCE = "Every number below comes from the generated tables, figures and `numbers.json`."

__all__ = [
    "BASELINE",
    "INCLUDE_BEGIN",
    "INCLUDE_END",
    "PATH_LABELS",
    "PATH_ORDER",
    "SECTIONS",
    "PROVENANCE",
    "TITLE",
    "VERDICT_CODES",
    "Article",
    "Comparison",
    "Inputs",
    "Number",
    "Numbers",
    "Section",
    "_instrument",
    "_noise",
    "_placement",
    "assemble",
    "build",
    "comparisons",
    "data_uri",
    "decimals_for",
    "figure_files",
    "first_line",
    "format_number",
    "include",
    "metrics",
    "to_html",
]


@dataclass
class Article:
    markdown: str
    numbers: Numbers
    figures: list[Path]
    tables: list[str]
    metrics: dict = field(default_factory=dict)


def _appendix(inputs: Inputs, numbers: Numbers, found: list[Comparison]) -> str:
    """Every comparison with native answered, then the full tables under the heading of the
    section that points to them, then every generated table and figure nothing else claimed,
    so nothing generated is lost."""
    blocks = ["## Appendix: tables"]
    if answers.answerable(found):
        conf = numbers.add(
            "methods.confidence_pct", round(100 * inputs.confidence, 9), "%", "parameters"
        )
        blocks += [
            "### Findings: every comparison with native",
            "Each container mode against native on the same path, test and runs: the ratio, "
            "the difference (container minus native), and what the verdict lets a reader say.",
            answers.table(numbers, found, conf, len({c.environment for c in found})),
        ]
    stems = [p.stem for p in sorted(inputs.tables.glob("*.md")) if p.name not in inputs.used_tables]
    others = table_blocks(inputs, stems)
    included = [b for _, blocks in inputs.appendix for b in blocks] + others
    common = appendix.shared(included)
    if common:
        where = f"{rel(inputs, inputs.tables)}/*.md: the caption sentences several tables share"
        blocks[1:1] = [
            "### How to read the tables",
            "Each table's caption says what its columns are; what several captions share is "
            "said here once (left out of each caption), and a note's recorded reason is its id "
            "in the table of Limitations.",
            include(appendix.how_to_read(common), where),
        ]
    tables = []
    for heading, blocks_ in inputs.appendix:
        tables += [f"### Tables: {heading}",
                   *(appendix.factor(b, common, inputs.reason_ids) for b in blocks_)]
    if others:
        tables += ["### Other generated tables",
                   *(appendix.factor(b, common, inputs.reason_ids) for b in others)]
    figures = []
    if inputs.figures.is_dir():
        for d in sorted(p for p in inputs.figures.iterdir() if p.is_dir()):
            if not set(figure_files(d)) & inputs.used_figures:
                figures += figure_blocks(inputs, numbers, d.name)
    if figures:
        tables += ["### Other generated figures", *figures]
    if tables:
        blocks += ["Every table the sections and Methods point to, as generated.", *tables]
    elif len(blocks) == 1:
        blocks.append("No table was generated.")
    return "\n\n".join(blocks)


def assemble(
    processed_dir: Path | str,
    raw_dir: Path | str,
    tables_dir: Path | str,
    figures_dir: Path | str,
    out_dir: Path | str,
    margins: dict[str, float],
    confidence: float = 0.95,
    root: Path | str | None = None,
    profile: str | None = None,
    leaves_out: Sequence[str] = (),
    headline: Mapping | None = None,
) -> Article:
    """The article's Markdown, its numbers and its metrics, from the generated files (nothing
    is written). ``profile`` names the measurement profile and ``leaves_out`` says, a sentence
    each, what it does not measure: the Limitations open with them. ``headline``, the
    profile's (benchmark -> modes, paths, variants), names the comparisons it is for: Methods
    says how many a test resolved, and metrics.json counts them."""
    root = Path(root or Path.cwd()).resolve()
    inputs = Inputs(
        Path(processed_dir),
        Path(raw_dir),
        Path(tables_dir),
        Path(figures_dir),
        Path(out_dir),
        dict(margins),
        confidence,
        root,
    )
    numbers = Numbers(root)
    benchmarks = inputs.raw_benchmarks()
    found = comparisons(inputs.processed, inputs.raw)
    body, not_measured = [], []
    for section in [*SECTIONS.values(), *map(generic_section, discovered(inputs))]:
        text, measured = render(section, inputs, numbers)
        body.append(text)
        if not measured:
            not_measured.append(section)
    asked = questions(found, headline)
    tail = [
        methods(inputs, numbers, benchmarks),
        answers.questions_paragraph(numbers, asked),
        limitations(inputs, numbers, benchmarks, not_measured, profile, leaves_out),
        _appendix(inputs, numbers, found),
    ]
    # Written last, placed first: it points to figures the body has placed and numbered.
    provenance = PROVENANCE
    if profile:
        scope = " (fewer modes and paths; see Limitations)" if leaves_out else ""
        provenance += f" Profile: {profile}{scope}."
    first = summary(inputs, numbers, found, benchmarks, profile)
    parts = [TITLE, provenance, first, *body, *tail]
    markdown = "\n\n".join(p for p in parts if p).rstrip() + "\n"
    return Article(
        markdown,
        numbers,
        sorted(inputs.used_figures),
        sorted(inputs.used_tables),
        {**metrics(found), **headline_metrics(asked)},
    )


def build(
    processed_dir: Path | str,
    raw_dir: Path | str,
    tables_dir: Path | str,
    figures_dir: Path | str,
    out_dir: Path | str,
    margins: dict[str, float],
    confidence: float = 0.95,
    root: Path | str | None = None,
    metrics_file: Path | str | None = None,
    profile: str | None = None,
    leaves_out: Sequence[str] = (),
    headline: Mapping | None = None,
) -> dict[str, Path]:
    """Write ``numbers.json``, ``article.md`` and ``article.html`` into ``out_dir``, and the
    comparisons with native to ``metrics_file`` (default ``<out_dir>/metrics.json``), flat and
    numbers only, with the legend of its verdict codes beside it (``verdicts.json``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    article = assemble(
        processed_dir, raw_dir, tables_dir, figures_dir, out, margins, confidence, root,
        profile, leaves_out, headline,
    )  # fmt: skip
    paths = {
        "numbers": out / "numbers.json",
        "markdown": out / "article.md",
        "html": out / "article.html",
        "metrics": Path(metrics_file) if metrics_file is not None else out / "metrics.json",
    }
    paths["verdicts"] = paths["metrics"].with_name("verdicts.json")
    paths["numbers"].write_text(article.numbers.to_json(), encoding="utf-8")
    paths["markdown"].write_text(article.markdown, encoding="utf-8")
    paths["html"].write_text(to_html(article.markdown, out), encoding="utf-8")
    paths["metrics"].parent.mkdir(parents=True, exist_ok=True)
    paths["metrics"].write_text(metrics_json(article.metrics), encoding="utf-8")
    paths["verdicts"].write_text(verdicts_json(), encoding="utf-8")
    return paths
