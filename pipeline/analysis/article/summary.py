"""The article's first page: what was measured on what, then one answer per benchmark.

The setup is read from what the campaigns recorded: the hosts facts (cores, CPU, memory,
kernel, and the virtualisation where a campaign recorded it), the runs' notes (the lab's
emulated wide-area path, which only an embedded-lab campaign records) and the profile. Each
benchmark measured then gets one sentence about one comparison (``answers.headline``: the
median, the datacenter path, Docker's default mode first) with its ratio to native and its
absolute difference, and what the verdict lets a reader say (``answers``). What a lab on one
small machine cannot tell is said once. Every other comparison is in the findings table.
"""

from __future__ import annotations

import json

import pandas as pd

from pipeline.analysis.article import answers
from pipeline.analysis.article.comparisons import MEASURES, Comparison
from pipeline.analysis.article.inputs import RANK, RATIO_T, Inputs, figure_refs, missing
from pipeline.analysis.article.numbers import Number, Numbers
from pipeline.analysis.article.sections import _FIT, SECTIONS

# Profiles that check the pipeline rather than measure the answers (conf/profiles/).
CHECK_PROFILES = {"demo", "smoke"}
FACTS = ["kernel", "cpu_model", "cpu_count", "mem_total_bytes"]
# what makes hosts one machine: the CPUs a host sees are not, since a CPU placement pins each
# of the lab's hosts to a share of the machine's (the machine has the most any host saw)
MACHINE = ["kernel", "cpu_model", "mem_total_bytes"]
VIRTUALISATION = ("virtualization", "virtualisation", "virt")


def _level(inputs: Inputs, numbers: Numbers) -> Number:
    return numbers.add(
        "methods.confidence_pct", round(100 * inputs.confidence, 9), "%", "parameters"
    )


def _hosts(inputs: Inputs, benchmarks: list[str]) -> pd.DataFrame:
    frames = [f for b in benchmarks if (f := inputs.raw_table(b, "hosts")) is not None]
    if not frames:
        return pd.DataFrame()
    hosts = pd.concat(frames, ignore_index=True)
    hosts["cpu_count"] = pd.to_numeric(hosts.get("cpu_count"), errors="coerce")
    hosts["mem_total_bytes"] = pd.to_numeric(hosts.get("mem_total_bytes"), errors="coerce")
    return hosts


def _wan(inputs: Inputs, benchmarks: list[str]) -> tuple[dict, str] | None:
    """The emulated wide-area path as a lab campaign recorded it in its runs' notes, with the
    benchmark it was read from."""
    for b in benchmarks:
        runs = inputs.raw_table(b, "runs")
        if runs is None or "notes" not in runs.columns:
            continue
        for text in runs["notes"].dropna():
            try:
                wan = json.loads(text).get("wan")
            except (ValueError, AttributeError):
                continue
            if isinstance(wan, dict) and "delay_ms" in wan:
                return wan, b
    return None


def _machine(inputs: Inputs, numbers: Numbers, benchmarks: list[str]) -> tuple[list[str], bool]:
    """Sentences on the hosts and whether they are one machine (the embedded lab): hosts with
    the same facts in an environment whose campaigns recorded the lab's emulated path (only a
    lab inventory records it) or that is named "lab"."""
    hosts = _hosts(inputs, benchmarks)
    if hosts.empty:
        return ["No campaign recorded its hosts."], False
    wan = _wan(inputs, benchmarks)
    source = inputs.raw
    said, lab = [], False
    for env, rows in hosts.groupby("environment", sort=True):
        names = rows["host"].nunique()
        facts = rows[FACTS].drop_duplicates()
        one = len(rows[MACHINE].drop_duplicates()) == 1 and (wan is not None or env == "lab")
        lab |= one
        n = numbers.add(f"summary.setup.{env}.hosts", names, "hosts", source)
        f = facts.iloc[0].copy()
        if one:
            f["cpu_count"] = rows["cpu_count"].max()
        parts = []
        if not missing(f["cpu_count"]):
            cores = numbers.add(f"summary.setup.{env}.cores", f["cpu_count"], "cores", source,
                                decimals=0)  # fmt: skip
            parts.append(f"{cores.text()} cores")
        if not missing(f["mem_total_bytes"]):
            mem = numbers.add(f"summary.setup.{env}.memory_gib", f["mem_total_bytes"] / 2**30,
                              "GiB", source, decimals=1)  # fmt: skip
            parts.append(f"{mem.text()} GiB")
        if not missing(f["cpu_model"]):
            parts.append(f"CPU `{f['cpu_model']}`")
        if not missing(f["kernel"]):
            parts.append(f"kernel `{f['kernel']}`")
        virt = next((c for c in VIRTUALISATION if c in rows.columns), None)
        kinds = sorted(set(rows[virt].dropna().astype(str))) if virt else []
        parts.append(f"virtualisation `{', '.join(kinds)}`" if kinds
                     else "virtualisation not recorded in the hosts facts")  # fmt: skip
        where = f" in `{env}`" if hosts["environment"].nunique() > 1 else ""
        hosts_text = f"{n.text()} host{'s' * (names != 1)}"
        if one:
            what = ("hosts that are network namespaces" if names != 1
                    else "host that is a network namespace")  # fmt: skip
            said.append(
                f"Measured{where} on {n.text()} {what} of one machine (the embedded lab: "
                f"virtual Ethernet, no physical NIC): {', '.join(parts)}."
            )
        else:
            said.append(f"Measured{where} on {hosts_text}: " + ", ".join(parts) + ".")
        if one and wan is not None:
            said.append(_wan_text(inputs, numbers, wan))
    return said, lab


