"""native: the server is a plain process on the host, no container. The baseline."""

from pipeline.modes.base import Context, Deployment, Mode, Workload, server_host, start_process


class Native(Mode):
    name = "native"
    paths = ("dc", "internet", "local")

    def start(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        stop = start_process(ctx, host, f"{workload.name}-native", workload.argv, workload.scratch)
        return Deployment(server=host, address=host.address, stop=stop)

    def foreground(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        return Deployment(server=host, address=host.address, stop=lambda: None, client=host)
