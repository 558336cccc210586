"""The overlay modes' client command, run for real (bash) against a stand-in `docker` on PATH
that fails to attach (exit 125, as Docker does when the container never ran) a given number of
times: Docker's own failure is retried, bounded; the tool's is never."""

import os
import subprocess
from pathlib import Path

import pytest

from pipeline.collect.modes.base import ATTACH_ATTEMPTS, Context, overlay_client

STAND_IN = """#!/bin/bash
n=$(cat "$STATE"); echo $((n + 1)) > "$STATE"
echo "$*" >> "$CALLS"
if [ "$n" -lt "$FAILS" ]; then
  echo "docker: Error response from daemon: attaching to network failed" >&2; exit 125
fi
echo "tool output"; exit "$TOOL_EXIT"
"""


def _run(tmp_path: Path, fails: int, tool_exit: int = 0, then: str = ""):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(STAND_IN)
    (bin_dir / "docker").chmod(0o755)
    state, calls = tmp_path / "state", tmp_path / "calls"
    state.write_text("0")
    calls.write_text("")
    wrap = overlay_client(Context(inventory=None, pool={}, campaign="c0ffee"), "co-overlay", "img")
    command = wrap(["iperf3", "--client", "10.201.1.2", "--title", "it's quoted"])
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "STATE": str(state),
           "CALLS": str(calls), "FAILS": str(fails), "TOOL_EXIT": str(tool_exit)}  # fmt: skip
    done = subprocess.run(["bash", "-c", command + then], env=env, capture_output=True, text=True,
                          timeout=30)  # fmt: skip
    return done, calls.read_text().splitlines()


def test_a_failed_attach_is_retried_and_the_tools_output_comes_through(tmp_path):
    done, calls = _run(tmp_path, fails=ATTACH_ATTEMPTS - 1)
    assert done.returncode == 0 and done.stdout == "tool output\n"
    assert len(calls) == ATTACH_ATTEMPTS
    assert calls[0] == ("run --rm --network co-overlay --label org.container-overhead.campaign="
                        "c0ffee img iperf3 --client 10.201.1.2 --title it's quoted")  # fmt: skip


def test_attach_retries_are_bounded_and_the_error_is_kept(tmp_path):
    done, calls = _run(tmp_path, fails=ATTACH_ATTEMPTS + 5)
    assert done.returncode == 125 and len(calls) == ATTACH_ATTEMPTS
    assert "attaching to network failed" in done.stderr


@pytest.mark.parametrize("tool_exit", [0, 1])
def test_a_tool_that_ran_is_never_run_again(tmp_path, tool_exit):
    done, calls = _run(tmp_path, fails=0, tool_exit=tool_exit)
    assert done.returncode == tool_exit and len(calls) == 1


def test_the_command_composes_like_a_simple_one(tmp_path):
    done, calls = _run(tmp_path, fails=1, tool_exit=1, then=" 2>&1; echo after $?")
    assert done.stdout.splitlines()[-1] == "after 1" and len(calls) == 2
    assert "attaching to network failed" in done.stdout  # the redirection applied to it all