def _wan_text(inputs: Inputs, numbers: Numbers, found: tuple[dict, str]) -> str:
    wan, benchmark = found
    source = inputs.raw / benchmark
    delay = numbers.add("summary.setup.wan.delay_ms", wan["delay_ms"], "ms", source)
    rtt = numbers.add("summary.setup.wan.added_rtt_ms", 2 * float(wan["delay_ms"]), "ms", source)
    text = (
        f"Its \"Internet\" path is emulated there: {delay.text()} ms added each way "
        f"({rtt.text()} ms per round trip)"
    )
    if float(wan.get("jitter_ms") or 0):
        jitter = numbers.add("summary.setup.wan.jitter_ms", wan["jitter_ms"], "ms", source)
        text += f", {jitter.text()} ms jitter ({wan.get('jitter_dist', 'normal')})"
    if float(wan.get("loss_pct") or 0):
        loss = numbers.add("summary.setup.wan.loss_pct", wan["loss_pct"], "%", source)
        text += f", {loss.text()}% loss"
    return text + "."


def _profile(profile: str | None) -> str:
    if not profile:
        return ""
    if profile in CHECK_PROFILES:
        return (
            f"This is a **{profile}**-profile run: a check that the pipeline works end to end, "
            "with few runs and modes, **not a result**; the study profile measures the answers."
        )
    return f"Profile: **{profile}**."


def _cannot_tell(inputs: Inputs, numbers: Numbers) -> str:
    cores = [n for k, n in numbers.entries.items() if k.startswith("summary.setup.")
             and k.endswith(".cores")]  # fmt: skip
    on = f"{cores[0].text()} cores of " if cores else ""
    return (
        f"**What this lab cannot tell.** Clients, servers and daemons share the {on}one "
        "machine and every packet stays in its kernel: costs that need a physical NIC, more "
        "cores or several machines to show (or to vanish) are not measured here."
    )


def _footprint(inputs: Inputs, numbers: Numbers) -> str | None:
    """Rootful Docker's engine: idle and per idle container (PSS), the first environment."""
    found = inputs.summary("footprint", "footprint_summary")
    if found is None:
        return None
    frame, source = found
    rows = frame[(frame["mode"] == "docker-bridge") & (frame["status"] == "ok")
                 & frame["pss_per_container_kib"].notna()]  # fmt: skip
    if rows.empty:
        return None
    r = rows.iloc[0]
    key, conf = f"footprint.{r['environment']}.docker-bridge", r.get("confidence")
    idle = numbers.add(f"{key}.pss_idle_mib", r["pss_idle_kib"] / 1024, "MiB", source,
                       r["pss_idle_lo_kib"] / 1024, r["pss_idle_hi_kib"] / 1024, conf, _FIT,
                       decimals=1)  # fmt: skip
    per = numbers.add(f"{key}.pss_per_container_mib", r["pss_per_container_kib"] / 1024,
                      "MiB/container", source, r["pss_per_container_lo_kib"] / 1024,
                      r["pss_per_container_hi_kib"] / 1024, conf, _FIT, decimals=2)  # fmt: skip
    return (f"**{SECTIONS['footprint'].title}**: Docker's own processes take "
            f"{idle.with_ci(' MiB')} idle, {per.with_ci(' MiB')} per idle container")


