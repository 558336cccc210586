"""params.yaml and its profiles: read safely, checked as a whole, resolved per stage.

Every problem is reported at once, one line each (the first 20 of a kind, then their count),
naming the key, what it must be and how to fix it; a value is quoted only briefly (a pasted secret
must not land in a log or an executed notebook). The files are read by ``pipeline.settings_yaml``,
as DVC reads them (YAML 1.2: ``runs: 010`` is 10 runs). The profile is a file of its own,
``conf/profiles/<profile>.yaml``, so that ``dvc exp run -S profile=smoke`` switches it and
``dvc exp show`` lists the chosen profile's values once.

    python -m pipeline.params            # check params.yaml and its profile; exit 2 on problems
"""

from __future__ import annotations

import difflib
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import settings_yaml
from pipeline.benchmarks import BENCHMARKS, Benchmark
from pipeline.hosts import PLACEMENTS

ROOT = Path(__file__).resolve().parent.parent
PARAMS_FILE = "params.yaml"
PROFILES_DIR = "conf/profiles"
# A name the stage commands and the file system may carry as it is (no quoting needed).
NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
# A repository-relative path without characters a shell or YAML would read specially.
REL_PATH = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/-]*$")
GO_PACKAGE = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_./-]*$")
TOP_KEYS = ("profile", "common", "environments", "lab", "modes", "analysis", "wan_calibration",
            "planning")
# Keys a params.yaml may leave out: no `modes:` plans what the profile says, no `planning:` keeps
# every cell at the profile's runs.
OPTIONAL_KEYS = ("modes", "planning")
# precision planning (pipeline/collect/planning.py): its settings and their defaults
PLANNING = {"enabled": False, "target_half_width": 0.05, "budget_minutes": 60, "max_runs": 10}
# how a planned comparison's run count is fixed (optional, default stein): from the pilot's SD
# (Stein), or max_runs for each planned comparison, decided before any data (fixed)
PLANNING_RULES = ("stein", "fixed")
MARGINS = ("network", "cpu", "memory", "disk")
WINDOW_KEYS = ("runs", "seconds", "omit_seconds", "warmup_seconds", "count", "warmup_count")
# A profile may measure fewer modes, paths or variants of a benchmark than it applies to (the
# demo does): comma-separated names; params.yaml's `modes:` entry for the benchmark, when set,
# wins. A profile's `without_modes` (comma-separated) are left out of every benchmark's "all".
PLAN_KEYS = ("modes", "paths", "variants")
# an instrument's optional `variants`: benchmark -> the variants its check measures (default all)
INSTRUMENT_KEYS = ("runs", "benchmarks", "compile_packages", "variants")
# A profile's `headline:` names the comparisons it is for, per benchmark: modes (against native)
# and, optionally, paths and variants (default: every one the profile measures). Precision
# planning then spends the profile's budget on those comparisons only; a benchmark it does not
# name gets its pilot runs.
HEADLINE_KEYS = ("modes", "paths", "variants")
JITTER_DISTS = ("normal", "uniform")
# the interference watch's thresholds (pipeline/analysis/interference.py): their ranges
INTERFERENCE = {"interference_cpus": (0, 10**4), "interference_steal": (0, 1),
                "interference_probe": (1, 10**3)}  # fmt: skip
# how many times a step whose window the watch flagged is measured again (optional; default 2)
INTERFERENCE_RETRIES = ("interference_retries", 0, 10)
MULTIPLICITY = ("holm", "bh", "none")  # stats.MULTIPLICITY: params must not import analysis


class ParamsError(ValueError):
    """params.yaml or its profile is wrong; the message lists every problem with its fix."""

    def __init__(self, source: str, problems: list[str]):
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in settings_yaml.bounded(problems))
        super().__init__(f"{source}: {len(problems)} problem(s):\n{lines}")


