"""Preflight: talk to every host of an inventory before a campaign starts.

`check --connect` (``python -m pipeline.collect.inventory check --connect FILE``, or
``container-overhead check --connect``) and every collection stage, before its campaign,
open one SSH connection per host (pipeline/collect/remote.py: the host key is checked against
the inventory's known_hosts with a reject policy, never added) and read on it:

- the login, and the sudo rule when the inventory says ``sudo: true`` (``sudo -n true``);
- the binaries each planned benchmark needs on the servers (``Benchmark.binaries`` less what
  the campaign uploads itself) and the tool's version (``Benchmark.version_argv``);
- the host's facts as a campaign records them (pipeline/collect/hostfacts.py: kernel, cgroup
  version, docker/containerd/runc versions, IPVS), podman's version, and the kernel features
  planned modes use (the macvlan module, user namespaces for the rootless modes);
- its clock, against this machine's, across one round trip (``date +%s.%N``).

A **problem** stops the campaign: one line per host and problem, with its fix. A **note** is
what the campaign would record as a skipped mode anyway (a mode's engine or kernel feature
missing): printed, not fatal, as the study records a mode it cannot run as skipped, never
drops it.
"""

from __future__ import annotations

import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.collect import hostfacts, inventory
from pipeline.collect.inventory import Host, Inventory
from pipeline.collect.remote import Pool, Session
from pipeline.hosts import RemoteError, UnreachableHost

# A fleet whose clocks are synchronised (NTP, chrony) agrees within milliseconds; hosts this far
# apart are not synchronised, and their timestamps cannot be set side by side.
CLOCK_TOLERANCE_S = 0.1
PROBE_TIMEOUT_S = 30.0
ROOTLESS_MODES_ENGINE_PREFIX = "rootless-"


@dataclass(frozen=True)
class Finding:
    """One line of the preflight: a host, what is wrong, how to fix it."""

    host: str
    problem: str
    fix: str = ""

    def __str__(self) -> str:
        return f"{self.host}: {self.problem}" + (f"; fix: {self.fix}" if self.fix else "")


@dataclass(frozen=True)
class Plan:
    """What the campaigns to come need: benchmark names and the modes they may plan."""

    benchmarks: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()


@dataclass
class HostReport:
    host: str
    problems: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)
    clock_offset_s: float | None = None  # the host's clock minus this machine's
    clock_uncertainty_s: float | None = None  # half the round trip the reading took


@dataclass
class Report:
    hosts: list[HostReport]

    @property
    def problems(self) -> list[Finding]:
        return [p for h in self.hosts for p in h.problems]

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        """One line per host and problem (and note); an `ok` line for a host without either."""
        out = []
        for h in self.hosts:
            out += [f"PROBLEM {p}" for p in h.problems]
            out += [f"note {n}" for n in h.notes]
            if not h.problems:
                out.append(f"ok {h.host}: {summary(h)}")
        return out


class PreflightError(RuntimeError):
    """The preflight found problems: the campaign does not start (nothing is written)."""

    def __init__(self, source: Path | str, report: Report):
        self.report = report
        lines = [f"PROBLEM {p}" for p in report.problems]
        n = len(lines)
        super().__init__("\n".join([
            f"preflight of {source}: {n} problem{'s' if n != 1 else ''}; no campaign started",
            *lines,
        ]))  # fmt: skip


SUMMARY = (("kernel", "kernel {}"), ("cgroup_version", "cgroup v{}"),
           ("docker_version", "docker {}"), ("podman_version", "podman {}"))  # fmt: skip


def summary(h: HostReport) -> str:
    """What an `ok` line says about a host: login, kernel, cgroup, engines, tools, clock."""
    f = h.facts
    parts = [f"user {f.get('user', '?')}"]
    parts += [text.format(f[key]) for key, text in SUMMARY if f.get(key) not in (None, "", "n/a")]
    parts += [f"{k.removeprefix('tool ')} {v}" for k, v in f.items() if k.startswith("tool ")]
    if h.clock_offset_s is not None:
        parts.append(f"clock {h.clock_offset_s:+.3f} s")
    return ", ".join(parts)


