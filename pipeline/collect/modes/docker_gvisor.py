"""docker-gvisor: docker-bridge with gVisor's runsc as the OCI runtime (`docker run --runtime
runsc`; Debian 12's runsc, gVisor release 20221219).

gVisor runs the container's process on a kernel of its own written in Go (the Sentry), which
serves its system calls in user space; a gofer process mediates file access. How system calls
reach the Sentry is the platform, an argument of the registered runtime (`--platform=...`):
`ptrace` (the release's default; works in any VM) or `kvm` (the Sentry in a guest ring 0; needs
a usable /dev/kvm, nested virtualisation inside a VM). The notes of every run record the
platform the runtime was registered with (``gvisor_platform``) and its arguments. The lab
registers `runsc` with kvm where `runsc --platform=kvm do true` works at `lab up`, else ptrace
(pipeline/lab/dockerd.py), and each platform under its own name (`runsc-ptrace`, `runsc-kvm`)
for a comparison by hand.

Network: the container is on the default bridge with its own network namespace and veth, as in
docker-bridge and docker-crun, and the client dials the container's address. Inside, gVisor
either runs TCP/IP itself (netstack, runsc's default `--network=sandbox`) or passes socket
calls through the Sentry to the kernel's stack of that namespace (hostinet, `--network=host`:
the container's namespace, not the host's). The default here is hostinet: netstack is what a
gVisor user gets by default, but this release refuses to start it on Linux 6.11 and later
(its root-namespace check looks for a sysctl file those kernels show in every namespace:
google/gvisor#10704), as on the lab's kernel. With hostinet the comparison with docker-bridge
is the same bridge, veth and kernel stack with gVisor's system-call path in front; a host whose
runsc is registered without `--network=host` (and whose kernel lets netstack start) measures
netstack, and the notes say which ran (``gvisor_network``).

Host benchmarks run the tool in a `docker run --rm --runtime runsc`. Some tools need a system
call or kernel feature gVisor does not implement (an I/O engine, a perf interface): before a
host benchmark's first step the mode runs the benchmark's probe (a short run of the tool with
the same features, ``Workload.argv``) in gVisor once per campaign, and a probe that fails
turns every step of that benchmark into `skipped`, with the tool's own message and what to do.
File I/O goes through the gofer, and O_DIRECT does not reach the host's file (the lab's
sequential reads of the disk benchmark ran at page-cache speed): host runs note it
(``file_io``).

A network tool gets no probe (its client runs on another host): when its client fails against
the server in gVisor (an error, or a hang cut by the client's timeout), the step is `skipped`
with the client's message and the server container's state and log, and the tool's later
steps in the campaign are skipped with it at once.
The probe's output goes to the benchmark (``Benchmark.calibrate``): syscall sizes its runs by
it, as a system call under gVisor costs about a hundred times what it costs under runc.
"""

import shlex

from pipeline.collect import engine_api
from pipeline.collect.inventory import Host
from pipeline.collect.modes.base import (
    LABEL,
    Context,
    Deployment,
    ModeUnavailable,
    Workload,
    container_name,
    runtime_options,
    server_host,
)
from pipeline.collect.modes.docker_bridge import DockerBridge

DEFAULT_PLATFORM = "ptrace"  # runsc 20221219's, when the registered runtime names none
PROBE_TIMEOUT_S = 120
FILE_IO = "through gVisor's gofer; O_DIRECT does not reach the host's file (page-cache speed)"


def runtime_flag(args: list[str], flag: str) -> str | None:
    """The value of runsc's ``--flag=VALUE`` or ``--flag VALUE`` among the runtime arguments."""
    for i, arg in enumerate(args):
        if arg.startswith(f"--{flag}="):
            return arg.split("=", 1)[1]
        if arg == f"--{flag}" and i + 1 < len(args):
            return args[i + 1]
    return None


def gvisor_notes(args: list[str]) -> dict[str, str]:
    """The platform and network stack runsc was registered with (module docstring)."""
    platform = runtime_flag(args, "platform")
    network = runtime_flag(args, "network") or "sandbox"
    return {
        "gvisor_platform": platform or f"{DEFAULT_PLATFORM} (runsc's default)",
        "gvisor_network": "hostinet (the kernel's stack of the container's namespace, "
        "--network=host)"
        if network == "host"
        else f"netstack (gVisor's own TCP/IP, --network={network})",
    }


