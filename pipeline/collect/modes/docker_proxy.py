"""docker-proxy: a published port dialled via 127.0.0.1 on the same host.

Loopback traffic is not DNATed while the userland proxy is on (Docker's default), so the bytes
go through the `docker-proxy` process. The mode checks that the proxy really runs, so a host
with `userland-proxy: false` is recorded as skipped instead of silently measuring hairpin NAT.
"""

from pipeline.collect.modes.base import (
    Context,
    Deployment,
    Mode,
    ModeUnavailable,
    Workload,
    container_address,
    container_name,
    docker_run,
    publish_options,
    remove_container,
    server_host,
)


class DockerProxy(Mode):
    name = "docker-proxy"
    host_engine = "docker"

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        name = docker_run(
            ctx,
            host,
            container_name(ctx, self.name, workload),
            publish_options(workload),
            workload.argv,
        )
        stop = remove_container(ctx, host, name)
        # Match the container address too: lab nodes share one process table.
        address = container_address(ctx, host, name)
        pattern = f"docker-proxy .*-host-port {workload.port} .*-container-ip {address} "
        found = ctx.pool[host.name].run(["pgrep", "-f", pattern], check=False)
        if found.status != 0:
            stop()
            raise ModeUnavailable(
                "no docker-proxy process for the published port: the daemon runs with "
                "userland-proxy disabled, so localhost traffic would be hairpin NAT, not the proxy"
            )
        return Deployment(
            server=host,
            address=host.address,
            stop=stop,
            image=ctx.image(host),
            notes={"docker_proxy_pids": found.stdout.split()[0]},
        )