def read_document(path: Path, root: Path | None = None) -> settings_yaml.Document:
    """A settings file read as DVC reads it (``pipeline.settings_yaml``), with the line of
    each key; a clear ParamsError for a file that cannot be read, a key given twice, or a value
    that looks like a secret (named by its key, never printed). ``root`` is the repository a
    symbolic link may not lead out of."""
    try:
        doc = settings_yaml.read(path, root=root or ROOT, what="a settings file")
    except settings_yaml.SettingsFileError as exc:
        raise ParamsError(str(path), [exc.problem]) from None
    problems = [f"{where}: {message}" for where, message in doc.duplicates]
    problems += [
        f"{where}: looks like {kind}; the value is not shown. Settings files hold no "
        "secrets: remove it (keys belong in a file named by an inventory's ssh.key_file)"
        for where, kind in doc.secrets
    ]  # fmt: skip
    if problems:
        raise ParamsError(str(path), problems)
    return doc


def read_yaml(path: Path, root: Path | None = None) -> Any:
    """A settings file's content (see :func:`read_document`)."""
    return read_document(path, root).data


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _suggest(word: str, choices) -> str:
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class _Check:
    def __init__(self, lines: dict[str, int] | None = None, source: str = "") -> None:
        self.problems: list[str] = []
        self.lines = lines or {}  # a key path inside the file -> the line of the key
        self.source = source

    def add(self, key: str, text: str) -> None:
        self.problems.append(f"{key}: {text}")

    def mapping(self, value: Any, key: str) -> dict | None:
        if not isinstance(value, dict):
            self.add(key, f"must be a mapping (key: value lines), got {_brief(value)}")
            return None
        return value

    def keys(self, value: dict, key: str, known) -> None:
        inside = "" if key == self.source else key.removeprefix(f"{self.source}.")
        for k in value:
            if k not in known:
                # the key is named only when it looks like a name, and its value never
                shown = settings_yaml.key_text(k)
                name = k if not shown.startswith("(") else "?"
                line = self.lines.get(f"{inside}.{k}" if inside else str(k))
                at = f", line {line}" if line else ""
                hint = _suggest(k, known) if not shown.startswith("(") else f" {shown}"
                self.add(f"{key}.{name}", f"unknown setting{hint}{at}; known: "
                                          f"{', '.join(known)}")  # fmt: skip

    def number(
        self, value: Any, key: str, lo: float, hi: float = math.inf, *,
        lo_open: bool = False, hi_open: bool = False, integer: bool = False,
    ) -> None:  # fmt: skip
        kind = "a whole number" if integer else "a number"
        ok = _is_int(value) if integer else _is_number(value)
        if ok:
            above = value > lo if lo_open else value >= lo
            below = value < hi if hi_open else value <= hi
            ok = above and below
        if not ok:
            left, right = "(" if lo_open else "[", ")" if hi_open or hi == math.inf else "]"
            span = f"{left}{lo:g}, {'inf' if hi == math.inf else f'{hi:g}'}{right}"
            self.add(key, f"must be {kind} in {span}, got {_brief(value)}")


def _check_window(check: _Check, entry: dict, key: str, bench: Benchmark) -> None:
    if "runs" in entry:
        check.number(entry["runs"], f"{key}.runs", 1, 1000, integer=True)
    timed = bench.kind in ("network", "host") or "seconds" in entry
    if timed:
        if "seconds" not in entry:
            check.add(f"{key}.seconds", "missing: the measured window's length in seconds")
        else:
            check.number(entry["seconds"], f"{key}.seconds", 0, 86400, lo_open=True)
    for name in ("omit_seconds", "warmup_seconds"):
        if name in entry:
            check.number(entry[name], f"{key}.{name}", 0, 86400)
    if "placement" in entry and entry["placement"] not in PLACEMENTS:
        check.add(f"{key}.placement", f"must be one of {', '.join(PLACEMENTS)}, got "
                                      f"{_brief(entry['placement'])}")  # fmt: skip
    for name in bench.whole_seconds:
        if _is_number(entry.get(name)) and not float(entry[name]).is_integer():
            check.add(f"{key}.{name}", f"must be whole seconds ({bench.tool} reads it as an "
                      f"integer and would cut it), got {entry[name]:g}")  # fmt: skip
    seconds, omit = entry.get("seconds"), entry.get("omit_seconds", 0)
    if _is_number(seconds) and _is_number(omit) and omit >= seconds > 0:
        check.add(f"{key}.omit_seconds", f"must be shorter than the window ({seconds:g} s): "
                                         f"got {omit:g}")  # fmt: skip
    if bench.warmup_in_window:
        for name in ("count", "warmup_count"):
            if name not in entry:
                check.add(f"{key}.{name}", "missing: samples per window (a count-based tool)")
        if "count" in entry:
            check.number(entry["count"], f"{key}.count", 1, 10**9, integer=True)
        if "warmup_count" in entry:
            check.number(entry["warmup_count"], f"{key}.warmup_count", 0, 10**9, integer=True)


