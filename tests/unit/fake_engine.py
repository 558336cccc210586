"""A Docker engine's HTTP API in miniature, reached the way engine_api reaches a real one: each
connection is a "channel" (one end of a socket pair) on which the dial command was executed,
the other end served by http.server. It keeps containers, networks and volumes with their
labels, answers the calls engine_api makes (version, info, list with label filters, inspect,
create, remove, events) with the fields Docker 20.10 (API 1.41) returns, and records every
request and dial, so tests drive the real docker-py over engine_api's adapter."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

API = "1.41"


def _matches(labels: dict[str, str], wanted: list[str]) -> bool:
    """Docker's label filter: every ``key`` present, every ``key=value`` equal."""
    for item in wanted:
        key, eq, value = item.partition("=")
        if key not in labels or (eq and labels[key] != value):
            return False
    return True


class Engine:
    def __init__(self, swarm: str = "inactive", any_container: str | None = None) -> None:
        """``any_container``: every name not otherwise known is a running container with
        this address on the default bridge (for modes whose `docker run` went to a fake
        session rather than here)."""
        self.any_container = any_container
        self.containers: dict[str, dict] = {}  # id -> inspect document
        self.networks: dict[str, dict] = {}
        self.volumes: dict[str, dict] = {}
        self.events: list[dict] = []
        self.requests: list[tuple[str, str]] = []
        self.dials: list[str] = []
        self.channels: list[FakeChannel] = []
        self.swarm = swarm
        self.lock = threading.Lock()
        self.add_network("bridge", "bridge", {}, subnet="172.17.0.0/16",
                         options={"com.docker.network.driver.mtu": "1500"})  # fmt: skip

    # -- state ------------------------------------------------------------------------------
    def add_network(self, name: str, driver: str, labels: dict, subnet: str = "10.0.9.0/24",
                    options: dict | None = None, attachable: bool = False) -> str:  # fmt: skip
        nid = uuid.uuid4().hex + uuid.uuid4().hex[:32]
        self.networks[nid] = {
            "Name": name, "Id": nid, "Scope": "swarm" if driver == "overlay" else "local",
            "Driver": driver, "EnableIPv6": False, "Attachable": attachable,
            "IPAM": {"Driver": "default", "Options": None, "Config": [{"Subnet": subnet}]},
            "Options": options or {}, "Labels": labels, "Containers": {},
        }  # fmt: skip
        return nid

    def add_container(self, name: str, labels: dict, networks: dict[str, str], pid: int = 4242,
                      cgroup_parent: str = "") -> str:  # fmt: skip
        cid = uuid.uuid4().hex + uuid.uuid4().hex
        self.containers[cid] = {
            "Id": cid, "Name": f"/{name}",
            "State": {"Status": "running", "Running": True, "Pid": pid, "ExitCode": 0},
            "HostConfig": {"CgroupParent": cgroup_parent, "NetworkMode": "default"},
            "GraphDriver": {"Name": "overlay2",
                            "Data": {"UpperDir": f"/var/lib/docker/overlay2/{cid[:16]}/diff"}},
            "Config": {"Labels": labels},
            "NetworkSettings": {
                "SandboxKey": f"/var/run/docker/netns/{cid[:12]}",
                "Networks": {net: {"IPAddress": ip, "NetworkID": self._net(net)["Id"]}
                             for net, ip in networks.items()},
            },
        }  # fmt: skip
        return cid

    def add_volume(self, name: str, labels: dict) -> None:
        self.volumes[name] = {"Name": name, "Driver": "local", "Labels": labels,
                              "Mountpoint": f"/var/lib/docker/volumes/{name}/_data"}  # fmt: skip

    def _net(self, key: str) -> dict:
        for n in self.networks.values():
            if key in (n["Name"], n["Id"]) or (len(key) >= 12 and n["Id"].startswith(key)):
                return n
        raise KeyError(key)

    def _container(self, key: str) -> dict:
        for c in self.containers.values():
            if key in (c["Name"].lstrip("/"), c["Id"]) or (len(key) >= 12
                                                          and c["Id"].startswith(key)):  # fmt: skip
                return c
        if self.any_container:
            self.add_container(key, {}, {"bridge": self.any_container})
            return self._container(key)
        raise KeyError(key)

    def remove_container(self, key: str, delay_s: float = 0.0) -> None:
        """Remove now, or from another thread after ``delay_s`` (a removal to wait for)."""

        def remove() -> None:
            time.sleep(delay_s)
            with self.lock:
                c = self._container(key)
                del self.containers[c["Id"]]
                self._event("container", "destroy", c["Id"], c["Name"].lstrip("/"))

        if delay_s:
            threading.Thread(target=remove, daemon=True).start()
        else:
            remove()

    def _event(self, kind: str, action: str, ident: str, name: str) -> None:
        now = time.time()
        self.events.append({"Type": kind, "Action": action, "time": int(now),
                            "timeNano": int(now * 1e9),
                            "Actor": {"ID": ident, "Attributes": {"name": name}}})  # fmt: skip

    # -- the socket pair ---------------------------------------------------------------------
    def transport(self) -> FakeTransport:
        return FakeTransport(self)


