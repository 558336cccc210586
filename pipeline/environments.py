"""Where an inventory's hosts come from. An inventory of real hosts is measured as it is; the
embedded lab's inventory (``lab: true``) has a provider that brings the lab up (idempotent, with
the WAN profile of params.yaml) and places its hosts' CPUs. Collection receives the provider and
never imports the lab."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection
from pathlib import Path

from pipeline.collect import campaign, inventory, preflight
from pipeline.collect.modes import MODES

SSH_FIELDS = ("user", "port", "key_file", "known_hosts", "sudo")
COLLECT = inspect.signature(campaign.collect)  # how collect() reads the campaign's arguments


class EmbeddedLab:
    """The provider of the embedded lab's hosts (pipeline/lab), logged into as the inventory
    says: the lab makes that login (user, port, keys, sudo rule) if it is not root's.

    What the lab cannot be (unsupported()): hosts it does not have (a fourth server), or a
    login that differs from host to host (the lab serves one login per inventory; real hosts
    may each have their own). ``benchmarks`` and ``modes``: what the campaign to come plans,
    for the preflight ready() runs once the lab is up."""

    def __init__(self, inv: inventory.Inventory) -> None:
        self.inventory = inv
        self.benchmarks: tuple[str, ...] = ()
        self.modes: list[str] | None = None

    def unsupported(self) -> list[str]:
        """One line per thing this lab inventory asks for that the embedded lab does not have."""
        from pipeline.lab.topology import SSH_HOSTS

        lab_hosts = {h.name: h.address for h in SSH_HOSTS}
        offered = ", ".join(f"{n} ({a})" for n, a in lab_hosts.items())
        where = self.inventory.source
        problems = []
        for host in self.inventory.all_hosts():
            if lab_hosts.get(host.name) != host.address:
                problems.append(
                    f"{where}: hosts.{host.name}: the embedded lab has no host {host.name} at "
                    f"{host.address}; its hosts are {offered} (an inventory of other hosts, "
                    "e.g. four servers, needs real machines and `lab: false`)"
                )
        first = self.inventory.all_hosts()[0]
        for host in self.inventory.all_hosts()[1:]:
            differ = [f for f in SSH_FIELDS if getattr(host.ssh, f) != getattr(first.ssh, f)]
            if differ:
                problems.append(
                    f"{where}: hosts.{host.name}.ssh: logs in with another {', '.join(differ)} "
                    f"than {first.name}; the embedded lab serves one login per inventory: give "
                    "every host the same `ssh:` settings (real hosts may differ per host)"
                )
        return problems

    def login(self):  # noqa: ANN201 - a pipeline.lab.logins.Login (the lab imported late)
        from pipeline.lab.logins import Login

        problems = self.unsupported()
        if problems:
            raise inventory.InventoryError(self.inventory.source, problems)
        ssh = self.inventory.all_hosts()[0].ssh
        return Login(ssh.user, ssh.port, ssh.key_file, ssh.known_hosts, ssh.sudo)

    def ready(self, wan: dict | None, log: Callable[[str], None] = print,
              clusters: Collection[str] = ()) -> None:  # fmt: skip
        """Bring the lab up; its Kubernetes cluster only for a campaign whose modes need it
        (an idle control plane and three kubelets load the hosts every other mode shares), and
        only where it is built (else those modes are skipped, saying how to build it)."""
        from pipeline import lab
        from pipeline.lab import kubernetes as cluster

        # an inventory without a `kubernetes:` section runs no Kubernetes mode on it
        kubernetes = "kubernetes" in clusters and self.inventory.kubernetes is not None
        missing = cluster.missing_build() if kubernetes else None
        if missing:
            log(f"the Kubernetes modes will be skipped: {missing}")
            kubernetes = False
        log("bringing up the embedded lab (idempotent)"
            + (", with its Kubernetes cluster" if kubernetes else ""))  # fmt: skip
        login = self.login()  # refuses what the lab does not have before anything starts
        servers = [h.name for h in self.inventory.servers]
        lab.up(lab.WanProfile(**wan) if wan else None, login, servers,
               kubernetes=kubernetes)  # fmt: skip
        preflight.require(self.inventory.source, self.benchmarks, self.modes, log)

    def place(self, placement: str) -> dict:
        from pipeline.lab import cpus

        return cpus.place(placement)


def provider(inventory_file: str | Path) -> campaign.Provider | None:
    """The provider an inventory names (None for real hosts)."""
    inv = inventory.load(inventory_file, known_modes=MODES, check_files=False)
    return EmbeddedLab(inv) if inv.lab else None


def prepared(inventory_file: str | Path, benchmarks: Collection[str],
             modes: list[str] | None = None,
             log: Callable[[str], None] = print) -> campaign.Provider | None:  # fmt: skip
    """The inventory's provider for campaigns of ``benchmarks`` in ``modes``, after the
    preflight (pipeline/collect/preflight.py) found every host ready: a problem stops the stage
    before a campaign writes anything. On real hosts it runs here; the lab's provider runs it
    once the lab is up. Every collection stage gets its provider from here (the benchmarks'
    own, the instrument check, the WAN calibration)."""
    source = provider(inventory_file)
    if source is None:
        preflight.require(inventory_file, tuple(benchmarks), modes, log)
    else:
        source.benchmarks, source.modes = tuple(benchmarks), modes
    return source


def collect(benchmark: str, inventory_file: str | Path, *args, **kwargs) -> dict[str, int]:
    """``pipeline.collect.campaign.collect`` with the inventory's own provider (``prepared``)."""
    given = COLLECT.bind_partial(
        benchmark, inventory_file, *args, **kwargs
    ).arguments
    source = prepared(inventory_file, (benchmark,), given.get("modes"), given.get("log", print))
    return campaign.collect(benchmark, inventory_file, *args, provider=source, **kwargs)
