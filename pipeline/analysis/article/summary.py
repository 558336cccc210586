"""The article's first page: the question, then what the verdicts in the summaries say.

Findings are generated from the comparisons with native (``comparisons.py``), in three parts:
the largest cost each benchmark found (overhead verdicts, biggest first, by |log ratio| so a
halved rate and a doubled time weigh the same), what was shown equivalent and within which
margin, and what this run could not resolve with the interval width a verdict would need. Each
finding points to the figures of its section. Every number is registered like the body's.
"""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.analysis import figures
from pipeline.analysis.article.comparisons import MEASURES, Comparison
from pipeline.analysis.article.inputs import Inputs, figure_refs, label, on_path
from pipeline.analysis.article.numbers import Numbers
from pipeline.analysis.article.sections import SECTIONS, comparison_number

QUESTION = (
    "What does running a service in a container cost, against the same binary run natively on "
    "the same hosts, in each execution mode and on each network path?"
)
# Lists longer than this are counted, not spelt out: the summary stays one page.
MAX_LISTED = 6


def _where(c: Comparison, environments: set[str]) -> str:
    where = on_path(c.path)
    return where + (f" in `{c.environment}`" if len(environments) > 1 else "")


def _modes(modes: Iterable[str]) -> str:
    names = [label(m) for m in sorted(set(modes), key=lambda m: (figures.mode_rank(m), m))]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _levels(inputs: Inputs, numbers: Numbers):
    """The intervals' level and the equivalence interval's, as Methods registers them."""
    conf = numbers.add(
        "methods.confidence_pct", round(100 * inputs.confidence, 9), "%", "parameters"
    )
    level = round(100 * (2 * inputs.confidence - 1), 9)  # 89.99999999999999 is 90
    return conf, numbers.add("methods.equivalence_level_pct", level, "%", "parameters")


def _costs(inputs: Inputs, numbers: Numbers, found: list[Comparison], total) -> list[str]:
    overheads = [c for c in found if c.verdict == "overhead"]
    if not overheads:
        return [f"**Largest costs.** None of the {total.text()} comparisons found an overhead."]
    n = numbers.add("summary.overhead.comparisons", len(overheads), "comparisons",
                    inputs.processed)  # fmt: skip
    largest: dict[str, Comparison] = {}
    for c in overheads:
        if c.benchmark not in largest or c.size > largest[c.benchmark].size:
            largest[c.benchmark] = c
    envs = {c.environment for c in found}
    lines = [
        f"**Largest costs.** {n.text()} of the {total.text()} comparisons found an overhead; the "
        "largest in each benchmark, biggest first:",
        "",
    ]
    for c in sorted(largest.values(), key=lambda c: -c.size):
        pct = comparison_number(numbers, c, "summary.largest")
        what = "rate" if c.higher_is_better else "time"
        lines.append(
            f"- {c.what[0].upper()}{c.what[1:]}, {label(c.mode)} `{c.mode}` {_where(c, envs)}: "
            f"{pct.with_ci('%')} of native's {what}"
            f"{figure_refs(inputs, [c.section])}."
        )
    return ["\n".join(lines)]


def _equivalent(inputs: Inputs, numbers: Numbers, found: list[Comparison]) -> list[str]:
    equivalent = [c for c in found if c.verdict == "equivalent"]
    if not equivalent:
        return ["**Shown equivalent.** No comparison put a container mode within its margin of "
                "native."]  # fmt: skip
    n = numbers.add("summary.equivalent.comparisons", len(equivalent), "comparisons",
                    inputs.processed)  # fmt: skip
    eq_level = _levels(inputs, numbers)[1]
    lines = [
        f"**Shown equivalent.** {n.text()} comparisons put the container mode within the margin "
        f"of native (its {eq_level.text()}% interval inside the margin, a paired TOST agreeing). "
        "By benchmark, the modes equivalent in every comparison made on a path:",
        "",
    ]
    for benchmark in dict.fromkeys(c.benchmark for c in equivalent):
        mine = [c for c in found if c.benchmark == benchmark]
        eq = [c for c in mine if c.verdict == "equivalent"]
        margins = sorted({c.margin for c in eq if c.margin is not None})
        within = ""
        if margins:
            key = f"summary.equivalent.{benchmark}.margin"
            pcts = [numbers.add(f"{key}_pct", 100 * margins[-1], "%", eq[0].source, decimals=0)]
            if len(margins) > 1:  # one margin per benchmark, unless the summaries disagree
                low = numbers.add(f"{key}_min_pct", 100 * margins[0], "%", eq[0].source, decimals=0)
                pcts.insert(0, low)
            within = " within ±" + " to ±".join(f"{p.text()}%" for p in pcts)
        shifts = sorted({c.margin_us for c in eq if c.margin_us is not None})
        if shifts:
            us = numbers.add(f"summary.equivalent.{benchmark}.margin_us", shifts[-1], "us",
                             eq[0].source, decimals=0)  # fmt: skip
            within += f" ({'' if margins else 'within '}±{us.text()} us on the Internet path)"
        cells: dict[tuple[str, str], list[Comparison]] = {}
        for c in mine:
            cells.setdefault((c.environment, c.path), []).append(c)
        parts = []
        for cs in cells.values():
            modes = {c.mode for c in cs}
            every = [m for m in modes if all(c.verdict == "equivalent" for c in cs if c.mode == m)]
            if every:
                parts.append(f"{_modes(every)} {_where(cs[0], {c.environment for c in found})}")
        if parts:
            said = "; ".join(parts)
        else:
            k = numbers.add(f"summary.equivalent.{benchmark}.comparisons", len(eq),
                            "comparisons", eq[0].source)  # fmt: skip
            said = f"{k.text()} comparisons, but no mode in every comparison on a path"
        what = MEASURES.get(benchmark, benchmark)
        lines.append(f"- {what[0].upper()}{what[1:]}{within}: {said}"
                     f"{figure_refs(inputs, [eq[0].section])}.")  # fmt: skip
    return ["\n".join(lines)]