def _lb(inputs: Inputs, numbers: Numbers) -> str | None:
    """The balancers furthest from and closest to one directly dialled replica's rate, at the
    most replicas measured."""
    found = inputs.summary("lb", "lb_summary")
    if found is None:
        return None
    frame, source = found
    ok = frame[(frame["status"] == "ok") & (frame["variant"] != "direct-r1")
               & frame["ratio"].notna()]  # fmt: skip
    if ok.empty:
        return None
    top = ok[ok["replicas"] == ok["replicas"].max()]
    said = []
    for r in (top.loc[top["ratio"].idxmin()], top.loc[top["ratio"].idxmax()]):
        key = f"lb.{r['environment']}" + ("" if r["mode"] == "swarm-overlay" else f".{r['mode']}")
        pct = numbers.add(f"{key}.{r['variant']}.pct_of_direct", 100 * r["ratio"], "% of direct",
                          source, 100 * r["ratio_lo"], 100 * r["ratio_hi"],
                          r.get("confidence"), RATIO_T)  # fmt: skip
        said.append(f"{pct.with_ci('%')} ({r['configuration']})")
    n = numbers.add("summary.lb.replicas", top["replicas"].iloc[0], "replicas", source)
    return (f"**{SECTIONS['lb'].title}** ({n.text()} replicas): "
            f"{' to '.join(dict.fromkeys(said))} of one replica's rate dialled directly")


def _orchestration(inputs: Inputs, numbers: Numbers) -> str | None:
    found = inputs.summary("orchestration", "orchestration_summary")
    if found is None:
        return None
    frame, source = found
    ok = frame[(frame["status"] == "ok") & (frame["n_runs"] > 0)]
    said = []
    for variant, words in (("create", "a service created in"), ("scale-10", "scaled to")):
        rows = ok[ok["variant"] == variant]
        if rows.empty:
            continue
        r = rows.iloc[0]
        key = f"orchestration.{r['environment']}.{variant}"
        sec = numbers.add(f"{key}.median_s", r["median_s"], "s", source, r["median_lo_s"],
                          r["median_hi_s"], r.get("median_coverage"), RANK)  # fmt: skip
        if variant != "create":
            n = numbers.add(f"{key}.replicas", int(str(r["replicas"]).split(",")[-1]),
                            "replicas", source)  # fmt: skip
            words += f" {n.text()} replicas in"
        said.append(f"{words} {sec.with_ci(' s')}")
    if not said:
        return None
    return f"**{SECTIONS['orchestration'].title}**: {', '.join(said)}"


def summary(
    inputs: Inputs,
    numbers: Numbers,
    found: list[Comparison],
    benchmarks: list[str] | None = None,
    profile: str | None = None,
) -> str:
    """The Summary: what was measured on what, one answer per benchmark, what the lab cannot
    tell."""
    benchmarks = inputs.raw_benchmarks() if benchmarks is None else benchmarks
    blocks = ["## Summary"]
    setup, one_machine = _machine(inputs, numbers, benchmarks)
    check = _profile(profile)
    blocks.append(" ".join([*setup, check]).strip())
    usable = answers.answerable(found)
    if not usable:
        blocks.append(
            "No processed summary carries a verdict against native yet: the summarise stages "
            "write them (see Limitations for what was not measured)."
        )
        return "\n\n".join(blocks)
    conf = _level(inputs, numbers)
    order = list(SECTIONS)
    picked = answers.headline(usable)
    lines = [
        f"**Answers** ({conf.text()}% intervals; on the datacenter path unless named; every "
        "mode and path: the appendix's findings table):",
        "",
    ]
    for benchmark in sorted(picked, key=lambda b: (order.index(b) if b in order else 99, b)):
        c = picked[benchmark]
        title = SECTIONS[benchmark].title if benchmark in SECTIONS else MEASURES.get(
            benchmark, benchmark)  # fmt: skip
        refs = figure_refs(inputs, [c.section])
        far = answers.internet(usable, c)
        lines.append(f"- {answers.sentence(numbers, c, title, conf, far)[:-1]}{refs}.")
    for extra in (_lb(inputs, numbers), _footprint(inputs, numbers),
                  _orchestration(inputs, numbers)):  # fmt: skip
        if extra:
            lines.append(f"- {extra}.")
    blocks.append("\n".join(lines))
    pinned: dict[str, list[Comparison]] = {}
    for c in found:
        if c.pinned and c.verdict:
            pinned.setdefault(c.pinned, []).append(c)
    for why, cs in pinned.items():
        tests = ", ".join(dict.fromkeys(
            f"{MEASURES.get(c.benchmark, c.benchmark)} (`{c.variant}`)" for c in cs))
        blocks.append(
            f"No answer from {tests}: {why}, a mode that carries it ties native whatever it "
            "costs."
        )
    if one_machine:
        blocks.append(_cannot_tell(inputs, numbers))
    return "\n\n".join(blocks)