def _names(value: Any) -> list[str]:
    return [v.strip() for v in value.split(",")] if isinstance(value, str) else []


def _check_plan(check: _Check, entry: dict, key: str, bench: Benchmark) -> None:
    from pipeline.collect.modes import MODES

    if "modes" in entry:
        names = _names(entry["modes"])
        unknown = [m for m in names if m not in MODES]
        if not names or unknown or "" in names:
            check.add(f"{key}.modes", f"must be comma-separated mode names; unknown: "
                      f"{', '.join(map(_brief, unknown or [entry['modes']]))}"
                      f"{_suggest(unknown[0], MODES) if unknown else ''}; modes: "
                      f"{', '.join(MODES)}")  # fmt: skip
        elif bench.modes is not None and not any(m in bench.modes for m in names):
            check.add(f"{key}.modes", f"none of them is a mode {bench.name} runs in: "
                                      f"{', '.join(bench.modes)}")  # fmt: skip
    if "paths" in entry:
        names = _names(entry["paths"])
        if not names or any(p not in bench.paths for p in names):
            check.add(f"{key}.paths", f"must be comma-separated paths of {bench.name}: "
                      f"{', '.join(bench.paths)}; got {_brief(entry['paths'])}")  # fmt: skip
    if "variants" in entry:
        names = _names(entry["variants"])
        if not names or any(v not in bench.variants for v in names):
            check.add(f"{key}.variants", f"must be comma-separated variants of {bench.name}: "
                      f"{', '.join(bench.variants)}; got {_brief(entry['variants'])}")  # fmt: skip


def _check_options(check: _Check, entry: dict, key: str, bench: Benchmark) -> None:
    for name, default in bench.options.items():
        if name not in entry:
            continue
        value = entry[name]
        if isinstance(default, str):
            if not isinstance(value, str) or not value.strip():
                check.add(f"{key}.{name}", f"must be a non-empty text, got {_brief(value)}")
            elif name == "compile_packages":
                _check_packages(check, value, f"{key}.{name}")
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                check.add(f"{key}.{name}", f"must be true or false, got {_brief(value)}")
        elif _is_int(default):
            check.number(value, f"{key}.{name}", 1, 10**9, integer=True)
        else:
            check.number(value, f"{key}.{name}", 0, 10**9, lo_open=True)


def _check_packages(check: _Check, value: str, key: str) -> None:
    # The words reach `go build` as arguments: one starting with '-' would be an option.
    if not all(GO_PACKAGE.match(w) for w in value.split()):
        check.add(key, f"must be Go package patterns separated by spaces (e.g. \"std cmd\"), "
                       f"none starting with '-', got {_brief(value)}")  # fmt: skip