def _rank(benchmark: str) -> tuple[int, str]:
    """A benchmark's place in the article's reading order (``SECTIONS``)."""
    order = list(SECTIONS)
    return (order.index(benchmark) if benchmark in order else len(order), benchmark)


def _range(numbers: Numbers, key: str, values: list[float], unit: str, source, decimals: int):
    lo = numbers.add(f"{key}_min", min(values), unit, source, decimals=decimals)
    hi = numbers.add(f"{key}_max", max(values), unit, source, decimals=decimals)
    return lo.text() if lo.text() == hi.text() else f"{lo.text()} to {hi.text()}"


def _unresolved(inputs: Inputs, numbers: Numbers, found: list[Comparison], total) -> list[str]:
    unresolved = [c for c in found if c.verdict == "inconclusive"]
    if not unresolved:
        return [f"**Not resolved.** None: each of the {total.text()} comparisons reached a "
                "verdict."]  # fmt: skip
    n = numbers.add("summary.inconclusive.comparisons", len(unresolved), "comparisons",
                    inputs.processed)  # fmt: skip
    text = (
        f"**Not resolved by this run.** {n.text()} of the {total.text()} comparisons are "
        "inconclusive"
    )
    groups: dict[tuple[str, str, str], list[Comparison]] = {}
    for c in unresolved:
        groups.setdefault((c.what, c.environment, c.path), []).append(c)
    envs = {c.environment for c in found}
    if len(groups) <= MAX_LISTED:
        said = [f"{what}: {_modes(c.mode for c in cs)} {_where(cs[0], envs)}"
                f"{figure_refs(inputs, [cs[0].section])}"
                for (what, _, _), cs in groups.items()]  # fmt: skip
        text += " (" + "; ".join(said) + ")"
    else:
        sections = list(dict.fromkeys(c.section for c in unresolved))
        text += figure_refs(inputs, sections)
    text += "."
    sized = [c for c in unresolved if c.resolvable is not None and c.n_runs]
    if sized:
        source, key = inputs.processed, "summary.inconclusive"
        ratios = [100 * c.resolvable for c in sized if c.margin_us is None]
        shifts = [c.resolvable for c in sized if c.margin_us is not None]
        runs = _range(numbers, f"{key}.runs", [c.n_runs for c in sized], "runs", source, 0)
        said = []
        if ratios:
            pct = _range(numbers, f"{key}.resolvable_pct", ratios, "%", source, 1)
            said.append(f"a difference under {pct}%")
        if shifts:
            us = _range(numbers, f"{key}.resolvable_us", shifts, "us", source, 0)
            said.append(f"{'on the Internet path ' if ratios else ''}a shift under {us} us")
        text += (
            f" With the {runs} runs they rest on, {' and '.join(said)} cannot be resolved here "
            "(the smallest a paired t test at the intervals' level finds four times in five, at "
            "the run-to-run spread measured)"
        )
        alone = [c for c in sized if c.lo is not None and c.hi is not None
                 and (c.hi < 1.0 or c.lo > 1.0)]  # fmt: skip
        if alone:
            k = numbers.add(f"{key}.withheld", len(alone), "comparisons", source)
            text += (
                f". {k.text()} of them would be called a difference on their own interval; the "
                "table's multiplicity adjustment withholds it"
            )
        text += "."
    return [text]


def summary(inputs: Inputs, numbers: Numbers, found: list[Comparison]) -> str:
    """The Summary section, from the comparisons with native and the figures already placed."""
    blocks = ["## Summary", f"**Question.** {QUESTION}", "### Findings"]
    decided = sorted((c for c in found if c.verdict), key=lambda c: _rank(c.benchmark))
    if not decided:
        blocks.append(
            "No processed summary carries a verdict against native yet: the summarise stages "
            "write them (see Limitations for what was not measured)."
        )
        return "\n\n".join(blocks)
    total = numbers.add("summary.comparisons", len(decided), "comparisons", inputs.processed)
    blocks.append(
        f"From the verdicts of the {total.text()} comparisons with native in the processed "
        f"summaries, each a ratio to native with its {_levels(inputs, numbers)[0].text()}% "
        "interval (Methods says how a verdict is reached; the sections below give every "
        "comparison):"
    )
    blocks += _costs(inputs, numbers, decided, total)
    blocks += _equivalent(inputs, numbers, decided)
    faster = [c for c in decided if c.verdict == "faster"]
    if faster:
        k = numbers.add("summary.faster.comparisons", len(faster), "comparisons", inputs.processed)
        refs = figure_refs(inputs, list(dict.fromkeys(c.section for c in faster)))
        modes = _modes(c.mode for c in faster)
        blocks.append(f"**Faster than native.** {k.text()} comparisons: {modes}{refs}.")
    blocks += _unresolved(inputs, numbers, decided, total)
    return "\n\n".join(blocks)
