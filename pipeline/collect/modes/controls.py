"""Controls of the instrument: modes whose true answer is known before anything is measured.

They prove that the pipeline finds what is there and nothing else (the instrument
check stage, ``pipeline.analysis.instrument``):

- ``native-aa``: native under a second name (the A/A test). The server or the tool is exactly
  native's; any difference the analysis reports between the two is a false one.
- ``native-cpuquota``: native, with the tool in a CPU cgroup whose CFS quota is
  ``CPU_QUOTA`` of one CPU. A CPU-bound tool that would use ``t`` CPUs then runs at
  ``CPU_QUOTA / t`` of native's rate (host benchmarks: cpu).
- ``docker-cpuquota``: the docker-bridge mode's container, with a CFS quota of
  ``CONTAINER_CPU_QUOTA`` of one CPU on the container's own cgroup (`docker run --cpu-period
  --cpu-quota`). It is compared with docker-bridge, the same container without the quota, not
  with native: the container's own cost is in both and cancels, so sysbench cpu at ``t``
  threads has the known ratio ``min(1, CONTAINER_CPU_QUOTA / t)`` (0.94 at 1 thread), whereas
  against native the truth would be the quota times docker-bridge's own ratio to native, which
  is what the study measures and so cannot be known beforehand. The size is the one the study
  claims to resolve: 6% is three times the cpu margin (+-2%: a real 6% must not be called
  "equivalent") and near the effect the study profile's instrument runs find four times in five
  at the lab's run-to-run spread (docs/validation.md#the-instrument-check), unlike the half-CPU
  quota above, which any campaign finds (host benchmarks: cpu).
- ``native-tbf``: native, with a token-bucket rate cap (``tc qdisc ... tbf rate TBF_RATE``) on
  the dc client's interface, the direction iperf3's data goes. What arrives is the rate minus
  the headers the bucket counts (network benchmarks: throughput, dc path).

They are never part of "all": a campaign plans them only where they are named. Everything they
create carries the study's marks (a cgroup named ``co-control-*``, a qdisc with handle
``TBF_HANDLE``), so ``cleanup_host`` removes it after a crash and ``leftovers`` reports it.
"""

from __future__ import annotations

import shlex

from pipeline.collect.inventory import Host
from pipeline.collect.modes.base import (
    CGROUP_PREFIX,
    LABEL,
    TBF_HANDLE,
    Context,
    Deployment,
    Workload,
    as_root,
    container_name,
    foreground_container,
    host_interface,
    remove_cgroups,
    root_problem,
    server_host,
)
from pipeline.collect.modes.docker_bridge import DockerBridge
from pipeline.collect.modes.native import Native

CPU_QUOTA = 0.5  # CPUs the cgroup may use: 50 ms of CPU time per 100 ms period
CFS_PERIOD_US = 100_000
# docker-cpuquota's CPUs: 94 ms per 100 ms period, a 6% cut in a CPU-bound thread's rate
CONTAINER_CPU_QUOTA = 0.94
TBF_RATE_MBIT = 100  # the token rate, Mbit/s; well under every mode's native dc throughput
TBF_BURST = "64kb"  # bucket depth: at least one TSO segment, a few ms of tokens at the rate
TBF_LATENCY = "20ms"  # longest a packet may wait in the bucket's queue


def _undo_on_stop(
    deployment: Deployment, session, undo: str | list[str], privilege: str  # noqa: ANN001
) -> None:
    """Make ``deployment.stop`` also run ``undo`` on ``session``: after the mode's own stop,
    and even when that fails."""
    inner = deployment.stop

    def stop() -> None:
        try:
            inner()
        finally:
            session.run(undo, check=False, timeout=30, root=privilege)

    deployment.stop = stop


class NativeAA(Native):
    """Native under a second name: the A/A control."""

    name = "native-aa"


def quota_script(cgroup: str) -> str:
    """Shell text that moves itself into a fresh CPU cgroup limited to ``CPU_QUOTA`` CPUs and
    execs its arguments there (``sh -c SCRIPT sh ARGV...``). v2: ``cpu.max``; v1: the cpu
    controller's ``cpu.cfs_quota_us``. Exits 3 with a message when neither is writable."""
    quota = int(CPU_QUOTA * CFS_PERIOD_US)
    name = shlex.quote(cgroup)
    return (
        f"if [ -f /sys/fs/cgroup/cgroup.controllers ]; then d=/sys/fs/cgroup/{name}; "
        f'mkdir -p "$d" && echo "{quota} {CFS_PERIOD_US}" > "$d/cpu.max" || exit 3; '
        f"elif [ -d /sys/fs/cgroup/cpu ]; then d=/sys/fs/cgroup/cpu/{name}; "
        f'mkdir -p "$d" && echo {CFS_PERIOD_US} > "$d/cpu.cfs_period_us" '
        f'&& echo {quota} > "$d/cpu.cfs_quota_us" || exit 3; '
        'else echo "no cgroup cpu controller" >&2; exit 3; fi; '
        'echo $$ > "$d/cgroup.procs" || exit 3; exec "$@"'
    )