def plan(inv: Inventory, benchmarks: Iterable[str] = (), modes: list[str] | None = None) -> Plan:
    """The modes the campaigns of ``benchmarks`` may plan on ``inv`` (as the campaign selects
    them: ``campaign.selected_modes``, then the benchmark's own modes)."""
    from pipeline.benchmarks import BENCHMARKS
    from pipeline.collect.campaign import selected_modes

    names = tuple(benchmarks)
    planned: dict[str, None] = {}
    for name in names or (None,):
        candidates = selected_modes(inv, modes)
        own = BENCHMARKS[name].modes if name is not None else None
        planned.update(dict.fromkeys(m for m in candidates if own is None or m in own))
    return Plan(names, tuple(planned))


# ---- what is probed ------------------------------------------------------------------------


def required_binaries(benchmark: str) -> list[str]:
    """The host binaries a benchmark's servers must already have: its ``binaries`` less what
    the campaign uploads itself (a tool the study builds)."""
    from pipeline.benchmarks import BENCHMARKS

    bench = BENCHMARKS[benchmark]()
    return [b for b in bench.binaries if b not in bench.uploads]


def probe_script(binaries: Iterable[str]) -> str:
    """Shell printing key=value lines: the login, each binary's state, podman's version,
    the kernel features modes use. Read-only: nothing on the host changes."""
    lines = ['echo "user=$(id -un)"']
    for b in binaries:
        q = shlex.quote(b)
        lines.append(f'if [ -f {q} ] && [ -x {q} ]; then echo "bin {b}=ok"; '
                     f'else echo "bin {b}=missing"; fi')  # fmt: skip
    lines += [
        'echo "podman_version=$(podman --version 2>/dev/null | awk \'{print $NF}\' || true)"',
        # loaded, built in or loadable (docker loads it when a macvlan network is made): yes;
        # "no" only where the kernel's config says so (a built-in module without parameters
        # shows nowhere else, and a kernel may ship without its config or module tree)
        'cfg=$( (zcat /proc/config.gz 2>/dev/null || cat "/boot/config-$(uname -r)" '
        '2>/dev/null) | grep -E "^(# )?CONFIG_MACVLAN[= ]" | head -n1)',
        'if [ -d /sys/module/macvlan ] || grep -qs "/macvlan.ko" '
        '"/lib/modules/$(uname -r)/modules.builtin" || modinfo macvlan >/dev/null 2>&1 '
        '|| [ "$cfg" = CONFIG_MACVLAN=y ] || [ "$cfg" = CONFIG_MACVLAN=m ]; '
        'then echo "macvlan=yes"; elif [ "$cfg" = "# CONFIG_MACVLAN is not set" ]; '
        'then echo "macvlan=no"; else echo "macvlan=unknown"; fi',
        'echo "max_user_namespaces=$(cat /proc/sys/user/max_user_namespaces 2>/dev/null)"',
        'echo "unprivileged_userns_clone='
        '$(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null)"',
    ]
    return "\n".join(lines)


def parse(text: str) -> dict[str, str]:
    facts = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            facts[key.strip()] = value.strip()
    return facts


def clock_offset(session: Session, now: Callable[[], float] = time.time) -> tuple[float, float]:
    """(the host's clock minus ours, half the round trip): its ``date +%s.%N`` set against the
    middle of our readings before and after."""
    before = now()
    result = session.run(["date", "+%s.%N"], timeout=PROBE_TIMEOUT_S)
    after = now()
    remote = float(result.stdout.strip())
    return remote - (before + after) / 2, (after - before) / 2


