"""Storage modes: where a host benchmark's test directory lives (the `disk` benchmark).

Each runs the tool to completion in a container on the first server, with ``STORAGE_DIR``
(the same path in every mode, and in `native` a plain directory on the host) on:

- docker-overlay2: rootful Docker's writable layer (the overlay2 storage driver);
- docker-bind: a host directory (``STORAGE_DIR`` itself) bind-mounted at the same path;
- docker-volume: a named, labelled Docker volume (driver `local`: a directory in dockerd's
  data root);
- rootless-docker-layer: rootless Docker's writable layer, with whatever storage driver the
  rootless dockerd uses (recorded in the notes: overlay2 on a kernel with overlay in user
  namespaces, else fuse-overlayfs or vfs);
- podman-fuse-overlayfs: rootful Podman on a store of its own whose overlay layers are
  mounted by fuse-overlayfs (``overlay.mount_program``), the user-space overlay rootless
  engines fall back to. Rootful, because the lab's /dev/fuse is root-only.

They only make sense for host benchmarks (paths: "host"). What a step creates (the host
directory, the volume) is removed by the Deployment's stop; the campaign's cleanup removes
labelled volumes and empties ``SCRATCH_DIR`` after a crash.

Direct I/O: whether O_DIRECT reaches the disk depends on the storage, so each mode, once per
campaign, writes a small file with O_DIRECT, looks at how much of it sits in the host's page
cache (``fincore``) and records that in the notes as ``direct_io``.
"""

from __future__ import annotations

import json
import shlex

from pipeline.collect import engine_api
from pipeline.collect.images import ToolImage
from pipeline.collect.modes.base import (
    DOCKER_ENGINES,
    FUSE_OVERLAYFS,
    LABEL,
    Context,
    Deployment,
    Host,
    Mode,
    ModeUnavailable,
    RemoteError,
    Workload,
    container_name,
    engine_cli,
    force_remove,
    foreground_container,
    inspect_container,
    missing_tool,
    root_if_allowed,
    root_problem,
    server_host,
)
from pipeline.collect.modes.podman import with_ulimit_fallback
from pipeline.collect.modes.rootless_docker import RootlessDocker
from pipeline.hosts import STORAGE_DIR  # noqa: E402  (the test directory, in every mode)

PROBE_MIB = 16  # size of the direct-I/O probe's file


def merged_output(deployment: Deployment) -> Deployment:
    """The tool's stderr (fio's error messages) and the engine's into the captured output."""
    wrap = deployment.wrap_client
    if wrap is not None:
        deployment.wrap_client = lambda argv: f"{wrap(argv)} 2>&1"
    return deployment


def probe_argv(fio: str) -> list[str]:
    return [fio, "--name=direct-probe", f"--filename={STORAGE_DIR}/probe.dat", "--rw=write",
            "--bs=1M", f"--size={PROBE_MIB}M", "--direct=1", "--ioengine=psync",
            "--output-format=terse"]  # fmt: skip


def direct_io_note(resident: int, size: int) -> str:
    """What a direct write left in the host's page cache, from ``fincore``'s RES and SIZE."""
    if size <= 0:
        return "O_DIRECT (fio --direct=1); the probe's file was not found on the host"
    verdict = (
        "bypassed the host page cache"
        if resident == 0
        else "NOT bypassed: the writes went through the host page cache"
    )
    return (
        f"O_DIRECT (fio --direct=1): {verdict} ({resident} of {size} bytes of a "
        f"{PROBE_MIB} MiB direct write resident afterwards, fincore)"
    )


def parse_fincore(text: str) -> tuple[int, int]:
    """`fincore --bytes --noheadings --output RES,SIZE FILE` -> (resident, size)."""
    fields = text.split()
    if len(fields) != 2 or not all(f.isdigit() for f in fields):
        return 0, 0
    return int(fields[0]), int(fields[1])