class NativeCpuQuota(Native):
    """Native, with the tool limited to ``CPU_QUOTA`` CPUs by a cgroup."""

    name = "native-cpuquota"

    privilege = "create a CPU cgroup"

    def available(self, ctx: Context, path: str) -> str | None:
        probe = (
            "[ -f /sys/fs/cgroup/cgroup.controllers ] || [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]"
        )
        host = server_host(ctx)
        if root_problem(host, self.privilege):
            return root_problem(host, self.privilege)
        if ctx.pool[host.name].run(probe, check=False, timeout=30).status != 0:
            return f"{host.name} has no cgroup CPU controller (v2 cpu.max, v1 cpu) for a quota"
        return None

    def foreground(self, ctx: Context, workload: Workload) -> Deployment:
        base = super().foreground(ctx, workload)
        cgroup = f"{CGROUP_PREFIX}{ctx.campaign[:12]}-{workload.name}"
        script = quota_script(cgroup)
        remove = remove_cgroups(shlex.quote(cgroup))
        _undo_on_stop(base, ctx.pool[base.server.name], remove, self.privilege)
        host = base.server
        base.wrap_client = lambda argv: shlex.join(
            as_root(ctx, host, ["sh", "-c", script, "sh", *argv], self.privilege)
        )
        base.notes = {"cpu_quota": f"{CPU_QUOTA:g}", "cfs_period_us": str(CFS_PERIOD_US)}
        return base


def container_quota_options() -> list[str]:
    """`docker run` options of docker-cpuquota: the CFS period and quota in microseconds, as
    the kernel takes them (``--cpus`` would round through nano-CPUs to the same values)."""
    quota = round(CONTAINER_CPU_QUOTA * CFS_PERIOD_US)
    return ["--cpu-period", str(CFS_PERIOD_US), "--cpu-quota", str(quota)]


class DockerCpuQuota(DockerBridge):
    """docker-bridge's container with a CFS quota of ``CONTAINER_CPU_QUOTA`` CPUs; compared
    with docker-bridge (see the module's docstring)."""

    name = "docker-cpuquota"
    baseline = "docker-bridge"

    def available(self, ctx: Context, path: str) -> str | None:
        return super().available(ctx, path) or self.quota_problem(ctx, server_host(ctx))

    def quota_problem(self, ctx: Context, host: Host) -> str | None:
        """Why dockerd cannot apply the quota here (None when it can), found once per campaign:
        a daemon without a usable CFS controller warns and runs the container unlimited, which
        would measure the same container twice under two names."""
        key = (ctx.campaign, host.name, "quota")
        if key not in self._started:
            self._started[key] = None
            if ctx.image_paths:
                name = f"co-{ctx.campaign[:10]}-{self.name}-probe"
                run = ["docker", "run", "--rm", "--name", name, "--label",
                       f"{LABEL}={ctx.campaign}", *container_quota_options(),
                       ctx.image(host).tag, ctx.image_paths[0], "--version"]  # fmt: skip
                result = ctx.pool[host.name].run(run, check=False, timeout=120)
                said = result.stderr.strip()
                if result.status != 0 or "cfs" in said.lower() or "discarded" in said.lower():
                    first = " | ".join(said.splitlines()[:2])[-400:] or f"exit {result.status}"
                    self._started[key] = (
                        f"dockerd on {host.name} cannot set a CFS quota on a container: {first}"
                    )
        return self._started[key]

    def foreground(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        name = container_name(ctx, self.name, workload)
        notes = {**self.runtime_notes(ctx, host), "cpu_quota": f"{CONTAINER_CPU_QUOTA:g}",
                 "cfs_period_us": str(CFS_PERIOD_US), "baseline": self.baseline}  # fmt: skip
        return foreground_container(ctx, host, "docker", name, container_quota_options(), notes,
                                    self.runtime)  # fmt: skip


def tbf_commands(interface: str) -> tuple[list[str], list[str]]:
    """(add, remove) argv of the study's rate cap on ``interface``."""
    add = ["tc", "qdisc", "replace", "dev", interface, "root", "handle", TBF_HANDLE, "tbf",
           "rate", f"{TBF_RATE_MBIT}mbit", "burst", TBF_BURST, "latency", TBF_LATENCY]  # fmt: skip
    return add, ["tc", "qdisc", "del", "dev", interface, "root", "handle", TBF_HANDLE]


class NativeTbf(Native):
    """Native, with the dc client's egress capped at ``TBF_RATE_MBIT`` by tc tbf."""

    name = "native-tbf"

    privilege = "change the NIC's qdisc (tc)"

    def available(self, ctx: Context, path: str) -> str | None:
        client = ctx.inventory.dc_client
        if root_problem(client, self.privilege):
            return root_problem(client, self.privilege)
        # as root, as tc will run: a login's own PATH may lack /usr/sbin, where tc lives
        probe = ctx.pool[client.name].run("tc qdisc show >/dev/null", check=False, timeout=30,
                                          root=self.privilege)  # fmt: skip
        if probe.status:
            return f"tc is not usable on {client.name} (apt-get install iproute2)"
        return None

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        client: Host = ctx.inventory.dc_client
        nic = host_interface(ctx, client)
        add, remove = tbf_commands(nic.name)
        session = ctx.pool[client.name]
        session.run(add, timeout=30, root=self.privilege)
        try:
            deployment = super().start(ctx, workload)
        except BaseException:
            session.run(remove, check=False, timeout=30, root=self.privilege)
            raise
        _undo_on_stop(deployment, session, remove, self.privilege)
        deployment.notes = {"tbf_rate_mbit": str(TBF_RATE_MBIT), "tbf_interface": nic.name,
                            "tbf_burst": TBF_BURST, "mtu": str(nic.mtu)}  # fmt: skip
        return deployment
