"""docker-crun: docker-bridge with crun as the OCI runtime (`docker run --runtime crun`).

crun (C, Debian 12's 1.8.1) does what runc (Go) does: it sets up the namespaces, cgroups,
mounts and seccomp filter and then execs the container's process, which runs on the host
kernel as it does under runc. So what this mode can differ in from docker-bridge is what the
runtime does around the process: the container's start (cold start), the memory the runtime
and its shim hold (footprint, density), and nothing in steady state unless the two set the
container up differently. Everything else is docker-bridge's (pipeline/collect/modes/
docker_bridge.py).

dockerd must have crun registered (`"runtimes": {"crun": {"path": "/usr/bin/crun"}}` in its
daemon config; the lab's dockerds have it); a host whose dockerd lacks it is skipped with the
reason and the fix.
"""

from pipeline.collect.modes.docker_bridge import DockerBridge


class DockerCrun(DockerBridge):
    name = "docker-crun"
    runtime = "crun"