class StorageMode(Mode):
    """A container engine running the tool with STORAGE_DIR on some storage."""

    engine = "docker"

    def __init__(self) -> None:
        self._notes: dict[tuple[str, str], dict[str, str]] = {}  # (campaign, host) -> notes

    # what a subclass changes ----------------------------------------------------------------

    def options(self, ctx: Context, host: Host, name: str) -> list[str]:
        """The engine's run options that put STORAGE_DIR on this mode's storage."""
        return []

    def create(self, ctx: Context, host: Host, name: str) -> None:
        """Make what the options refer to (a directory, a volume)."""

    def remove(self, ctx: Context, host: Host, name: str) -> None:
        """Remove what create() made."""

    def probe_file(self, ctx: Context, host: Host, name: str, probe: str) -> str:
        """The host path of the probe's file, the container ``probe`` still existing."""
        if self.engine in DOCKER_ENGINES:
            upper = inspect_container(ctx, host, probe, self.engine).upper_dir
        else:
            fmt = "{{.GraphDriver.Data.UpperDir}}"
            cli = engine_cli(ctx, host, self.engine)
            upper = ctx.pool[host.name].run([*cli, "inspect", "--format", fmt, probe]).stdout
        return f"{upper.strip()}{STORAGE_DIR}/probe.dat"

    def storage_notes(self, ctx: Context, host: Host, name: str) -> dict[str, str]:
        return {"storage": self.name}

    def extra_options(self, ctx: Context, host: Host, workload: Workload) -> list[str]:
        """Options the engine needs to run at all here (podman's ulimit fallback)."""
        return []

    # the contract ---------------------------------------------------------------------------

    def foreground(self, ctx: Context, workload: Workload) -> Deployment:
        host = server_host(ctx)
        name = container_name(ctx, self.name, workload)
        key = (ctx.campaign, host.name)
        self.create(ctx, host, name)
        try:
            if key not in self._notes:  # once per campaign: the storage does not change
                extra = self.extra_options(ctx, host, workload)
                notes = self.storage_notes(ctx, host, name)
                notes["engine_options"] = shlex.join(extra)
                notes["direct_io"] = self.direct_io(ctx, host, name, extra, workload.argv[0])
                self._notes[key] = notes
            notes = self._notes[key]
            options = [*shlex.split(notes["engine_options"]), *self.options(ctx, host, name)]
            deployment = foreground_container(ctx, host, self.engine, name, options, notes)
        except Exception:
            self.remove(ctx, host, name)
            raise
        stop_container = deployment.stop

        def stop() -> None:
            try:
                stop_container()
            finally:
                self.remove(ctx, host, name)

        deployment.stop = stop
        return merged_output(deployment)

    def direct_io(self, ctx: Context, host: Host, name: str, extra: list[str], fio: str) -> str:
        """Write a file with O_DIRECT in a kept container, then ask the host's page cache."""
        privilege = "ask the page cache about the engine's files (fincore)"
        problem = root_problem(host, privilege)  # before the probe leaves root's files
        if problem:
            raise ModeUnavailable(problem)
        cli = engine_cli(ctx, host, self.engine)
        session = ctx.pool[host.name]
        probe = f"{name}-probe"
        image: ToolImage = ctx.image(host, self.engine)
        label = ["--label", f"{LABEL}={ctx.campaign}"]
        options = [*extra, *self.options(ctx, host, name)]
        session.run(force_remove(cli, self.engine, probe), check=False, timeout=60)
        try:
            session.run([*cli, "run", "--name", probe, *label, *options, image.tag,
                         *probe_argv(fio)], timeout=120)  # fmt: skip
            path = self.probe_file(ctx, host, name, probe)
            out = session.run(["fincore", "--bytes", "--noheadings", "--output", "RES,SIZE",
                               path], check=False, timeout=30, root=privilege).stdout  # fmt: skip
            return direct_io_note(*parse_fincore(out))
        finally:
            session.run(force_remove(cli, self.engine, probe), check=False, timeout=60)


class DockerOverlay2(StorageMode):
    name = "docker-overlay2"

    def available(self, ctx: Context, path: str) -> str | None:
        host = server_host(ctx)
        out = ctx.pool[host.name].run(["docker", "info", "--format", "{{.Driver}}"],
                                      check=False, timeout=30)  # fmt: skip
        driver = out.stdout.strip()
        if out.status != 0:
            return f"rootful dockerd does not answer on {host.name}"
        if driver != "overlay2":
            return f"rootful dockerd on {host.name} uses storage driver {driver!r}, not overlay2"
        return None

    def storage_notes(self, ctx: Context, host: Host, name: str) -> dict[str, str]:
        return {"storage": "container writable layer", **docker_driver(ctx, host, ["docker"])}


class DockerBind(StorageMode):
    name = "docker-bind"

    def options(self, ctx: Context, host: Host, name: str) -> list[str]:
        return ["--mount", f"type=bind,source={STORAGE_DIR},target={STORAGE_DIR}"]

    def create(self, ctx: Context, host: Host, name: str) -> None:
        ctx.pool[host.name].run(["mkdir", "-p", STORAGE_DIR], timeout=30)

    def remove(self, ctx: Context, host: Host, name: str) -> None:
        session = ctx.pool[host.name]  # the container writes as root
        root = root_if_allowed(host, "remove the files a container wrote as root")
        session.run(["rm", "-rf", "--", STORAGE_DIR], timeout=60, root=root)

    def probe_file(self, ctx: Context, host: Host, name: str, probe: str) -> str:
        return f"{STORAGE_DIR}/probe.dat"

    def storage_notes(self, ctx: Context, host: Host, name: str) -> dict[str, str]:
        return {"storage": f"bind mount of the host directory {STORAGE_DIR}",
                "backing_fs": backing_fs(ctx, host, STORAGE_DIR)}  # fmt: skip


