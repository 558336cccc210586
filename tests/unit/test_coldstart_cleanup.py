"""After a killed coldstart timer, the leftover removal runs for real (bash) against a stand-in
`docker` on PATH that behaves like a daemon finishing the killed CLI's requests late: the
container shows up only on the second look, and its first removal fails as already in
progress."""

import os
import subprocess
from types import SimpleNamespace

from pipeline.benchmarks.coldstart import Coldstart
from pipeline.collect.modes import Context

FAKE_DOCKER = """#!/bin/bash
state="$FAKE_STATE"
case "$1" in
  ps)
    n=$(( $(cat "$state/ps" 2>/dev/null || echo 0) + 1 )); echo $n > "$state/ps"
    [ $n -ge 2 ] && [ ! -e "$state/removed" ] && echo 1d401051d70f
    exit 0 ;;
  rm)
    if [ ! -e "$state/rm-tried" ]; then
      touch "$state/rm-tried"
      echo "Error response from daemon: removal of container $3 is already in progress" >&2
      exit 1
    fi
    touch "$state/removed"; exit 0 ;;
esac
exit 2
"""


class _LocalSession:
    def __init__(self, env):
        self.env = env

    def run(self, command, timeout=60, check=True):
        done = subprocess.run(["bash", "-c", command], env=self.env, capture_output=True,
                              text=True, timeout=timeout)  # fmt: skip
        if check and done.returncode:
            raise RuntimeError(f"exit {done.returncode}: {done.stderr}")
        return done


def _scenario(tmp_path):
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_STATE": str(state)}
    host = SimpleNamespace(name="node1")
    ctx = Context(inventory=None, pool={"node1": _LocalSession(env)}, campaign="c0eb6e4d977f")
    return SimpleNamespace(ctx=ctx, host=host, engine="docker", prefix="co-x-killed"), state


def test_a_killed_timers_late_container_is_removed_despite_a_removal_in_progress(tmp_path):
    scenario, state = _scenario(tmp_path)
    Coldstart()._remove_leftovers(scenario, settle_s=2.0)
    assert (state / "removed").exists()


def test_without_settling_one_look_finds_nothing_yet(tmp_path):
    # the behaviour after a timer that returned: one look (the late container is not its case)
    scenario, state = _scenario(tmp_path)
    Coldstart()._remove_leftovers(scenario)
    assert not (state / "removed").exists() and (state / "ps").read_text().strip() == "1"