class FakeChannel:
    """What paramiko's Channel offers http.client: a socket, plus exec_command."""

    def __init__(self, engine: Engine, sock: socket.socket, transport: FakeTransport) -> None:
        self._engine, self._sock, self._transport = engine, sock, transport
        self.closed = False  # paramiko's: the channel ended (its command exited, or closed)
        self.eof_received = False
        engine.channels.append(self)

    def exec_command(self, command: str) -> None:
        self._engine.dials.append(command)

    def end(self) -> None:
        """The remote command exited (the dial ended): paramiko marks the channel closed, and
        a send on it raises."""
        self.closed = self.eof_received = True

    def exit_status_ready(self) -> bool:
        return self.closed

    def get_transport(self) -> FakeTransport:
        return self._transport

    def settimeout(self, timeout: float | None) -> None:
        self._sock.settimeout(timeout)

    def sendall(self, data: bytes) -> None:
        if self.closed:
            raise OSError("Socket is closed")  # paramiko.Channel._send's own words
        self._sock.sendall(data)

    def makefile(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        return self._sock.makefile(*args, **kwargs)

    def fileno(self) -> int:
        return self._sock.fileno()

    def close(self) -> None:
        self._sock.close()


class FakeTransport:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.active = True

    def is_active(self) -> bool:
        return self.active

    def open_session(self) -> FakeChannel:
        mine, theirs = socket.socketpair()
        threading.Thread(target=_serve, args=(self.engine, theirs), daemon=True).start()
        return FakeChannel(self.engine, mine, self)


def _serve(engine: Engine, sock: socket.socket) -> None:
    class Handler(_Handler):
        pass

    Handler.engine = engine
    try:
        Handler(sock, ("channel", 0), None)
    except OSError:
        pass
    finally:
        sock.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    engine: Engine

    def log_message(self, *args) -> None:  # noqa: ANN002 - quiet
        pass

    def _send(self, status: int, body: object | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = [p for p in url.path.split("/") if p]
        if parts and parts[0].startswith("v1."):
            parts = parts[1:]
        e = self.engine
        e.requests.append((method, "/".join(parts)))
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null") if length else None
        labels = json.loads(query.get("filters", "{}")).get("label", [])
        with e.lock:
            try:
                self._answer(method, parts, query, labels, body)
            except KeyError as missing:
                self._send(404, {"message": f"No such object: {missing.args[0]}"})

    def _answer(self, method: str, parts: list[str], query: dict, labels: list[str],
                body: object) -> None:  # fmt: skip
        e = self.engine
        if parts == ["version"]:
            return self._send(200, {"ApiVersion": API, "Version": "20.10.24"})
        if parts == ["info"]:
            stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"
            swarm = {"LocalNodeState": e.swarm, "NodeID": "n0d3" if e.swarm == "active" else "",
                     "ControlAvailable": e.swarm == "active"}  # fmt: skip
            return self._send(200, {"Name": "node1", "ServerVersion": "20.10.24",
                                    "CgroupDriver": "cgroupfs", "CgroupVersion": "1",
                                    "Swarm": swarm, "SystemTime": stamp})  # fmt: skip
        if parts == ["containers", "json"]:
            found = [c for c in e.containers.values()
                     if _matches(c["Config"]["Labels"], labels)]  # fmt: skip
            return self._send(200, [{"Id": c["Id"], "Names": [c["Name"]],
                                     "Labels": c["Config"]["Labels"]} for c in found])  # fmt: skip
        if parts[0] == "containers" and parts[-1] == "json":
            return self._send(200, e._container(parts[1]))
        if parts[0] == "containers" and method == "DELETE":
            e._container(parts[1])
            e.lock.release()  # remove_container takes the lock itself
            try:
                e.remove_container(parts[1])
            finally:
                e.lock.acquire()
            return self._send(204)
        if parts == ["networks"]:
            found = [n for n in e.networks.values() if _matches(n["Labels"], labels)]
            return self._send(200, found)
        if parts == ["networks", "create"]:
            if any(n["Name"] == body["Name"] for n in e.networks.values()):
                return self._send(409, {"message": f"network {body['Name']} already exists"})
            subnet = ((body.get("IPAM") or {}).get("Config") or [{}])[0].get("Subnet")
            nid = e.add_network(body["Name"], body["Driver"], body.get("Labels") or {},
                                subnet or "10.0.9.0/24", body.get("Options"),
                                bool(body.get("Attachable")))  # fmt: skip
            return self._send(201, {"Id": nid, "Warning": ""})
        if parts[0] == "networks" and method == "GET":
            return self._send(200, e._net(parts[1]))
        if parts[0] == "networks" and method == "DELETE":
            n = e._net(parts[1])
            if any(n["Name"] in c["NetworkSettings"]["Networks"] for c in e.containers.values()):
                return self._send(403, {"message": f"error while removing network: network "
                                                   f"{n['Name']} id {n['Id']} has active "
                                                   "endpoints"})  # fmt: skip
            del e.networks[n["Id"]]
            e._event("network", "destroy", n["Id"], n["Name"])
            return self._send(204)
        if parts == ["volumes"]:
            found = [v for v in e.volumes.values() if _matches(v["Labels"], labels)]
            return self._send(200, {"Volumes": found, "Warnings": None})
        if parts[0] == "volumes" and method == "GET":
            return self._send(200, e.volumes[parts[1]])
        if parts[0] == "volumes" and method == "DELETE":
            del e.volumes[parts[1]]
            e._event("volume", "destroy", parts[1], parts[1])
            return self._send(204)
        if parts == ["services"]:
            return self._send(503, {"message": "This node is not a swarm manager."})
        if parts == ["events"]:
            return self._stream_events(query)
        return self._send(501, {"message": f"not in the fake: {method} {'/'.join(parts)}"})

    def _stream_events(self, query: dict) -> None:
        """Events from ``since`` up to ``until`` (both the daemon's clock), chunked JSON."""
        e = self.engine
        filters = json.loads(query.get("filters", "{}"))
        since, until = float(query["since"]), float(query["until"])
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        while True:
            pending = e.events[sent:]
            sent = len(e.events)
            for event in pending:
                kind = event["Type"]
                if (event["timeNano"] / 1e9 >= since
                        and kind in filters.get("type", [kind])
                        and event["Action"] in filters.get("event", [event["Action"]])
                        and event["Actor"]["ID"] in filters.get(kind, [event["Actor"]["ID"]])):
                    data = json.dumps(event).encode() + b"\n"  # fmt: skip
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
            if time.time() >= until:
                break
            e.lock.release()
            time.sleep(0.02)
            e.lock.acquire()
        self.wfile.write(b"0\r\n\r\n")

    def do_GET(self) -> None:  # noqa: N802 - http.server's names
        self._route("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._route("POST")

    def do_DELETE(self) -> None:  # noqa: N802
        self._route("DELETE")
