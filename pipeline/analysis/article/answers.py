"""Each comparison with native as an answer a reader can quote.

An answer states the ratio to native (a multiple from 2x up, else a percentage of native) and
the absolute difference, each with its interval, and then what the verdict lets a reader say:
"slower" or "longer" for an overhead, "equivalent within ±5%" only where the test could have
failed, and for an inconclusive comparison the bound at the far end of its interval on the
worse side ("at most 3.3% slower at 95%": a rate's lower end, a time's upper end; on the
Internet path, judged on added microseconds, the difference's upper end). A comparison whose
metric the setup fixes (a rate at a fixed offered load) answers nothing and is left out.
"""

from __future__ import annotations

from pipeline.analysis import figures
from pipeline.analysis.article.comparisons import MEASURES, Comparison, resolved
from pipeline.analysis.article.inputs import (
    PATH_ORDER,
    RATIO_T,
    SHIFT_T,
    label,
    path_label,
)
from pipeline.analysis.article.numbers import Number, Numbers

# The mode a benchmark's one-line answer is about: Docker as most people run it, then the
# nearest alternatives; any other measured mode after them, in the catalogue's order.
HEADLINE_MODES = ("docker-bridge", "docker-nat", "docker-host", "podman", "rootless-docker")
HEADLINE_PATHS = ("dc", "host", "local", "internet")
MULTIPLE_FROM = 2.0  # a ratio from 2 up reads as "2.5x native", below it as a percentage
IMPLIED_PATHS = ("dc", "host")  # the first page names a path only when it is another


def answerable(found: list[Comparison]) -> list[Comparison]:
    """The comparisons that can answer a question: a verdict, an interval, a metric the setup
    does not fix."""
    return [c for c in found if c.verdict and c.lo is not None and c.hi is not None
            and not c.pinned]  # fmt: skip


def worse(c: Comparison) -> str:
    return "slower" if c.higher_is_better else "longer"


def _key(c: Comparison, prefix: str) -> str:
    return ".".join(k for k in (prefix, c.benchmark, c.environment, c.path, c.key, c.mode) if k)


def ratio_number(
    numbers: Numbers, c: Comparison, prefix: str, measure: bool = False
) -> tuple[Number, str]:
    """The ratio, registered, and how the prose writes it: "11.7x native [11.6, 11.8]" or
    "87.2% of native [86.6, 87.8]"; with ``measure``, "87.2% of native's rate [86.6, 87.8]"."""
    key = _key(c, prefix)
    of = ("native's rate" if c.higher_is_better else "native's time") if measure else "native"
    if c.ratio >= MULTIPLE_FROM:
        n = numbers.add(f"{key}.x_native", c.ratio, "x native", c.source, c.lo, c.hi,
                        c.confidence, RATIO_T)  # fmt: skip
        return n, f"{n.text()}x {of} {n.ci()}".rstrip()
    n = numbers.add(f"{key}.pct_of_native", 100 * c.ratio, "% of native", c.source,
                    None if c.lo is None else 100 * c.lo, None if c.hi is None else 100 * c.hi,
                    c.confidence, RATIO_T)  # fmt: skip
    return n, f"{n.text()}% of {of} {n.ci()}".rstrip()


def diff_number(numbers: Numbers, c: Comparison, prefix: str) -> tuple[Number, str] | None:
    """The absolute difference, registered, as "+126.7 ms [+124.8, +128.6]", or None."""
    if c.diff is None or c.diff_unit is None:
        return None
    n = numbers.add(f"{_key(c, prefix)}.diff_{c.diff_unit.replace('/', '_per_')}", c.diff,
                    c.diff_unit, c.source, c.diff_lo, c.diff_hi, c.confidence, SHIFT_T)  # fmt: skip
    return n, f"{n.text(signed=True)} {c.diff_unit} {n.ci(signed=True)}".rstrip()