def unsupported_reason(argv: tuple[str, ...], platform: str, status: int, output: str) -> str:
    """The skip reason for a tool whose probe failed under gVisor: its message and the fix."""
    tail = " | ".join(output.strip().splitlines()[-4:])[-400:] or "no output"
    return (
        f"{argv[0]} does not run under gVisor here (runsc, platform {platform}): its probe "
        f"`{shlex.join(argv)[:200]}` exited {status}: {tail}. gVisor implements Linux's "
        "system calls itself and lacks some (an I/O engine, perf interfaces); this benchmark "
        "is measured in the other modes: leave docker-gvisor out of its modes in the profile, "
        "or try a newer gVisor (runsc) release"
    )


class DockerGvisor(DockerBridge):
    name = "docker-gvisor"
    runtime = "runsc"

    def __init__(self) -> None:
        super().__init__()
        # (campaign, host, workload) -> the probe's skip reason ("" when the tool ran), output
        self._probes: dict[tuple[str, str, str], tuple[str, str]] = {}
        # (campaign, host, workload) -> why a server failed its client (network benchmarks)
        self._failed: dict[tuple[str, str, str], str] = {}

    def runtime_binary(self, args: list[str]) -> str:
        return "runsc"

    def describe_runtime(self, args: list[str]) -> dict[str, str]:
        return gvisor_notes(args)

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        key = (ctx.campaign, host.name, workload.name)
        if self._failed.get(key):  # the server already failed its client in this campaign
            raise ModeUnavailable(self._failed[key])
        deployment = super().start(ctx, workload)
        name = container_name(ctx, self.name, workload)
        deployment.diagnose = lambda error: self.diagnose(ctx, host, name, workload, error)
        return deployment

    def diagnose(self, ctx: Context, host: Host, name: str, workload: Workload,
                 error: str) -> str:  # fmt: skip
        """Why a network tool failed its client under gVisor: the client's message with the
        server container's state and log. The workload's later steps in this campaign are
        skipped with it at once (a hung client costs its whole timeout)."""
        session = ctx.pool[host.name]
        try:
            facts = engine_api.container(ctx.engine_api(host), name)
            state = f"{facts.status} (exit code {facts.exit_code})"
        except engine_api.ERRORS:  # no such container, or no engine answering
            state = "gone"
        log = session.run(f"docker logs --tail 4 {shlex.quote(name)} 2>&1", check=False,
                          timeout=30).stdout  # fmt: skip
        said = " | ".join(log.strip().splitlines())[-300:] or "nothing"
        notes = self.runtime_notes(ctx, host)
        reason = (
            f"{workload.argv[0]} does not serve its client under gVisor here (runsc, platform "
            f"{notes['gvisor_platform']}, network {notes['gvisor_network'].split()[0]}): the "
            f"client: {' '.join(error.split())[:300]}; the server is {state} and logged: "
            f"{said}. gVisor implements Linux's system calls itself and lacks some; this "
            "benchmark is measured in the other modes: leave docker-gvisor out of its modes "
            "in the profile, or try a newer gVisor (runsc) release"
        )
        self._failed[(ctx.campaign, host.name, workload.name)] = reason
        return reason

    def foreground(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        reason, output = self.probe(ctx, host, workload)
        if reason:
            raise ModeUnavailable(reason)
        deployment = super().foreground(ctx, workload)
        deployment.probe_output = output
        deployment.notes["file_io"] = FILE_IO
        return deployment

    def probe(self, ctx: Context, host: Host, workload: Workload) -> tuple[str, str]:
        """Run the workload's probe in gVisor once per campaign: ("", its output) when it ran,
        else (why not, its output)."""
        key = (ctx.campaign, host.name, workload.name)
        if key not in self._probes:
            name = f"{container_name(ctx, self.name, workload)}-probe"
            image = ctx.image(host).tag
            common = ["--label", f"{LABEL}={ctx.campaign}", *runtime_options(self.runtime)]
            run = ["docker", "run", "--rm", "--name", name, *common, image, *workload.argv]
            session = ctx.pool[host.name]
            session.run(["docker", "rm", "--force", name], check=False, timeout=60)
            result = session.run(shlex.join(run) + " 2>&1", check=False, timeout=PROBE_TIMEOUT_S)
            platform = self.runtime_notes(ctx, host)["gvisor_platform"]
            reason = ""
            if result.status != 0:
                reason = unsupported_reason(workload.argv, platform, result.status, result.stdout)
            self._probes[key] = (reason, result.stdout)
        return self._probes[key]
