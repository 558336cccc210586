"""swarm-ingress: a Swarm service published through the routing mesh (IPVS on every node).

The client dials the manager's address; IPVS balances to the task over the ingress overlay.
Without IPVS in the kernel the mesh refuses connections, so the mode is skipped with that reason.
"""

from pipeline.collect.modes.base import (
    LABEL,
    Context,
    Deployment,
    Mode,
    Workload,
    container_name,
    server_host,
)
from pipeline.collect.modes.swarm_overlay import swarm_problem

IPVS_PROBE = (
    "if [ -e /proc/net/ip_vs ]; then echo yes; "
    "elif (zcat /proc/config.gz 2>/dev/null || cat /boot/config-$(uname -r) 2>/dev/null) "
    "| grep -q '^CONFIG_IP_VS=[ym]'; then echo yes; else echo no; fi"
)


class SwarmIngress(Mode):
    name = "swarm-ingress"
    host_engine = "docker"

    def available(self, ctx: Context, path: str) -> str | None:
        problem = swarm_problem(ctx)
        if problem:
            return problem
        for host in ctx.inventory.servers:
            if ctx.pool[host.name].run(IPVS_PROBE).stdout.strip() != "yes":
                return (
                    f"kernel on {host.name} has no IPVS (no /proc/net/ip_vs, CONFIG_IP_VS "
                    "not set): the Swarm routing mesh cannot forward published ports"
                )
        return None

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        session = ctx.pool[host.name]
        name = container_name(ctx, self.name, workload)
        publish = [f"published={workload.port},target={workload.port},protocol=tcp,mode=ingress"]
        if workload.udp:
            publish.append(
                f"published={workload.port},target={workload.port},protocol=udp,mode=ingress"
            )
        session.run(
            [
                "docker",
                "service",
                "create",
                "--detach",
                "--name",
                name,
                "--label",
                f"{LABEL}={ctx.campaign}",
                "--container-label",
                f"{LABEL}={ctx.campaign}",
                "--replicas",
                "1",
                "--constraint",
                f"node.hostname=={host.name}",
                *[arg for p in publish for arg in ("--publish", p)],
                ctx.image(host).tag,
                *workload.argv,
            ],
            timeout=120,
        )
        # The warm-up's retry loop waits for the task to accept connections.
        return Deployment(
            server=host,
            address=host.address,
            stop=lambda: session.run(["docker", "service", "rm", name], timeout=60),
            image=ctx.image(host),
        )
