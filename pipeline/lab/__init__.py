"""The embedded lab: lab hosts as network namespaces on this machine.

Each host has its own address, hostname and sshd; the three nodes each run a dockerd and
form a Swarm with an attachable overlay network; inet-client sits behind an emulated
wide-area path. `python -m pipeline.lab up | down | status` drives it from a shell.
"""

from pipeline.lab.commands import LabError
from pipeline.lab.emulator import WanProfile
from pipeline.lab.lifecycle import down, status, up
from pipeline.lab.topology import RUN_DIR, STATE_DIR

__all__ = ["RUN_DIR", "STATE_DIR", "LabError", "WanProfile", "down", "status", "up"]