def check_profile(profile: Any, source: str, lines: dict[str, int] | None = None) -> list[str]:
    """Every problem of one profile file (``source`` names it in the messages; ``lines``, the
    line of each key, lets a message about an unknown key say where it is)."""
    check = _Check(lines, source)
    doc = check.mapping(profile, source)
    if doc is None:
        return check.problems
    known = ("runs", "reps", *BENCHMARKS, "instrument", "wan_calibration", "leaves_out",
             "without_modes", "planning", "headline")
    check.keys(doc, source, known)
    if "headline" in doc:
        _check_headline(check, doc, f"{source}.headline")
    if "planning" in doc and (own := check.mapping(doc["planning"], f"{source}.planning")):
        _check_planning(check, own, f"{source}.planning")
    if "without_modes" in doc:
        from pipeline.collect.modes import STUDY_MODES

        names = _names(doc["without_modes"])
        if not names or any(m not in STUDY_MODES for m in names):
            check.add(f"{source}.without_modes", f"must be comma-separated mode names; modes: "
                      f"{', '.join(STUDY_MODES)}; got {_brief(doc['without_modes'])}")  # fmt: skip
    for name in ("runs", "reps"):
        if name not in doc:
            check.add(f"{source}.{name}", "missing")
        else:
            check.number(doc[name], f"{source}.{name}", 1, 1000, integer=True)
    for name, cls in BENCHMARKS.items():
        key = f"{source}.{name}"
        if name not in doc:
            check.add(key, f"missing: every benchmark needs its entry (its window and options); "
                           f"see {PROFILES_DIR}/smoke.yaml")  # fmt: skip
            continue
        entry = check.mapping(doc[name], key)
        if entry is None:
            continue
        bench = cls()
        check.keys(entry, key, (*WINDOW_KEYS, *PLAN_KEYS, *bench.options))
        _check_window(check, entry, key, bench)
        _check_plan(check, entry, key, bench)
        _check_options(check, entry, key, bench)
    leaves_out = doc.get("leaves_out", [])
    if not isinstance(leaves_out, list) or not all(
        isinstance(x, str) and x.strip() for x in leaves_out
    ):
        check.add(f"{source}.leaves_out", "must be a list of sentences (what the profile does "
                                          "not measure, for the article)")  # fmt: skip
    cal = doc.get("wan_calibration")
    if cal is None:
        check.add(f"{source}.wan_calibration", "missing: the WAN calibration's latency variants, "
                                               "e.g. {variants: \"udp,tcp\"}")  # fmt: skip
    elif (cal := check.mapping(cal, f"{source}.wan_calibration")) is not None:
        check.keys(cal, f"{source}.wan_calibration", ("variants",))
        _check_plan(check, cal, f"{source}.wan_calibration", BENCHMARKS["latency"]())
        if "variants" not in cal:
            check.add(f"{source}.wan_calibration.variants", "missing: e.g. \"udp,tcp\"")
    inst = doc.get("instrument")
    if inst is None:
        check.add(f"{source}.instrument", "missing: the instrument check's runs and benchmarks")
    elif (inst := check.mapping(inst, f"{source}.instrument")) is not None:
        check.keys(inst, f"{source}.instrument", INSTRUMENT_KEYS)
        check.number(inst.get("runs"), f"{source}.instrument.runs", 1, 1000, integer=True)
        from pipeline.collect.instrument import CHECKS

        wanted = inst.get("benchmarks")
        names = [b.strip() for b in wanted.split(",")] if isinstance(wanted, str) else []
        if not names or any(b not in CHECKS for b in names):
            check.add(f"{source}.instrument.benchmarks", f"must be a comma-separated list from "
                      f"{', '.join(CHECKS)}, got {_brief(wanted)}")  # fmt: skip
        chosen = inst.get("variants", {})
        if (chosen := check.mapping(chosen, f"{source}.instrument.variants")) is not None:
            for bench_name, value in chosen.items():
                key = f"{source}.instrument.variants"
                if bench_name not in names:
                    check.add(key, f"{_brief(bench_name)} is not one of the check's benchmarks "
                                   f"({', '.join(names)})")  # fmt: skip
                else:
                    bench = BENCHMARKS[bench_name]()
                    listed = _names(value) if isinstance(value, str) else []
                    if not listed or any(v not in bench.variants for v in listed):
                        check.add(f"{key}.{bench_name}", f"must be comma-separated variants of "
                                  f"{bench_name}: {', '.join(bench.variants)}; got "
                                  f"{_brief(value)}")  # fmt: skip
        if not isinstance(inst.get("compile_packages"), str):
            check.add(f"{source}.instrument.compile_packages", "must be a text, e.g. errors")
        else:
            key = f"{source}.instrument.compile_packages"
            _check_packages(check, inst["compile_packages"], key)
    return check.problems


