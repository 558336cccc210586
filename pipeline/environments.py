"""Where an inventory's hosts come from. An inventory of real hosts is measured as it is; the
embedded lab's inventory (``lab: true``) has a provider that brings the lab up (idempotent, with
the WAN profile of params.yaml) and places its hosts' CPUs. Collection receives the provider and
never imports the lab."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

from pipeline.collect import campaign, inventory
from pipeline.collect.modes import MODES


class EmbeddedLab:
    """The provider of the embedded lab's hosts (pipeline/lab), logged into as the inventory
    says: the lab makes that login (user, port, keys, sudo rule) if it is not root's."""

    def __init__(self, inv: inventory.Inventory) -> None:
        self.inventory = inv

    def login(self):  # noqa: ANN201 - a pipeline.lab.logins.Login (the lab imported late)
        from pipeline.lab.logins import Login

        settings = {h.ssh for h in self.inventory.all_hosts()}
        if len(settings) != 1:
            raise inventory.InventoryError(
                self.inventory.source,
                ["hosts: a lab inventory logs in to every host the same way (no per-host ssh)"],
            )
        ssh = settings.pop()
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
        servers = [h.name for h in self.inventory.servers]
        lab.up(lab.WanProfile(**wan) if wan else None, self.login(), servers,
               kubernetes=kubernetes)  # fmt: skip

    def place(self, placement: str) -> dict:
        from pipeline.lab import cpus

        return cpus.place(placement)


def provider(inventory_file: str | Path) -> campaign.Provider | None:
    """The provider an inventory names (None for real hosts)."""
    inv = inventory.load(inventory_file, known_modes=MODES, check_files=False)
    return EmbeddedLab(inv) if inv.lab else None


def collect(benchmark: str, inventory_file: str | Path, *args, **kwargs) -> dict[str, int]:
    """``pipeline.collect.campaign.collect`` with the inventory's own provider."""
    return campaign.collect(
        benchmark, inventory_file, *args, provider=provider(inventory_file), **kwargs
    )
