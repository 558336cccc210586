"""What the article is assembled from, and how generated files enter it.

Tables, generated sentences and figure captions are included verbatim between
``<!-- include: FILE -->`` and ``<!-- end include -->`` markers. A generated sentence stays where
its section needs it; a table goes to the appendix and its section points to it by file name, so
the body reads as prose and figures and the appendix holds the full tables.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from pipeline.analysis import figures
from pipeline.analysis.article.numbers import Number, Numbers
from pipeline.data import schema

PATH_LABELS = {
    "dc": "datacenter",
    "local": "localhost",
    "internet": "Internet",
    "host": "on the host",
}
PATH_ORDER = ["dc", "local", "internet", "host"]
BASELINE = "native"
INCLUDE_BEGIN = "<!-- include: {} -->"
INCLUDE_END = "<!-- end include -->"
RANK = "distribution-free order-statistic interval of the median across runs"
RATIO_T = "paired t interval of the per-run log ratios (runs both measured)"
RUN_T = "t interval over runs of the per-run percentiles (log scale)"
SHIFT_T = "paired t interval of the per-run differences (runs both measured)"
WELCH_T = "Welch t interval of the two environments' per-run log values"
_TABLE_RULE = re.compile(r"^\|(?: *:?-{3,}:? *\|)+\s*$", re.M)


@dataclass
class Inputs:
    processed: Path
    raw: Path
    tables: Path
    figures: Path
    out: Path
    margins: dict[str, float]
    confidence: float
    root: Path
    used_tables: set[str] = field(default_factory=set)
    used_figures: set[Path] = field(default_factory=set)
    # (heading, included blocks) in the order the body claimed them: the appendix
    appendix: list[tuple[str, list[str]]] = field(default_factory=list)
    # a recorded skip or failure reason -> its id in Limitations' table (``methods.not_ok``)
    reason_ids: dict[str, str] = field(default_factory=dict)
    # figure directory -> its figures (number, file), in the order the body shows them
    figure_numbers: dict[str, list[tuple[Number, Path]]] = field(default_factory=dict)
    # a caption sentence -> the number of the first figure whose caption says it
    caption_sentences: dict[str, str] = field(default_factory=dict)

    def summary(self, benchmark: str, name: str) -> tuple[pd.DataFrame, Path] | None:
        path = self.processed / benchmark / f"{name}.parquet"
        return (pd.read_parquet(path), path) if path.exists() else None

    def raw_table(self, benchmark: str, table: str) -> pd.DataFrame | None:
        try:
            return schema.read_dataset(self.raw, benchmark, table)
        except FileNotFoundError:
            return None

    def raw_benchmarks(self) -> list[str]:
        if not self.raw.is_dir():
            return []
        return sorted(p.name for p in self.raw.iterdir() if list(p.glob("*/runs.parquet")))


def label(mode: str) -> str:
    return figures.MODE_LABELS.get(mode, mode)


def path_label(path: str) -> str:
    return PATH_LABELS.get(path, path)


def on_path(path: str) -> str:
    """ "on the datacenter path", "on the host"."""
    return "on the host" if path == "host" else f"on the {path_label(path)} path"


def ordered(frame: pd.DataFrame, column: str = "path") -> list[str]:
    present = list(dict.fromkeys(frame[column]))
    return sorted(present, key=lambda p: (PATH_ORDER.index(p) if p in PATH_ORDER else 99, p))


def missing(value) -> bool:
    """True for None and NaN (a string, even empty, is present)."""
    if value is None:
        return True
    if isinstance(value, str):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def col(row, name: str):
    value = row.get(name)
    return None if missing(value) else value


def rel(inputs: Inputs, path: Path) -> str:
    try:
        return str(path.resolve().relative_to(inputs.root))
    except ValueError:
        return str(path)


def include(text: str, name: str) -> str:
    """A generated file's content, verbatim, between markers (the HTML drops the markers)."""
    return f"{INCLUDE_BEGIN.format(name)}\n{text.rstrip(chr(10))}\n{INCLUDE_END}"


def is_table(text: str) -> bool:
    return bool(_TABLE_RULE.search(text))


def table_blocks(inputs: Inputs, stems: list[str]) -> list[str]:
    """The files ``<tables>/<stem>.md`` that exist, each as an include block."""
    blocks = []
    for stem in stems:
        path = inputs.tables / f"{stem}.md"
        if path.exists():
            inputs.used_tables.add(path.name)
            blocks.append(include(path.read_text(encoding="utf-8"), rel(inputs, path)))
    return blocks


