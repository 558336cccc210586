"""The Docker engines through their API (the Docker SDK) over the inventory's SSH sessions.

What goes through the API, with structured answers and errors instead of parsed CLI output
and shell-quoted arguments: the objects a campaign labelled (containers, networks, volumes,
services) and their removal, inspection (a container's addresses per network, its main
process and cgroup; a network's driver, scope, subnets and MTU option; the daemon's cgroup
driver and Swarm state), and waits for an engine event (an object's removal). The timed
paths keep the command line a user would type (`docker run`, `docker service create`/`scale`
in the cold-start and orchestration benchmarks, the modes' `docker run`): what they measure
includes the CLI. docs/sharing.md lists both sides.

Transport. docker-py's own ``ssh://`` adapter opens a paramiko client of its own: host keys
from ``~/.ssh/known_hosts`` and, to log in, the SSH agent, ``~/.ssh/id_*`` and
``~/.ssh/config``, none of which the inventory names. Here each HTTP connection is instead a
channel on the host's :class:`~pipeline.collect.remote.Session` (the inventory's key, host
keys only from the inventory's known_hosts, an unknown key refused) running the engine's
``docker system dial-stdio``, the CLI's own bridge to the daemon's socket. The engine's
command line picks the daemon: ``docker`` for the rootful one, ``docker -H
unix:///run/user/UID/docker.sock`` (through ``sudo -n`` where the login needs it) for the
rootless user's.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import docker
import docker.errors
import paramiko
import requests
from docker.transport.basehttpadapter import BaseHTTPAdapter
from docker.transport.sshconn import SSHConnection, SSHConnectionPool

from pipeline.hosts import RemoteError

__all__ = [
    "ERRORS",
    "ContainerFacts",
    "EngineFacts",
    "Labelled",
    "NetworkFacts",
    "SessionAdapter",
    "address",
    "cgroup_path",
    "cleanup",
    "connect",
    "container",
    "container_address",
    "daemon_time",
    "dial_command",
    "engine",
    "ensure_network",
    "labelled",
    "network",
    "volume_mountpoint",
    "wait_removed",
]

Transport = Callable[[], paramiko.Transport]
# What an API call can raise: the engine's answer (docker-py's APIError, NotFound), or the way
# to it (requests' connection errors, paramiko's, a closed channel's OSError, a lost session's
# RemoteError). Callers that report failures as RemoteError catch all of them.
ERRORS = (docker.errors.DockerException, requests.RequestException, paramiko.SSHException,
          OSError, RemoteError)  # fmt: skip
DIAL = ("system", "dial-stdio")
# docker-py's floor: the client is made without a request, then asks the daemon its version.
API_FLOOR = "1.24"
MOUNT = "http+docker://ssh"  # where docker-py routes an ssh:// client's requests
MTU_OPTION = "com.docker.network.driver.mtu"
SERVICE_LABEL = "com.docker.swarm.service.id"  # the engine's label on a service's task containers


def dial_command(cli: Sequence[str] = ("docker",)) -> str:
    """The remote command behind each API connection: the engine's CLI bridging to its socket."""
    return shlex.join([*cli, *DIAL])


class _DialConnection(SSHConnection):
    """One HTTP connection: a fresh channel on the session's transport running the dial."""

    def __init__(self, transport: Transport, command: str, timeout: float):
        super().__init__(ssh_transport=None, timeout=timeout)
        self._transport = transport
        self._command = command

    def connect(self) -> None:
        channel = self._transport().open_session()
        channel.settimeout(self.timeout)
        channel.exec_command(self._command)
        self.sock = channel


class _DialPool(SSHConnectionPool):
    def __init__(self, transport: Transport, command: str, timeout: float, maxsize: int):
        super().__init__(ssh_client=None, timeout=timeout, maxsize=maxsize)
        self._transport = transport
        self._command = command

    def _new_conn(self) -> _DialConnection:
        return _DialConnection(self._transport, self._command, self.timeout)

    def _get_conn(self, timeout: float | None = None) -> _DialConnection:
        # docker-py's pool hands back a pooled connection unchecked (urllib3's dropped-connection
        # test would call fileno() on the channel): a channel whose dial ended, or whose session
        # the Pool replaced since, would fail the next request with "Socket is closed"
        conn = super()._get_conn(timeout)
        if conn.sock is not None and _dead(conn.sock):
            conn.close()
            return self._new_conn()
        return conn


def _dead(channel: paramiko.Channel) -> bool:
    """Whether a pooled connection's channel can no longer carry a request."""
    transport = channel.get_transport()
    return (channel.closed or channel.eof_received or channel.exit_status_ready()
            or transport is None or not transport.is_active())