def _check_headline(check: _Check, doc: dict, key: str) -> None:
    """The profile's ``headline``: benchmarks it measures, each with modes (not native) among
    those the profile plans for it, and paths and variants among its planned ones."""
    headline = check.mapping(doc["headline"], key)
    if not headline:  # {}: no headline, every comparison is one of the profile's questions
        return
    for name, entry in headline.items():
        at = f"{key}.{name}"
        if name not in BENCHMARKS:
            check.add(at, f"not a benchmark{_suggest(str(name), BENCHMARKS)}")
            continue
        entry = check.mapping(entry, at)
        if entry is None:
            continue
        check.keys(entry, at, HEADLINE_KEYS)
        planned = doc.get(name) if isinstance(doc.get(name), dict) else {}
        for field in HEADLINE_KEYS:
            value = entry.get(field)
            if value is None:
                if field == "modes":
                    check.add(f"{at}.modes", "missing: the modes compared with native")
                continue
            names = _names(value) if isinstance(value, str) else []
            allowed = planned.get(field, "all")
            allowed = None if allowed == "all" else _names(str(allowed))
            wrong = [n for n in names if n == "native" or (allowed and n not in allowed)]
            if not names or wrong:
                where = f"{name}.{field}: {', '.join(allowed)}" if allowed else "the benchmark"
                check.add(f"{at}.{field}", f"must be comma-separated {field} the profile measures "
                          f"({where}; native is the baseline, not a comparison), got "
                          f"{_brief(value)}")  # fmt: skip


def check_params(
    params: Any, root: Path | None = None, lines: dict[str, int] | None = None
) -> list[str]:
    """Every problem of params.yaml itself (the profile file is checked by check_profile)."""
    root = root or ROOT
    check = _Check(lines, PARAMS_FILE)
    doc = check.mapping(params, PARAMS_FILE)
    if doc is None:
        return check.problems
    check.keys(doc, PARAMS_FILE, TOP_KEYS)
    for key in TOP_KEYS:
        if key not in doc and key not in OPTIONAL_KEYS:
            check.add(key, "missing")
    profile = doc.get("profile")
    if not isinstance(profile, str) or not NAME.match(profile):
        check.add("profile", f"must be a profile name (a file {PROFILES_DIR}/<name>.yaml), "
                             f"got {_brief(profile)}")  # fmt: skip
    elif not os.path.lexists(root / PROFILES_DIR / f"{profile}.yaml"):
        have = sorted(p.stem for p in (root / PROFILES_DIR).glob("*.yaml"))
        check.add("profile", f"no file {PROFILES_DIR}/{profile}.yaml{_suggest(profile, have)}; "
                             f"profiles: {', '.join(have)}")  # fmt: skip
    common = check.mapping(doc.get("common"), "common") if "common" in doc else None
    if common is not None:
        check.keys(common, "common", ("seed", "margins"))
        check.number(common.get("seed"), "common.seed", 0, 2**32 - 1, integer=True)
        margins = check.mapping(common.get("margins"), "common.margins")
        if margins is not None:
            check.keys(margins, "common.margins", MARGINS)
            for name in MARGINS:
                check.number(margins.get(name), f"common.margins.{name}", 0, 1,
                             lo_open=True, hi_open=True)  # fmt: skip
    envs = check.mapping(doc.get("environments"), "environments") if "environments" in doc else None
    if envs is not None:
        if not envs:
            check.add("environments", "must name at least one environment, e.g. "
                                      "lab: inventory/lab.yaml")  # fmt: skip
        for name, path in envs.items():
            if not isinstance(name, str) or not NAME.match(name):
                check.add(f"environments.{_brief(name)}", "an environment name is lowercase "
                          "letters, digits and '-', starting with a letter (it names stages "
                          "and directories)")  # fmt: skip
            if (not isinstance(path, str) or not REL_PATH.match(path) or len(path) > 255
                    or ".." in path.split("/")):
                check.add(f"environments.{name}", f"must be a relative path inside the "
                          f"repository (letters, digits, . _ - /), got {_brief(path)}")  # fmt: skip
            elif not (root / path).is_file():
                check.add(f"environments.{name}", f"{path} does not exist (start from "
                          "inventory/example-hosts.yaml)")  # fmt: skip
    lab = check.mapping(doc.get("lab"), "lab") if "lab" in doc else None
    wan = check.mapping(lab.get("wan"), "lab.wan") if lab is not None else None
    if lab is not None:
        check.keys(lab, "lab", ("wan",))
    if wan is not None:
        check.keys(wan, "lab.wan", ("delay_ms", "jitter_ms", "jitter_dist", "loss_pct", "seed"))
        check.number(wan.get("delay_ms"), "lab.wan.delay_ms", 0, 10000)
        check.number(wan.get("jitter_ms"), "lab.wan.jitter_ms", 0, 10000)
        check.number(wan.get("loss_pct"), "lab.wan.loss_pct", 0, 100, hi_open=True)
        check.number(wan.get("seed"), "lab.wan.seed", 0, 2**32 - 1, integer=True)
        if wan.get("jitter_dist") not in JITTER_DISTS:
            check.add("lab.wan.jitter_dist", f"must be one of {', '.join(JITTER_DISTS)}, got "
                                             f"{_brief(wan.get('jitter_dist'))}")  # fmt: skip
    modes = doc.get("modes", {})
    if check.mapping(modes, "modes") is not None:
        _check_modes(check, modes)
    analysis = check.mapping(doc.get("analysis"), "analysis") if "analysis" in doc else None
    if analysis is not None:
        check.keys(analysis, "analysis", ("confidence", "n_sim", "predict_at", "multiplicity",
                                          "udp_loss_margin", "internet_margin_us",
                                          *INTERFERENCE, INTERFERENCE_RETRIES[0]))  # fmt: skip
        for key, (lo, hi) in INTERFERENCE.items():
            check.number(analysis.get(key), f"analysis.{key}", lo, hi, lo_open=True)
        retries, lo, hi = INTERFERENCE_RETRIES
        if retries in analysis:
            check.number(analysis[retries], f"analysis.{retries}", lo, hi, integer=True)
        check.number(analysis.get("confidence"), "analysis.confidence", 0.5, 1, hi_open=True)
        check.number(analysis.get("n_sim"), "analysis.n_sim", 10, 10**5, integer=True)
        check.number(analysis.get("predict_at"), "analysis.predict_at", 1, 10**5, integer=True)
        check.number(analysis.get("udp_loss_margin"), "analysis.udp_loss_margin", 0, 1,
                     lo_open=True, hi_open=True)  # fmt: skip
        check.number(analysis.get("internet_margin_us"), "analysis.internet_margin_us", 0, 10**6,
                     lo_open=True)  # fmt: skip
        if analysis.get("multiplicity") not in MULTIPLICITY:
            got = _brief(analysis.get("multiplicity"))
            allowed = ", ".join(MULTIPLICITY)
            check.add("analysis.multiplicity", f"must be one of {allowed}, got {got}")
    if "planning" in doc and (planning := check.mapping(doc["planning"], "planning")) is not None:
        _check_planning(check, planning)
    cal = check.mapping(doc.get("wan_calibration"), "wan_calibration") if (
        "wan_calibration" in doc) else None  # fmt: skip
    if cal is not None:
        check.keys(cal, "wan_calibration", ("delays_ms",))
        try:
            delays = parse_floats(cal.get("delays_ms"))
            if not delays or min(delays) < 0:
                raise ValueError
        except (TypeError, ValueError):
            check.add("wan_calibration.delays_ms", "must be comma-separated delays in ms (>= 0), "
                      f"e.g. \"0,20\", got {_brief(cal.get('delays_ms'))}")  # fmt: skip
    return check.problems