def kernel_notes(host: Host, facts: dict[str, str], modes: Iterable[str]) -> list[Finding]:
    """What the planned modes need from the kernel and the engines that this host lacks."""
    from pipeline.collect.modes import MODES

    notes = []
    wanted = {m: MODES[m] for m in modes if m in MODES}
    engines = {m.daemon for m in wanted.values() if m.daemon}
    if "macvlan" in wanted and facts.get("macvlan") == "no":
        notes.append(Finding(host.name, "mode macvlan will be skipped: the kernel is built "
                             "without macvlan (# CONFIG_MACVLAN is not set)", "a kernel with "
                             "CONFIG_MACVLAN, or leave macvlan out of the inventory's "
                             "modes"))  # fmt: skip
    if any(e.startswith(ROOTLESS_MODES_ENGINE_PREFIX) for e in engines):
        limit = facts.get("max_user_namespaces") or "n/a"
        clone = facts.get("unprivileged_userns_clone") or "n/a"
        if limit == "0" or clone == "0":
            notes.append(Finding(
                host.name, "the rootless modes will be skipped: user namespaces are off "
                f"(user.max_user_namespaces={limit}, kernel.unprivileged_userns_clone={clone})",
                "sysctl -w user.max_user_namespaces=15000 kernel.unprivileged_userns_clone=1",
            ))  # fmt: skip
    if any("podman" in e for e in engines) and not facts.get("podman_version"):
        notes.append(Finding(host.name, "the podman modes will be skipped: podman is not "
                             "installed", "apt-get install podman"))  # fmt: skip
    if engines & {"docker", "rootless-docker"} and facts.get("docker_version") in (None, "n/a"):
        notes.append(Finding(host.name, "the docker modes will be skipped: docker does not "
                             "answer for this login", "install docker.io and start dockerd; "
                             "a login other than root must be in the docker group"))  # fmt: skip
    return notes


# ---- per host ------------------------------------------------------------------------------


def check_host(pool: Pool, inv: Inventory, host: Host, wanted: Plan) -> HostReport:
    """Every check on one host, through one SSH connection (the pool's session for it)."""
    report = HostReport(host.name)
    try:
        session = pool[host.name]
    except UnreachableHost as e:  # host key unknown or changed, login refused, no route
        report.problems.append(Finding(host.name, e.cause, e.fix))
        return report
    try:
        _probe(session, report, inv, host, wanted)
    except RemoteError as e:  # the connection died, or the host's shell is not sh-like
        report.problems.append(Finding(host.name, f"a read-only probe failed ({e})",
                                       "check the host's shell and PATH for this login"))
    return report


def _probe(session: Session, report: HostReport, inv: Inventory, host: Host,
           wanted: Plan) -> None:  # fmt: skip
    server = host in inv.servers
    binaries: dict[str, list[str]] = {}
    if server:
        for name in wanted.benchmarks:
            binaries[name] = required_binaries(name)
    probe = session.run(["sh", "-c", probe_script(sorted({b for v in binaries.values()
                                                           for b in v}))],
                        timeout=PROBE_TIMEOUT_S)  # fmt: skip
    report.facts.update(parse(probe.stdout))
    if server:
        facts = hostfacts.gather(session, host.address)
        report.facts.update({k: str(v) for k, v in facts.items() if v is not None})
    report.clock_offset_s, report.clock_uncertainty_s = clock_offset(session)

    ssh = host.ssh
    if ssh.user != "root" and ssh.sudo:
        rule = session.run(["sudo", "-n", "true"], check=False, timeout=PROBE_TIMEOUT_S)
        if rule.status != 0:
            said = (rule.stderr.strip().splitlines() or ["no message"])[-1]
            fix = (f"`python -m pipeline.lab up --inventory {inv.source}` makes the lab login's "
                   "rule again" if inv.lab else
                   f"add `{ssh.user} ALL=(root) NOPASSWD: ALL` in /etc/sudoers.d/ (visudo -f), or "
                   "set ssh.sudo: false (the steps that need root are then skipped)")  # fmt: skip
            report.problems.append(Finding(
                host.name, f"sudo -n true failed for {ssh.user} ({said}): the inventory says "
                "sudo: true, but the login may not run root steps without a password", fix,
            ))  # fmt: skip

    missing = {b for v in binaries.values() for b in v if report.facts.get(f"bin {b}") != "ok"}
    for b in sorted(missing):  # one line per binary, however many benchmarks run it
        users = [name for name, needed in binaries.items() if b in needed]
        report.problems.append(Finding(
            host.name, f"{b} is missing or not executable: {', '.join(users)} "
            f"run{'s' if len(users) == 1 else ''} it on the servers",
            f"install it on {host.name} (Debian: `dpkg -S {b}` on a host that has it names "
            "the package), or leave those benchmarks out of the profile",
        ))  # fmt: skip
    for name, needed in binaries.items():
        if needed and not missing & set(needed):
            report.facts[f"tool {name}"] = tool_version(session, name)
    if server:
        report.notes += kernel_notes(host, report.facts, wanted.modes)


