"""docker-nat: a published port dialled at the host's address (iptables DNAT to the container)."""

from pipeline.collect.modes.base import (
    Context,
    Deployment,
    Mode,
    Workload,
    container_name,
    docker_run,
    publish_options,
    remove_container,
    server_host,
)


class DockerNat(Mode):
    name = "docker-nat"
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
        return Deployment(
            server=host,
            address=host.address,
            stop=remove_container(ctx, host, name),
            image=ctx.image(host),
        )