def _check_planning(check: _Check, planning: dict, key: str = "planning") -> None:
    """One ``planning`` block (params.yaml's, or a profile's, named ``key``): known keys, and
    every setting stated where it enables planning."""
    check.keys(planning, key, (*PLANNING, "rule"))
    if "rule" in planning and planning["rule"] not in PLANNING_RULES:
        check.add(f"{key}.rule", f"must be one of {', '.join(PLANNING_RULES)}, got "
                                 f"{_brief(planning['rule'])}")  # fmt: skip
    if "enabled" in planning and not isinstance(planning["enabled"], bool):
        check.add(f"{key}.enabled", f"must be true or false, got {_brief(planning['enabled'])}")
    if planning.get("enabled") is True:
        # the fixed rule plans max_runs for each comparison: no target enters
        unused = ("target_half_width",) if planning.get("rule") == "fixed" else ()
        for name in PLANNING:
            if name not in planning and name not in unused:
                check.add(f"{key}.{name}", f"missing: planning is enabled (e.g. "
                                           f"{name}: {PLANNING[name]})")  # fmt: skip
    # the half-width is on the log scale: 0.05 is an interval of about +-5% around the ratio
    if "target_half_width" in planning:
        check.number(planning["target_half_width"], f"{key}.target_half_width", 0, 1,
                     lo_open=True)  # fmt: skip
    if "budget_minutes" in planning:
        check.number(planning["budget_minutes"], f"{key}.budget_minutes", 0, 10**6)
    if "max_runs" in planning:  # two runs at least: one pair gives no interval
        check.number(planning["max_runs"], f"{key}.max_runs", 2, 1000, integer=True)