def tables_for(inputs: Inputs, stems: list[str], heading: str) -> list[str]:
    """Generated sentences inline; tables to the appendix under ``heading``, with one line here
    naming their files."""
    inline, moved, names = [], [], []
    for stem in stems:
        path = inputs.tables / f"{stem}.md"
        if not path.exists():
            continue
        inputs.used_tables.add(path.name)
        text = path.read_text(encoding="utf-8")
        block = include(text, rel(inputs, path))
        if is_table(text):
            moved.append(block)
            names.append(f"`{rel(inputs, path)}`")
        else:
            inline.append(block)
    if moved:
        inputs.appendix.append((heading, moved))
        inline.append(
            f"Full table{'s' if len(names) > 1 else ''} in the appendix: {', '.join(names)}."
        )
    return inline


def figure_files(directory: Path) -> list[Path]:
    """One file per figure in ``directory``: the SVG where there is one, else the PNG."""
    if not directory.is_dir():
        return []
    stems = sorted(
        {p.name[: -len(p.suffix)] for p in directory.glob("*") if p.suffix in (".svg", ".png")}
    )
    files = []
    for stem in stems:
        svg, png = directory / f"{stem}.svg", directory / f"{stem}.png"
        files.append(svg if svg.exists() else png)
    return files


def figure_anchor(path: Path | str) -> str:
    """The in-page id of a figure, from its directory and stem (the HTML gives the image this
    id, so the summary can link to it)."""
    path = Path(path)
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    return "figure-" + re.sub(r"[^A-Za-z0-9]+", "-", f"{path.parent.name}-{stem}").strip("-")


def figure_blocks(inputs: Inputs, numbers: Numbers, directory: str) -> list[str]:
    """Each figure of ``figures/<directory>``, numbered in reading order, with its caption."""
    blocks = []
    for path in figure_files(inputs.figures / directory):
        inputs.used_figures.add(path)
        stem = path.name[: -len(path.suffix)]
        count = sum(len(v) for v in inputs.figure_numbers.values())
        number = numbers.add(f"figures.{directory}.{stem}", count + 1, "figure", path, decimals=0)
        inputs.figure_numbers.setdefault(directory, []).append((number, path))
        link = Path(os.path.relpath(path, inputs.out)).as_posix()
        block = [f"![{stem}]({link})", ""]
        caption = path.with_name(f"{stem}.caption.md")
        if caption.exists():
            text, left_out = _once(inputs, caption.read_text(encoding="utf-8"), number.text())
            shown = include(text, rel(inputs, caption) + left_out)
            block.append(f"**Figure {number.text()}.**\n{shown}")
        else:
            block.append(f"**Figure {number.text()}** (`{stem}`).")
        blocks.append("\n".join(block))
    return blocks


# Where a caption's sentence ends (the appendix splits table captions the same way).
CAPTION_SENTENCE = re.compile(r"(?<=\.)\s+(?=[A-Z\"“(])")
REPEATED = " (sentences an earlier caption says left out)"


def _once(inputs: Inputs, caption: str, number: str) -> tuple[str, str]:
    """A figure's caption without the sentences an earlier figure's caption already says (how
    to read the marks of figures drawn alike), pointing to that figure instead; and what its
    include marker adds to the file's name ("" when nothing was left out)."""
    sentences = [x for x in CAPTION_SENTENCE.split(caption.strip()) if x.strip()]
    kept, earlier = [], []
    for sentence in sentences:
        first = inputs.caption_sentences.setdefault(sentence, number)
        if first == number:
            kept.append(sentence)
        elif first not in earlier:
            earlier.append(first)
    if not earlier:
        return caption, ""
    said = f"Figure{'s' if len(earlier) > 1 else ''} {', '.join(earlier)}"
    return " ".join([*kept, f"{'Otherwise read' if kept else 'Read'} as {said}."]), REPEATED


def figure_refs(inputs: Inputs, directories: list[str]) -> str:
    """A pointer to the figures of ``directories`` ("(Figure 2)", "(Figures 2, 3)"), "" when
    none was drawn."""
    shown = [f for d in directories for f in inputs.figure_numbers.get(d, [])]
    if not shown:
        return ""
    links = [f"[{n.text()}](#{figure_anchor(path)})" for n, path in shown]
    return f" (Figure{'s' if len(links) > 1 else ''} {', '.join(links)})"
