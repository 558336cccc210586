"""`python -m pipeline.lab up | down | status | reset`: drive the embedded lab from a shell."""

from __future__ import annotations

import argparse
import logging
import sys
import time

from pipeline.lab import emulator, kubernetes
from pipeline.lab.commands import LabError
from pipeline.lab.emulator import WanProfile
from pipeline.lab.lifecycle import down, reset, status, up

PROG = "python -m pipeline.lab"


def parse_args(argv: list[str] | None, prog: str = PROG) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    up_parser = commands.add_parser("up", help="bring the lab up (idempotent)")
    up_parser.add_argument(
        "--inventory", metavar="FILE",
        help="also serve this lab inventory's login (user, port, keys, sudo), e.g. "
        "inventory/lab-operator.yaml; the collection stages do this themselves",
    )  # fmt: skip
    up_parser.add_argument(
        "--kubernetes", action="store_true",
        help="also bring up the lab's Kubernetes cluster (control plane on node1, a kubelet on "
        "every node; needs `make kubernetes`); `down` always removes it",
    )  # fmt: skip
    defaults = WanProfile()
    wan = up_parser.add_argument_group("WAN path to inet-client (one-way, each direction)")
    wan.add_argument("--wan-delay-ms", type=float, help=f"default {defaults.delay_ms:g}")
    wan.add_argument("--wan-jitter-ms", type=float, help=f"default {defaults.jitter_ms:g}")
    wan.add_argument("--wan-jitter-dist", help=f"default {defaults.jitter_dist}")
    wan.add_argument("--wan-loss-pct", type=float, help=f"default {defaults.loss_pct:g}")
    wan.add_argument("--wan-seed", type=int, help=f"default {defaults.seed}")
    commands.add_parser("down", help="remove everything `up` made")
    commands.add_parser("status", help="health per component; non-zero exit if any is missing")
    commands.add_parser("reset", help="new host keys and known_hosts files (up never trusts a "
                        "changed host key again: this is the way to new keys)")  # fmt: skip
    return parser.parse_args(argv)


def wan_profile(args: argparse.Namespace) -> WanProfile | None:
    """The profile the options ask for, starting from the one in use; None if no option."""
    given = {
        "delay_ms": args.wan_delay_ms,
        "jitter_ms": args.wan_jitter_ms,
        "jitter_dist": args.wan_jitter_dist,
        "loss_pct": args.wan_loss_pct,
        "seed": args.wan_seed,
    }
    given = {k: v for k, v in given.items() if v is not None}
    if not given:
        return None
    base = emulator.saved_profile() or WanProfile()
    return WanProfile(**{**base.__dict__, **given})


def shape(inventory_file: str | None) -> tuple:
    """The login and the servers a lab inventory asks for ((None, None): root's, every node)."""
    if inventory_file is None:
        return None, None
    from pipeline.environments import provider

    lab = provider(inventory_file)
    if lab is None:
        raise LabError(f"{inventory_file} is not a lab inventory (it does not say `lab: true`)")
    return lab.login(), [h.name for h in lab.inventory.servers]


def print_status() -> int:
    health = status()
    width = max(len(name) for name in health)
    for name, healthy in health.items():
        print(f"{name:<{width}}  {'ok' if healthy else 'MISSING'}")
    profile = emulator.saved_profile()
    if profile:
        print(f"WAN profile: {profile}")
    if not kubernetes.present():
        print("Kubernetes cluster: not up (`python -m pipeline.lab up --kubernetes`)")
    missing = [name for name, healthy in health.items() if not healthy]
    if missing:
        print(f"\n{len(missing)} component(s) missing; run `python -m pipeline.lab up`")
        return 1
    return 0


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """``prog``: the command the usage and help name (`container-overhead lab` calls this too)."""
    args = parse_args(argv, prog)
    logging.basicConfig(level=logging.INFO, format="lab: %(message)s", stream=sys.stderr)
    started = time.monotonic()
    try:
        if args.command == "up":
            up(wan_profile(args), *shape(args.inventory), kubernetes=args.kubernetes or None)
        elif args.command == "down":
            down()
        elif args.command == "reset":
            reset()
        else:
            return print_status()
    except (LabError, ValueError, OSError) as exc:
        print(f"lab {args.command} failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"lab {args.command} interrupted; `python -m pipeline.lab down` cleans up",
              file=sys.stderr)  # fmt: skip
        return 130
    print(f"lab {args.command}: done in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