def bound(numbers: Numbers, c: Comparison, prefix: str) -> str:
    """What an inconclusive interval still says, from its far end on the worse side: "at most
    3.3% slower", "at most 257 us longer", or "not slower than native"."""
    key = _key(c, prefix)
    if c.margin_us is not None and c.diff_hi is not None:
        far = c.diff_hi
        if far <= 0:
            return f"not {worse(c)} than native"
        n = numbers.add(f"{key}.bound_{c.diff_unit}", far, c.diff_unit or "us", c.source)
        return f"at most {n.text()} {c.diff_unit} {worse(c)}"
    far = (1 - c.lo) if c.higher_is_better else (c.hi - 1)
    if far <= 0:
        return f"not {worse(c)} than native"
    n = numbers.add(f"{key}.bound_pct", 100 * far, "%", c.source, decimals=1)
    return f"at most {n.text()}% {worse(c)}"


def margin_text(numbers: Numbers, c: Comparison, prefix: str) -> str:
    key = _key(c, prefix)
    if c.margin_us is not None:
        n = numbers.add(f"{key}.margin_us", c.margin_us, "us", c.source, decimals=0)
        return f"±{n.text()} us"
    if c.margin is None:
        return ""
    n = numbers.add(f"{key}.margin_pct", 100 * c.margin, "%", c.source, decimals=0)
    return f"±{n.text()}%"


def verdict_text(numbers: Numbers, c: Comparison, prefix: str, conf: Number) -> str:
    """The answer the verdict allows, in the reader's words."""
    if c.verdict == "overhead":
        return worse(c)
    if c.verdict == "faster":
        return "faster" if c.higher_is_better else "shorter"
    if c.verdict == "equivalent":
        within = margin_text(numbers, c, prefix)
        return f"equivalent within {within}" if within else "equivalent"
    return f"{bound(numbers, c, prefix)} at {conf.text()}%"


def what(c: Comparison, implied: tuple[str, ...] = ()) -> str:
    """The test, in a few words: "p50, `udp`, datacenter path"; a path in ``implied`` is left
    out."""
    parts = [c.statistic] if c.statistic else []
    parts += [f"`{c.variant}`"] if c.variant else []
    if c.path not in implied:
        parts.append("on the host" if c.path == "host" else f"{path_label(c.path)} path")
    return ", ".join(parts)


def _order(c: Comparison, variants: dict[str, int]) -> tuple:
    path = HEADLINE_PATHS.index(c.path) if c.path in HEADLINE_PATHS else len(HEADLINE_PATHS)
    mode = (HEADLINE_MODES.index(c.mode) if c.mode in HEADLINE_MODES
            else len(HEADLINE_MODES) + figures.mode_rank(c.mode))  # fmt: skip
    stat = {"p50": 0, None: 0}.get(c.statistic, 1)
    return (stat, path, mode, variants.get(str(c.variant), 99), str(c.variant))


def headline(found: list[Comparison]) -> dict[str, Comparison]:
    """Per benchmark, the one comparison its answer sentence is about: the median (or its one
    ratio), on the datacenter path before the others, Docker's default mode first."""
    from pipeline.benchmarks import BENCHMARKS

    out: dict[str, Comparison] = {}
    for benchmark in dict.fromkeys(c.benchmark for c in found):
        cls = BENCHMARKS.get(benchmark)
        variants = {v: i for i, v in enumerate(getattr(cls, "variants", ()))}
        mine = [c for c in found if c.benchmark == benchmark]
        out[benchmark] = min(mine, key=lambda c: _order(c, variants))
    return out


def internet(found: list[Comparison], c: Comparison) -> Comparison | None:
    """The same comparison on the Internet path, when the headline is on another path."""
    if c.path == "internet":
        return None
    same = [o for o in found if o.path == "internet" and (o.benchmark, o.environment, o.mode,
            o.variant, o.statistic) == (c.benchmark, c.environment, c.mode, c.variant,
                                        c.statistic)]  # fmt: skip
    return same[0] if same else None