class SessionAdapter(BaseHTTPAdapter):
    """requests' adapter for every API call: connections are channels of ``transport()``
    (called per connection, so a Pool that replaced a dead session is used from then on)."""

    def __init__(self, transport: Transport, command: str, timeout: float = 60,
                 max_pool_size: int = 4):  # fmt: skip
        super().__init__()
        self.command = command
        self._pool = _DialPool(transport, command, timeout, max_pool_size)

    def get_connection(self, url: str, proxies: dict | None = None) -> _DialPool:
        return self._pool

    def close(self) -> None:
        super().close()
        self._pool.close()


def connect(transport: Transport, cli: Sequence[str] = ("docker",),
            timeout: float = 60) -> docker.DockerClient:  # fmt: skip
    """A Docker SDK client of the engine ``cli`` names, over ``transport`` (a Session's).

    docker-py is asked for an ``ssh://`` client in its shell-out flavour, which connects
    nothing until a request; its adapter is replaced by :class:`SessionAdapter` before the
    first request (the daemon's API version), so docker-py's own SSH settings are never used.
    Errors: docker.errors.DockerException (the dial failed: no such engine, daemon down)."""
    client = docker.DockerClient(base_url="ssh://engine", version=API_FLOOR,
                                 use_ssh_client=True, timeout=timeout)  # fmt: skip
    adapter = SessionAdapter(transport, dial_command(cli), timeout)
    client.api.mount(MOUNT, adapter)
    client.api._custom_adapter = adapter  # docker-py closes it with the client
    try:
        client.api._version = client.api.version(api_version=False)["ApiVersion"]
    except (requests.RequestException, paramiko.SSHException, OSError, RemoteError) as e:
        # the dial failed: no docker CLI there, no daemon behind the socket, a session gone
        client.close()
        raise docker.errors.DockerException(
            f"no Docker engine answered `{adapter.command}` ({type(e).__name__}: {e})"
        ) from None
    return client


# ---- inventory, leftovers and clean-up ---------------------------------------------------


@dataclass(frozen=True)
class Labelled:
    """What carries a label on one engine, by kind (names; services by name too)."""

    containers: tuple[str, ...] = ()
    networks: tuple[str, ...] = ()
    volumes: tuple[str, ...] = ()
    services: tuple[str, ...] = ()

    def entries(self, prefix: str = "") -> list[str]:
        """``[prefix]kind:name`` per object, the leftovers check's words."""
        kinds = ("container", "network", "volume", "service")
        groups = (self.containers, self.networks, self.volumes, self.services)
        return [
            f"{prefix}{kind}:{name}"
            for kind, names in zip(kinds, groups, strict=True)
            for name in names
        ]


def _services(client: docker.DockerClient, filters: dict) -> list[dict]:
    """The labelled services where the engine is a Swarm manager; none elsewhere (a worker or
    a standalone engine answers 503, as `docker service ls` fails there)."""
    if engine(client).swarm_state != "active":
        return []
    try:
        return client.api.services(filters=filters)
    except docker.errors.APIError as e:
        if e.status_code == 503:
            return []
        raise


def labelled(client: docker.DockerClient, label: str) -> Labelled:
    """Every container (running or not), network, volume and service carrying ``label``
    (``key`` or ``key=value``)."""
    filters = {"label": label}
    containers = client.api.containers(all=True, filters=filters)
    networks = client.api.networks(filters=filters)
    volumes = client.api.volumes(filters=filters).get("Volumes") or []
    services = _services(client, filters)
    return Labelled(
        containers=tuple(sorted(c["Names"][0].lstrip("/") for c in containers)),
        networks=tuple(sorted(n["Name"] for n in networks)),
        volumes=tuple(sorted(v["Name"] for v in volumes)),
        services=tuple(sorted(s["Spec"]["Name"] for s in services)),
    )