class DockerVolume(StorageMode):
    name = "docker-volume"

    def options(self, ctx: Context, host: Host, name: str) -> list[str]:
        return ["--mount", f"type=volume,source={name},target={STORAGE_DIR}"]

    def create(self, ctx: Context, host: Host, name: str) -> None:
        session = ctx.pool[host.name]
        session.run(["docker", "volume", "rm", "--force", name], check=False, timeout=60)
        label = ["--label", f"{LABEL}={ctx.campaign}"]
        session.run(["docker", "volume", "create", *label, name], timeout=60)

    def remove(self, ctx: Context, host: Host, name: str) -> None:
        ctx.pool[host.name].run(["docker", "volume", "rm", "--force", name], timeout=60)

    def mountpoint(self, ctx: Context, host: Host, name: str) -> str:
        try:
            return engine_api.volume_mountpoint(ctx.engine_api(host), name)
        except engine_api.ERRORS as e:
            raise RemoteError(host.name, f"inspect volume {name}", None, reason=str(e)) from None

    def probe_file(self, ctx: Context, host: Host, name: str, probe: str) -> str:
        return f"{self.mountpoint(ctx, host, name)}/probe.dat"

    def storage_notes(self, ctx: Context, host: Host, name: str) -> dict[str, str]:
        where = self.mountpoint(ctx, host, name)
        return {"storage": f"named volume (driver local) at {where}",
                "backing_fs": backing_fs(ctx, host, where)}  # fmt: skip


class RootlessDockerLayer(StorageMode):
    name = "rootless-docker-layer"
    engine = "rootless-docker"

    def available(self, ctx: Context, path: str) -> str | None:
        return RootlessDocker().available(ctx, path)

    def storage_notes(self, ctx: Context, host: Host, name: str) -> dict[str, str]:
        cli = engine_cli(ctx, host, self.engine)
        return {
            "storage": "rootless container writable layer",
            "rootless_user": ctx.users[host.name].name,
            **docker_driver(ctx, host, cli),
        }


class PodmanFuseOverlayfs(StorageMode):
    name = "podman-fuse-overlayfs"
    engine = "podman-fuse-overlayfs"

    def available(self, ctx: Context, path: str) -> str | None:
        host = server_host(ctx)
        problem = missing_tool(ctx, host, "podman", FUSE_OVERLAYFS)
        if problem:
            return problem
        if ctx.pool[host.name].run(["test", "-c", "/dev/fuse"], check=False).status != 0:
            return f"{host.name} has no /dev/fuse (fuse-overlayfs needs the fuse module)"
        return None

    def extra_options(self, ctx: Context, host: Host, workload: Workload) -> list[str]:
        # Rootful podman raises nofile/nproc beyond what runc may set without
        # CAP_SYS_RESOURCE (pipeline/collect/modes/podman.py): probe with a quick run of the tool.
        cli = engine_cli(ctx, host, self.engine)
        session = ctx.pool[host.name]
        image = ctx.image(host, self.engine).tag
        label = ["--label", f"{LABEL}={ctx.campaign}"]
        probe = f"{container_name(ctx, self.name, workload)}-limits"

        def run(ulimits: list[str]) -> None:
            session.run(force_remove(cli, self.engine, probe), check=False, timeout=60)
            session.run([*cli, "run", "--rm", "--name", probe, *label, *ulimits, image,
                         *workload.argv], timeout=120)  # fmt: skip

        return with_ulimit_fallback(ctx, host, run)[0]

    def storage_notes(self, ctx: Context, host: Host, name: str) -> dict[str, str]:
        cli = engine_cli(ctx, host, self.engine)
        fmt = "{{.Store.GraphDriverName}}\t{{json .Store.GraphOptions}}"
        out = ctx.pool[host.name].run([*cli, "info", "--format", fmt], timeout=60).stdout
        driver, _, options = out.strip().partition("\t")
        program = json.loads(options or "{}").get("overlay.mount_program") or {}
        version = " ".join(str(program.get("Version", "")).split())
        return {
            "storage": "container writable layer (rootful podman, fuse-overlayfs store)",
            "storage_driver": driver,
            "mount_program": f"{program.get('Executable', 'none')} ({version})",
        }


def docker_driver(ctx: Context, host: Host, cli: list[str]) -> dict[str, str]:
    """A dockerd's storage driver and its status lines (backing file system, native diff)."""
    fmt = "{{.Driver}}\t{{json .DriverStatus}}"
    out = ctx.pool[host.name].run([*cli, "info", "--format", fmt], timeout=60).stdout.strip()
    driver, _, status = out.partition("\t")
    pairs = json.loads(status or "[]") or []
    return {
        "storage_driver": driver,
        "driver_status": "; ".join(f"{k}: {v}" for k, v in pairs),
    }


def backing_fs(ctx: Context, host: Host, path: str) -> str:
    out = ctx.pool[host.name].run(["df", "--output=fstype,source", path], check=False, timeout=30)
    lines = out.stdout.strip().splitlines()
    return " ".join(lines[-1].split()) if out.status == 0 and len(lines) > 1 else "unknown"
