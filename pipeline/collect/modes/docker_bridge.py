"""docker-bridge: a container on the default bridge; the client dials the container's address.

From another host this needs a route to the node's bridge subnet and a DOCKER-USER accept rule
(the lab sets both up); it measures the bridge and veth without any NAT.

Host benchmarks (cpu, memory) run in a plain `docker run --rm`, which is this default bridge
network too; the network plays no part in them.
"""

from pipeline.collect.modes.base import (
    Context,
    Deployment,
    Mode,
    Workload,
    container_address,
    container_name,
    docker_run,
    foreground_container,
    remove_container,
    server_host,
)


class DockerBridge(Mode):
    name = "docker-bridge"
    engine = "docker"
    paths = ("dc", "internet", "local")

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        name = docker_run(ctx, host, container_name(ctx, self.name, workload), [], workload.argv)
        address = container_address(ctx, host, name)
        return Deployment(
            server=host,
            address=address,
            local_address=address,
            stop=remove_container(ctx, host, name),
            image=ctx.image(host),
        )

    def foreground(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        name = container_name(ctx, self.name, workload)
        return foreground_container(ctx, host, "docker", name)