def merged_planning(raw: Any, profile: Any) -> dict:
    """The planning a campaign runs with: the defaults, then params.yaml's ``planning``, then
    the profile's own ``planning`` block, key by key (a profile states its budget; params.yaml's
    block holds for profiles without one)."""
    given = raw.get("planning") if isinstance(raw, dict) else None
    own = profile.get("planning") if isinstance(profile, dict) else None
    return {**PLANNING, **(given if isinstance(given, dict) else {}),
            **(own if isinstance(own, dict) else {})}  # fmt: skip


def _check_modes(check: _Check, modes: dict) -> None:
    from pipeline.collect.modes import MODES

    for name, value in modes.items():
        if name not in BENCHMARKS:
            shown = settings_yaml.key_text(name)  # an unknown key is named only if name-like
            hidden = shown.startswith("(")
            check.add(f"modes.{'?' if hidden else name}",
                      f"not a benchmark{f' {shown}' if hidden else _suggest(name, BENCHMARKS)}; "
                      f"benchmarks: {', '.join(BENCHMARKS)}")  # fmt: skip
            continue
        if value == "all":
            continue
        names = [m.strip() for m in value.split(",")] if isinstance(value, str) else []
        unknown = [m for m in names if m not in MODES]
        if not names or unknown or "" in names:
            check.add(f"modes.{name}", f"must be \"all\" or comma-separated mode names; "
                      f"unknown: {', '.join(map(_brief, unknown or [value]))}; modes: "
                      f"{', '.join(MODES)}")  # fmt: skip


def parse_floats(text: Any) -> list[float]:
    if not isinstance(text, str):
        raise TypeError("not a text")
    values = [float(v) for v in text.split(",")]
    if not all(math.isfinite(v) for v in values):
        raise ValueError("not finite")
    return values


@dataclass(frozen=True)
class Params:
    """params.yaml with its profile, checked."""

    raw: dict
    profile: dict  # conf/profiles/<raw["profile"]>.yaml

    @property
    def environments(self) -> dict[str, str]:
        return dict(self.raw["environments"])

    def wan(self) -> dict:
        return dict(self.raw["lab"]["wan"])

    def modes(self, benchmark: str) -> list[str] | None:
        """The benchmark's planned modes (None: every mode it applies to): params.yaml's
        `modes:` entry, else the profile's, else all."""
        value = self.raw.get("modes", {}).get(benchmark)
        if value is None:
            value = self.profile[benchmark].get("modes", "all")
            without = [m for m in _names(self.profile.get("without_modes", "")) if m]
            if value == "all" and without:  # the profile's "all" leaves these out
                from pipeline.collect.modes import STUDY_MODES

                return [m for m in STUDY_MODES if m not in without]
        return None if value == "all" else [m.strip() for m in value.split(",")]

    def paths(self, benchmark: str) -> list[str] | None:
        """The benchmark's planned paths (None: every path it applies to)."""
        value = self.profile[benchmark].get("paths")
        return None if value is None else [p.strip() for p in value.split(",")]

    def variants(self, benchmark: str) -> list[str] | None:
        """The benchmark's planned variants (None: every variant it has); ``wan_calibration``
        names the calibration's latency variants."""
        value = self.profile[benchmark].get("variants")
        return None if value is None else [v.strip() for v in value.split(",")]

    def planning(self, benchmark: str | None = None) -> dict:
        """params.yaml's ``planning`` with its defaults and ``analysis.confidence`` (the level of
        the interval whose half-width it plans), the profile's own ``planning`` block over it
        (``merged_planning``): the campaign's ``planning`` argument. With a profile that names
        its headline comparisons, ``benchmark``'s planning covers those only (``headline``:
        [mode, path, variant] triples, "*" for every path or variant), and is off for a
        benchmark it does not name."""
        planning = {**merged_planning(self.raw, self.profile),
                    "confidence": float(self.raw["analysis"]["confidence"])}  # fmt: skip
        pairs = self.headline(benchmark) if benchmark is not None else None
        if pairs is not None:
            planning["headline"] = [list(p) for p in pairs]
            if not pairs:
                planning["enabled"] = False
        return planning

    def headline(self, benchmark: str) -> list[tuple[str, str, str]] | None:
        """The profile's headline comparisons of ``benchmark`` as (mode, path, variant), "*" for
        every path or variant it measures; [] when the profile names others only, None when it
        names none (every comparison is a question then)."""
        headline = self.profile.get("headline")
        if not headline:
            return None
        entry = headline.get(benchmark)
        if not entry:
            return []
        paths = _names(entry["paths"]) if entry.get("paths") else ["*"]
        variants = _names(entry["variants"]) if entry.get("variants") else ["*"]
        return [(m, p, v) for m in _names(entry["modes"]) for p in paths for v in variants]

    def interference(self) -> dict:
        """params.yaml's ``analysis.interference_*`` settings: the flagging thresholds and the
        re-measurements of a flagged step (the campaign's ``interference`` argument)."""
        keys = (*INTERFERENCE, INTERFERENCE_RETRIES[0])
        return {k: v for k, v in self.raw["analysis"].items() if k in keys}

    @property
    def leaves_out(self) -> list[str]:
        """What the profile does not measure, in sentences (the article says it)."""
        return list(self.profile.get("leaves_out", []))

    def window(self, benchmark: str, entry: dict | None = None) -> dict:
        """The campaign's window settings (``pipeline.collect.campaign.Profile``'s fields)."""
        entry = self.profile[benchmark] if entry is None else entry
        window = {
            "runs": int(entry.get("runs", self.profile["runs"])),
            "reps": int(self.profile["reps"]),
            "seconds": float(entry.get("seconds", 0.0)),
            "omit_seconds": float(entry.get("omit_seconds", 0.0)),
            "warmup_seconds": float(entry.get("warmup_seconds", 0.0)),
        }
        if "count" in entry:
            window["count"] = int(entry["count"])
            window["warmup_count"] = int(entry.get("warmup_count", 0))
        return window

    def options(self, benchmark: str) -> dict:
        """The benchmark's own settings (``Benchmark.options``) the profile sets."""
        entry = self.profile[benchmark]
        return {k: v for k, v in entry.items() if k not in (*WINDOW_KEYS, *PLAN_KEYS)}