def tool_version(session: Session, benchmark: str) -> str:
    """The tool's version as the campaign records it (``Benchmark.tool_version``)."""
    from pipeline.benchmarks import BENCHMARKS

    bench = BENCHMARKS[benchmark]()
    result = session.run(bench.version_argv(), check=False, timeout=PROBE_TIMEOUT_S)
    text = bench.tool_version(result.stdout) if result.status == 0 else ""
    return text.strip() or f"version unknown (exit {result.status})"


def clock_problems(reports: list[HostReport], tolerance_s: float = CLOCK_TOLERANCE_S) -> None:
    """A problem on each host whose clock lies further than ``tolerance_s`` from the hosts'
    median (beyond what the round trip could explain)."""
    read = [r for r in reports if r.clock_offset_s is not None]
    if len(read) < 2:
        return
    middle = statistics.median(r.clock_offset_s for r in read)
    for r in read:
        apart = abs(r.clock_offset_s - middle) - (r.clock_uncertainty_s or 0.0)
        if apart > tolerance_s:
            r.problems.append(Finding(
                r.host, f"clock {r.clock_offset_s - middle:+.3f} s from the other hosts' median "
                f"(tolerance {tolerance_s:g} s)",
                "synchronise the host's clock (chrony or systemd-timesyncd) and wait until it "
                "is in step",
            ))  # fmt: skip


def check(inv: Inventory, wanted: Plan | None = None) -> Report:
    """The preflight of every host of ``inv`` (in parallel, one connection each)."""
    wanted = wanted or Plan()
    hosts = inv.all_hosts()
    with Pool(inv) as pool, ThreadPoolExecutor(max_workers=max(1, len(hosts))) as threads:
        reports = list(threads.map(lambda h: check_host(pool, inv, h, wanted), hosts))
    clock_problems(reports)
    return Report(reports)


def require(inventory_file: str | Path, benchmarks: Iterable[str] = (),
            modes: list[str] | None = None,
            log: Callable[[str], None] = print) -> Report:  # fmt: skip
    """The preflight a collection stage runs before its campaign: PreflightError on a problem
    (nothing is written), else the lines it read, logged."""
    from pipeline.collect.modes import MODES

    inv = inventory.load(inventory_file, known_modes=MODES)
    report = check(inv, plan(inv, benchmarks, modes))
    if not report.ok:
        raise PreflightError(inventory_file, report)
    for line in report.lines():
        log(f"preflight: {line}")
    return report


def main(files: list[str], benchmarks: Iterable[str] = ()) -> int:
    """``check --connect FILE...``: every host of each inventory; exit 1 on any problem
    (2 when an inventory is not even valid)."""
    from pipeline.collect.modes import MODES

    status = 0
    for name in files:
        try:
            inv = inventory.load(name, MODES)
        except inventory.InventoryError as e:
            print(e, file=sys.stderr)
            status = 2
            continue
        report = check(inv, plan(inv, benchmarks))
        for line in report.lines():
            print(f"{name}: {line}", file=sys.stdout if line.startswith(("ok", "note"))
                  else sys.stderr)  # fmt: skip
        if not report.ok:
            status = status or 1
    return status
