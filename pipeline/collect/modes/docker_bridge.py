"""docker-bridge: a container on the default bridge; the client dials the container's address.

From another host this needs a route to the node's bridge subnet and a DOCKER-USER accept rule
(the lab sets both up); it measures the bridge and veth without any NAT.

Host benchmarks (cpu, memory) run in a plain `docker run --rm`, which is this default bridge
network too; the network plays no part in them.

The container runs with dockerd's default OCI runtime (runc). The runtime modes
(docker-crun, docker-gvisor) are this mode with another runtime (``runtime``, passed as
`--runtime`): the same bridge, image and commands, so the comparison between them is the
runtime alone. They record the runtime dockerd ran (its name, version and arguments) in the
run's notes.
"""

from pipeline.collect.inventory import Host
from pipeline.collect.modes.base import (
    LABEL,
    Context,
    Deployment,
    Mode,
    Workload,
    container_address,
    container_name,
    docker_run,
    docker_runtimes,
    foreground_container,
    remove_container,
    runtime_options,
    runtime_problem,
    server_host,
)


class DockerBridge(Mode):
    name = "docker-bridge"
    engine = "docker"
    # The OCI runtime, by the name dockerd registered it under (None: dockerd's default).
    runtime: str | None = None

    def __init__(self) -> None:
        self._notes: dict[tuple[str, str], dict[str, str]] = {}  # (campaign, host) -> notes
        self._started: dict[tuple[str, str], str | None] = {}  # -> start_problem's answer

    def available(self, ctx: Context, path: str) -> str | None:
        if self.runtime is None:
            return None
        host = server_host(ctx)
        return runtime_problem(ctx, host, self.runtime) or self.start_problem(ctx, host)

    def start_problem(self, ctx: Context, host: Host) -> str | None:
        """Why dockerd cannot start a container with the runtime here (None when it can),
        found once per campaign by running the tool image's first binary with --version:
        `docker run` exits 125 when the daemon or the runtime failed, whatever the tool did."""
        key = (ctx.campaign, host.name)
        if key not in self._started:
            self._started[key] = None
            if ctx.image_paths:
                name = f"co-{ctx.campaign[:10]}-{self.name}-start"
                common = ["--label", f"{LABEL}={ctx.campaign}", *runtime_options(self.runtime)]
                run = ["docker", "run", "--rm", "--name", name, *common, ctx.image(host).tag,
                       ctx.image_paths[0], "--version"]  # fmt: skip
                session = ctx.pool[host.name]
                session.run(["docker", "rm", "--force", name], check=False, timeout=60)
                result = session.run(run, check=False, timeout=120)
                if result.status == 125:
                    said = " | ".join(result.stderr.strip().splitlines()[:2])[-400:]
                    self._started[key] = (
                        f"dockerd on {host.name} cannot start a container with OCI runtime "
                        f"{self.runtime}: {said or 'no message'}"
                    )
        return self._started[key]

    def engine_options(self, ctx: Context) -> list[str]:
        return runtime_options(self.runtime)

    def run_notes(self, ctx: Context) -> dict[str, str]:
        return self.runtime_notes(ctx, server_host(ctx))

    def runtime_notes(self, ctx: Context, host: Host) -> dict[str, str]:
        """What runs the containers, read once per campaign and host (none for the default)."""
        if self.runtime is None:
            return {}
        key = (ctx.campaign, host.name)
        if key not in self._notes:
            args = (docker_runtimes(ctx, host) or {}).get(self.runtime, [])
            version = ctx.pool[host.name].run(
                f"{self.runtime_binary(args)} --version 2>&1 | head -n 1", check=False, timeout=30
            )
            self._notes[key] = {
                "oci_runtime": self.runtime,
                "oci_runtime_version": version.stdout.strip() or "n/a",
                "oci_runtime_args": " ".join(args),
                **self.describe_runtime(args),
            }
        return dict(self._notes[key])

    def runtime_binary(self, args: list[str]) -> str:
        return self.runtime or "runc"

    def describe_runtime(self, args: list[str]) -> dict[str, str]:
        """Notes a runtime mode adds from the runtime's registered arguments."""
        return {}

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        notes = self.runtime_notes(ctx, host)
        name = container_name(ctx, self.name, workload)
        docker_run(ctx, host, name, [], workload.argv, self.runtime)
        stop = remove_container(ctx, host, name)
        try:
            address = container_address(ctx, host, name)
        except Exception:
            stop()
            raise
        return Deployment(
            server=host,
            address=address,
            local_address=address,
            stop=stop,
            image=ctx.image(host),
            notes=notes,
        )

    def foreground(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        name = container_name(ctx, self.name, workload)
        notes = self.runtime_notes(ctx, host)
        return foreground_container(ctx, host, "docker", name, notes=notes, runtime=self.runtime)