def cleanup(client: docker.DockerClient, label: str, settle_s: float = 30) -> Labelled:
    """Remove everything carrying ``label``: containers (forced), services, then networks and
    volumes once the removed services' local task containers are gone (a network in use
    cannot be removed). A Swarm network is left to the manager's clean-up on a worker. Every
    object is tried; docker.errors.APIError at the end names those that failed. Returns what
    was found."""
    found = labelled(client, label)
    failed: list[str] = []

    def remove(what: str, call: Callable[[], object]) -> None:
        try:
            call()
        except docker.errors.NotFound:
            pass  # removed meanwhile (by its service, or a concurrent clean-up)
        except docker.errors.APIError as e:
            failed.append(f"{what}: {e.explanation or e}")

    for name in found.containers:
        remove(f"container {name}", lambda n=name: client.api.remove_container(n, force=True))
    services = _services(client, {"label": label})
    for service in services:
        remove(f"service {service['Spec']['Name']}",
               lambda s=service["ID"]: client.api.remove_service(s))  # fmt: skip
    for service in services:
        tasks = client.api.containers(
            all=True, filters={"label": f"{SERVICE_LABEL}={service['ID']}"}
        )
        for task in tasks:
            wait_removed(client, "container", task["Id"], settle_s)
    manager = engine(client).manager
    for net in client.api.networks(filters={"label": label}):
        if net.get("Scope") == "swarm" and not manager:
            continue
        remove(f"network {net['Name']}", lambda n=net["Id"]: client.api.remove_network(n))
    for name in found.volumes:
        remove(f"volume {name}", lambda n=name: client.api.remove_volume(n, force=True))
    if failed:
        raise docker.errors.APIError("could not remove: " + "; ".join(failed))
    return found


# ---- inspection ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ContainerFacts:
    id: str
    name: str
    pid: int  # the main process on the host (0 when not running)
    status: str  # created | running | exited | ...
    exit_code: int
    addresses: dict[str, str]  # network name -> IPv4 address ("" on host/none networks)
    cgroup_parent: str  # HostConfig.CgroupParent; "" = the daemon's --cgroup-parent or default
    sandbox: str  # the network namespace's path on the host (NetworkSettings.SandboxKey)
    upper_dir: str = ""  # the writable layer's directory on the host (overlay2), else ""


def container(client: docker.DockerClient, name: str) -> ContainerFacts:
    """A container's facts (docker.errors.NotFound when there is none by that name or id)."""
    attrs = client.api.inspect_container(name)
    networks = attrs["NetworkSettings"].get("Networks") or {}
    return ContainerFacts(
        id=attrs["Id"],
        name=attrs["Name"].lstrip("/"),
        pid=int(attrs["State"].get("Pid") or 0),
        status=attrs["State"].get("Status", ""),
        exit_code=int(attrs["State"].get("ExitCode") or 0),
        addresses={net: (conf or {}).get("IPAddress") or "" for net, conf in networks.items()},
        cgroup_parent=attrs["HostConfig"].get("CgroupParent") or "",
        sandbox=attrs["NetworkSettings"].get("SandboxKey") or "",
        upper_dir=((attrs.get("GraphDriver") or {}).get("Data") or {}).get("UpperDir") or "",
    )


def volume_mountpoint(client: docker.DockerClient, name: str) -> str:
    """Where a volume's files lie on the host (docker.errors.NotFound when there is none)."""
    return client.api.inspect_volume(name)["Mountpoint"]


def address(facts: ContainerFacts, network: str | None = None) -> str:
    """The container's IPv4 address on ``network`` (None: its first network with one, in the
    engine's order), or "" when it has none there."""
    if network is not None:
        return facts.addresses.get(network, "")
    return next((a for a in facts.addresses.values() if a), "")


def container_address(client: docker.DockerClient, name: str, network: str | None = None) -> str:
    """:func:`address` of the container ``name``."""
    return address(container(client, name), network)


@dataclass(frozen=True)
class NetworkFacts:
    id: str
    name: str
    driver: str
    scope: str  # local | swarm
    attachable: bool
    subnets: tuple[str, ...]
    mtu: int | None  # the network's MTU option; None: the driver's default applies
    labels: dict[str, str]


def network(client: docker.DockerClient, name: str) -> NetworkFacts | None:
    """A network's facts, None when the engine has no network by that name or id."""
    try:
        attrs = client.api.inspect_network(name)
    except docker.errors.NotFound:
        return None
    options = attrs.get("Options") or {}
    configs = (attrs.get("IPAM") or {}).get("Config") or []
    return NetworkFacts(
        id=attrs["Id"],
        name=attrs["Name"],
        driver=attrs["Driver"],
        scope=attrs["Scope"],
        attachable=bool(attrs.get("Attachable")),
        subnets=tuple(c["Subnet"] for c in configs if c.get("Subnet")),
        mtu=int(options[MTU_OPTION]) if options.get(MTU_OPTION) else None,
        labels=dict(attrs.get("Labels") or {}),
    )


