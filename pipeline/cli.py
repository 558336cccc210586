"""`container-overhead`: one command for the pipeline's entry points.

Each subcommand runs the module it names, with the same arguments and exit status as its
`python -m` form, which keeps working:

    container-overhead params [FILE]            python -m pipeline.params [FILE]
    container-overhead stages [--check]         python -m pipeline.stages [--check]
    container-overhead stages run STAGE [ENV]   python -m pipeline.stages run STAGE [ENV]
    container-overhead demo [--list]            python -m pipeline.demo [--list]
    container-overhead lab up|down|status|reset python -m pipeline.lab up|down|status|reset
    container-overhead check                    params, then stages --check (what `make demo`
                                                checks before it brings the lab up)
    container-overhead check --connect          that, then connect to every host of every
                                                environment's inventory in params.yaml and check
                                                what the campaigns need there (preflight)
    container-overhead reference [--profile P]  python -m pipeline.reference: a finished run's
                                                article, tables and metrics into
                                                data/reference/<profile>/, to commit
    container-overhead check --connect FILE...  python -m pipeline.inventory check --connect
                                                FILE...: those inventories only (a lab
                                                inventory: also what the lab has; it must be up)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

PROG = "container-overhead"


def _params(args: argparse.Namespace) -> int:
    from pipeline import params

    return params.main([args.file] if args.file else [])


def _stages(args: argparse.Namespace) -> int:
    from pipeline import stages

    if args.action == "run":
        return stages.main(["run", args.stage, *([args.environment] if args.environment else [])])
    return stages.main(["--check"] if args.check else [])


def _demo(args: argparse.Namespace) -> int:
    from pipeline import demo

    return demo.main(["--list"] if args.list else [])


def _lab(args: argparse.Namespace) -> int:
    from pipeline.lab.__main__ import main

    return main(args.rest, prog=f"{PROG} lab")


def _reference(args: argparse.Namespace) -> int:
    from pipeline import reference

    return reference.main(args.rest)


def _check(args: argparse.Namespace) -> int:
    """params.yaml first: the stages are derived from it, so its problems come first and alone;
    with --connect, then every host (a lab inventory's also against what the lab has). Named
    inventories are checked alone: the question is then about those hosts only."""
    from pipeline import params, stages

    if args.connect and args.files:
        return _connect(args.files)
    status = params.main([]) or stages.main(["--check"])
    if status or not args.connect:
        return status
    return _connect(list(params.load().environments.values()))


def _connect(files: list[str]) -> int:
    from pipeline.benchmarks import BENCHMARKS
    from pipeline.collect import inventory, preflight
    from pipeline.environments import provider

    status = 0
    for name in files:
        try:
            lab = provider(name)
        except inventory.InventoryError as exc:
            print(exc, file=sys.stderr)
            status = 2
            continue
        unsupported = lab.unsupported() if lab is not None else []
        for line in unsupported:
            print(f"PROBLEM {line}", file=sys.stderr)
        status = (1 if unsupported else 0) or preflight.main([name], BENCHMARKS) or status
    return status


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog=PROG, description="A reproducible study of container overhead: the pipeline's "
        "commands. `make help` lists the Makefile's.",
    )  # fmt: skip
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, run: Callable[[argparse.Namespace], int], help: str,
                **kwargs) -> argparse.ArgumentParser:  # fmt: skip
        sub = commands.add_parser(name, help=help, description=help, **kwargs)
        sub.set_defaults(run=run)
        return sub

    sub = command("params", _params, "check params.yaml and its profile: every problem, with its "
                  "fix (exit 2 if any)")  # fmt: skip
    sub.add_argument("file", nargs="?", metavar="FILE",
                     help="the params file (default params.yaml)")  # fmt: skip

    sub = command("stages", _stages, "write dvc.yaml from the benchmarks and params.yaml; or "
                  "check it; or run one stage (what a dvc.yaml stage command runs)")  # fmt: skip
    sub.add_argument("--check", action="store_true", help="write nothing; exit 1 if dvc.yaml "
                     "is not what params.yaml gives")  # fmt: skip
    sub.set_defaults(action=None)
    run = sub.add_subparsers(dest="action", metavar="run").add_parser(
        "run", help="execute one stage's notebook", description="execute one stage's notebook")
    run.add_argument("stage", metavar="STAGE", help="a stage name of dvc.yaml")
    run.add_argument("environment", nargs="?", metavar="ENVIRONMENT",
                     help="the environment, for a stage that runs per environment")  # fmt: skip

    sub = command("demo", _demo, "run every stage of dvc.yaml, each benchmark's summary right "
                  "after its collection, then `dvc repro` (`make demo` runs this)")  # fmt: skip
    sub.add_argument("--list", action="store_true", help="print the order only")

    # The lab's own parser reads the rest (its --help included), so its options live in one place.
    sub = command("lab", _lab, "the embedded lab: up, down, status, reset (`lab --help`: options)",
                  add_help=False)  # fmt: skip
    sub.add_argument("rest", nargs=argparse.REMAINDER, metavar="up|down|status|reset ...")

    sub = command("reference", _reference, "copy a finished run's article, figures, tables and "
                  "metrics into data/reference/<profile>/, to commit (`reference --help`)",
                  add_help=False)  # fmt: skip
    sub.add_argument("rest", nargs=argparse.REMAINDER, metavar="[--profile P] [--out DIR]")

    sub = command("check", _check, "check params.yaml, then that dvc.yaml is current; with "
                  "--connect, also every host (exit 1 on a problem)")  # fmt: skip
    sub.add_argument("--connect", action="store_true", help="connect to every host: host key, "
                     "login, sudo rule, tools, engines, kernel features, clock")  # fmt: skip
    sub.add_argument("files", nargs="*", metavar="FILE", help="with --connect: only these "
                     "inventories (default: params.yaml, dvc.yaml, then every environment's "
                     "inventory)")  # fmt: skip
    return top


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["lab"]:
        # argparse would take the lab's own options (--help, --inventory) as unknown ones
        return _lab(argparse.Namespace(rest=args[1:]))
    if args[:1] == ["reference"]:
        return _reference(argparse.Namespace(rest=args[1:]))
    namespace = parser().parse_args(args)
    return namespace.run(namespace)


if __name__ == "__main__":
    sys.exit(main())
