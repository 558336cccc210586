"""docker-host: a container sharing the host's network namespace (`--network host`)."""

from pipeline.collect.modes.base import (
    Context,
    Deployment,
    Mode,
    Workload,
    container_name,
    docker_run,
    remove_container,
    server_host,
)


class DockerHost(Mode):
    name = "docker-host"
    host_engine = "docker"

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        name = docker_run(
            ctx,
            host,
            container_name(ctx, self.name, workload),
            ["--network", "host"],
            workload.argv,
        )
        return Deployment(
            server=host,
            address=host.address,
            stop=remove_container(ctx, host, name),
            image=ctx.image(host),
        )