def ensure_network(client: docker.DockerClient, name: str, driver: str, labels: dict[str, str],
                   options: dict[str, str] | None = None, attachable: bool = False,
                   ipam: dict | None = None) -> NetworkFacts:  # fmt: skip
    """The network ``name``, created with these settings when the engine has none by that name
    (an existing one is kept as it is, like the campaign's once-per-campaign networks).
    ``ipam``: {"subnet", "gateway", "iprange"} for a macvlan network."""
    found = network(client, name)
    if found is not None:
        return found
    pool = None
    if ipam:
        pool = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(
            subnet=ipam.get("subnet"), gateway=ipam.get("gateway"),
            iprange=ipam.get("iprange"))])  # fmt: skip
    try:
        client.api.create_network(name, driver=driver, options=options or None, labels=labels,
                                  attachable=attachable or None, ipam=pool)  # fmt: skip
    except docker.errors.APIError as e:
        if e.status_code != 409:  # 409: made meanwhile by another step: use it
            raise
    facts = network(client, name)
    if facts is None:
        raise docker.errors.NotFound(f"network {name} vanished right after its creation")
    return facts


@dataclass(frozen=True)
class EngineFacts:
    name: str  # the daemon's host name
    version: str
    cgroup_driver: str  # cgroupfs | systemd | none
    cgroup_version: str  # "1" | "2"
    swarm_state: str  # inactive | pending | active | error | locked
    swarm_node: str  # the node's Swarm id ("" outside a Swarm)
    manager: bool


def engine(client: docker.DockerClient) -> EngineFacts:
    info = client.api.info()
    swarm = info.get("Swarm") or {}
    return EngineFacts(
        name=info.get("Name", ""),
        version=info.get("ServerVersion", ""),
        cgroup_driver=info.get("CgroupDriver", ""),
        cgroup_version=str(info.get("CgroupVersion", "")),
        swarm_state=swarm.get("LocalNodeState", "") or "inactive",
        swarm_node=swarm.get("NodeID", ""),
        manager=bool(swarm.get("ControlAvailable")),
    )


def cgroup_path(facts: ContainerFacts, driver: str, daemon_parent: str = "") -> str:
    """The container's cgroup path as the host's /proc/PID/cgroup shows it (no cgroup
    namespace), from its id and parent. The API does not report the daemon's own
    ``--cgroup-parent``: pass it as ``daemon_parent`` when the daemon sets one."""
    parent = facts.cgroup_parent or daemon_parent
    if driver == "systemd":
        # systemd slices are a hierarchy spelled in one name: a-b.slice lies under a.slice
        slice_ = parent or "system.slice"
        parts = slice_.removesuffix(".slice").split("-")
        slices = ["-".join(parts[: i + 1]) + ".slice" for i in range(len(parts))]
        return "/" + "/".join([*slices, f"docker-{facts.id}.scope"])
    return f"{(parent or '/docker').rstrip('/')}/{facts.id}"


# ---- event waits --------------------------------------------------------------------------

_INSPECT = {
    "container": lambda client, name: client.api.inspect_container(name)["Id"],
    "network": lambda client, name: client.api.inspect_network(name)["Id"],
    "volume": lambda client, name: client.api.inspect_volume(name)["Name"],
}


_RFC3339 = re.compile(r"^(?P<seconds>[^.]+?)(?:\.(?P<fraction>\d+))?(?P<zone>Z|[+-]\d\d:\d\d)$")


def daemon_time(client: docker.DockerClient) -> float:
    """The daemon's clock (Unix seconds): event windows are in its time, not this machine's."""
    stamp = client.api.info()["SystemTime"]  # RFC 3339 with nanoseconds, e.g. ...05.123456789Z
    match = _RFC3339.match(stamp)
    if match is None:
        raise ValueError(f"the daemon's SystemTime {stamp!r} is not RFC 3339")
    zone = match["zone"].replace("Z", "+00:00")
    seconds = datetime.fromisoformat(match["seconds"] + zone).timestamp()
    return seconds + float(f"0.{match['fraction'] or 0}")


def wait_removed(client: docker.DockerClient, kind: str, name: str, timeout: float) -> bool:
    """Wait until the engine has no ``kind`` (container, network, volume) ``name``. The
    engine's event stream is read from the daemon's time before the check (``since``), so a
    removal between the check and the wait is not missed, and the daemon ends the stream at
    ``until`` (docker-py cannot cancel a stream over SSH, and reads an event stream without
    a timeout). Returns whether it is gone."""
    if kind not in _INSPECT:
        raise ValueError(f"kind {kind!r}: one of {sorted(_INSPECT)}")
    since = daemon_time(client)
    try:
        key = _INSPECT[kind](client, name)
    except docker.errors.NotFound:
        return True
    filters = {"type": kind, "event": "destroy", kind: key}
    events = client.api.events(since=f"{since:.9f}", until=f"{since + timeout:.9f}",
                               filters=filters, decode=True)  # fmt: skip
    for _ in events:  # only the one object's removal passes the filters
        return True
    try:
        _INSPECT[kind](client, name)
    except docker.errors.NotFound:
        return True
    return False
