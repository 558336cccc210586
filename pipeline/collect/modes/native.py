"""native: the server is a plain process on the host, no container. The baseline."""

from pipeline.collect.modes.base import (
    Context,
    Deployment,
    Mode,
    Workload,
    server_host,
    start_process,
)


class Native(Mode):
    name = "native"

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        stop = start_process(ctx, host, f"{workload.name}-native", workload.argv, workload.scratch)
        return Deployment(server=host, address=host.address, stop=stop)

    def foreground(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        if not workload.scratch:
            return Deployment(server=host, address=host.address, stop=lambda: None, client=host)
        # Files the tool leaves on the host (disk's test directory) go before and after, as
        # for a server started by start().
        remove = ["rm", "-rf", "--", *workload.scratch]
        ctx.pool[host.name].run(remove, timeout=60)
        stop = lambda: ctx.pool[host.name].run(remove, timeout=60)  # noqa: E731
        return Deployment(server=host, address=host.address, stop=stop, client=host)