def _check_pilot(raw: dict, profile: Any) -> list[str]:
    """Planning adds runs to the profile's: a max_runs below them would add none."""
    planning = merged_planning(raw, profile)
    if planning.get("enabled") is not True:
        return []
    runs = profile.get("runs") if isinstance(profile, dict) else None
    most = planning.get("max_runs")
    if _is_int(runs) and _is_int(most) and most < runs:
        return [f"planning.max_runs: {most} is below the profile's {runs} runs (its pilot), so "
                f"planning would add no run; set it to {runs} or more, or planning.enabled: false"]
    return []


def load(params_file: str | Path = PARAMS_FILE, root: Path | None = None) -> Params:
    """params.yaml and its profile, checked; ParamsError lists every problem of both."""
    root = root or ROOT
    path = Path(params_file) if Path(params_file).is_absolute() else root / params_file
    doc = read_document(path, root)
    raw = doc.data
    problems = check_params(raw, root, doc.lines)
    profile: Any = None
    if isinstance(raw, dict) and isinstance(raw.get("profile"), str) and NAME.match(raw["profile"]):
        profile_path = root / PROFILES_DIR / f"{raw['profile']}.yaml"
        if os.path.lexists(profile_path):  # a link, FIFO or device is named by the reader
            try:
                profile_doc = read_document(profile_path, root)
            except ParamsError as exc:
                problems += [f"{PROFILES_DIR}/{raw['profile']}.yaml: {p}" for p in exc.problems]
            else:
                profile = profile_doc.data
                problems += check_profile(profile, f"{PROFILES_DIR}/{raw['profile']}.yaml",
                                          profile_doc.lines)  # fmt: skip
                problems += _check_pilot(raw, profile)
    if problems:
        raise ParamsError(str(params_file), problems)
    return Params(raw=raw, profile=profile)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    params_file = args[0] if args else PARAMS_FILE
    try:
        params = load(params_file)
    except ParamsError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"{params_file}: valid (profile {params.raw['profile']}, environments "
          f"{', '.join(params.environments)})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