def _clause(numbers: Numbers, c: Comparison, prefix: str, conf: Number) -> str:
    _, ratio = ratio_number(numbers, c, prefix, measure=True)
    diff = diff_number(numbers, c, prefix)
    # judged on added microseconds, the Internet path's answer is the difference, not a ratio
    said = diff[1] if diff and c.margin_us is not None else ratio
    said += f", {diff[1]}" if diff and c.margin_us is None else ""
    if c.verdict in ("overhead", "faster"):
        return said
    return f"{said}: {verdict_text(numbers, c, prefix, conf)}"


def sentence(
    numbers: Numbers, c: Comparison, title: str, conf: Number, far: Comparison | None = None
) -> str:
    """One benchmark's answer: "**Cold start** (p50, `nginx`): Docker bridge 11.7x native's
    time [11.6, 11.8], +126.7 ms [+124.8, +128.6]."; the datacenter path and the host are
    implied. ``far``, the same comparison on the Internet path, adds its answer."""
    prefix = "summary.answer"
    detail = what(c, IMPLIED_PATHS)
    said = f"**{title}**" + (f" ({detail})" if detail else "") + f": {label(c.mode)} "
    said += _clause(numbers, c, prefix, conf)
    if far is not None:
        said += f"; Internet path {_clause(numbers, far, prefix, conf)}"
    return said + "."


def table(numbers: Numbers, found: list[Comparison], conf: Number, environments: int) -> str:
    """Every answerable comparison, one row each, in the article's reading order."""
    from pipeline.analysis.article.sections import SECTIONS

    order = list(SECTIONS)

    def rank(c: Comparison) -> tuple:
        return (order.index(c.benchmark) if c.benchmark in order else len(order), c.benchmark,
                c.environment, PATH_ORDER.index(c.path) if c.path in PATH_ORDER else 99,
                str(c.variant), str(c.statistic), figures.mode_rank(c.mode), c.mode)  # fmt: skip

    head = ["Benchmark", "Test", "Mode", "Ratio to native [CI]", "Difference [CI]", "Answer"]
    if environments > 1:
        head.insert(1, "Environment")
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join([":---"] * len(head)) + " |"]
    for c in sorted(answerable(found), key=rank):
        prefix = "findings"
        _, ratio = ratio_number(numbers, c, prefix)
        diff = diff_number(numbers, c, prefix)
        cells = [MEASURES.get(c.benchmark, c.benchmark), what(c), label(c.mode), ratio,
                 diff[1] if diff else "n/a", verdict_text(numbers, c, prefix, conf)]  # fmt: skip
        if environments > 1:
            cells.insert(1, f"`{c.environment}`")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def questions_paragraph(numbers: Numbers, asked: list[Comparison]) -> str:
    """The Methods' paragraph on a profile's headline questions: which comparisons they are,
    that precision planning went to them only, and how many a test resolved (the answers
    themselves are on the first page and in the answers table)."""
    if not asked:
        return ""
    source = asked[0].source
    total = numbers.add("methods.headline.questions", len(asked), "comparisons", source)
    done = numbers.add("methods.headline.resolved", sum(map(resolved, asked)), "comparisons",
                       source)  # fmt: skip
    named = "; ".join(f"{MEASURES.get(c.benchmark, c.benchmark)} ({what(c)}), {label(c.mode)}"
                      for c in asked)  # fmt: skip
    return (
        f"Headline questions: the profile names the comparisons it is for ({named}), before "
        "any data. Planning gave its further runs to these only (how many: the planned "
        "campaigns above); every other comparison kept its pilot runs. Their p-values are "
        "adjusted for multiplicity among themselves in each benchmark, the rest of its table "
        "without them (a table's caption names both families), and the smallest effect beside "
        "each holds under that rule. A test resolved "
        f"{done.text()} of these {total.text()} (a difference either way, or equivalence within "
        "the margin); for the others the first page gives the bound their interval allows."
    )
