"""The coldstart benchmark's Kubernetes step, without a cluster: what the timer is told to run
(`kubectl run` with the pod as its override, `kubectl delete` to stop), parsed by the timer's
own argument parser and put through its own name substitution, and the NodePort Service."""

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline.benchmarks.base import Window
from pipeline.benchmarks.coldstart import KUBERNETES, NAME_MARK, POD_LABEL, PORT, Coldstart
from pipeline.benchmarks.coldstart import _KubeStarts as KubeStarts
from pipeline.hosts import LABEL

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = ["/opt/k/kubectl", "--kubeconfig", "/etc/k/admin.conf", "--namespace", "bench"]


def _timer():
    spec = importlib.util.spec_from_file_location(
        "co_timer", ROOT / "pipeline/collect/host_scripts/coldstart.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Ctx:
    campaign = "c0eb6e4d977f0000"
    pool = {"node1": SimpleNamespace()}

    def kubectl(self):
        return SimpleNamespace(name="node1"), list(KUBECTL)


def _step(mode: str) -> KubeStarts:
    bench = Coldstart()
    bench.configure({"starts": 4, "warmup_starts": 1})
    scenario = SimpleNamespace(
        ctx=_Ctx(), mode=mode, host=SimpleNamespace(name="node1", address="10.77.0.11"),
        prefix=f"co-c0eb6e4d97-coldstart-{mode}", window=Window(1), warmup=Window(0),
    )  # fmt: skip
    return KubeStarts(bench, scenario)


@pytest.mark.parametrize("mode", list(KUBERNETES))
def test_the_timer_runs_kubectl_with_each_starts_own_pod(mode):
    step = _step(mode)
    args = _timer_args(step)
    timer = _timer()
    start = timer.substitute(args.start_argv, "co-x-0003")
    assert start[: len(KUBECTL)] == KUBECTL and start[len(KUBECTL) : len(KUBECTL) + 2] == [
        "run",
        "co-x-0003",
    ]
    override = json.loads(next(a for a in start if a.startswith("--overrides=")).split("=", 1)[1])
    assert override["metadata"]["name"] == "co-x-0003"  # the start's name inside the JSON too
    assert override["metadata"]["labels"] == {LABEL: _Ctx.campaign, POD_LABEL: step.s.prefix}
    spec = override["spec"]
    assert spec["nodeName"] == "node-one" and spec["restartPolicy"] == "Never"
    assert spec["hostNetwork"] is (mode == "k8s-hostnetwork")
    (container,) = spec["containers"]
    assert container["image"] == "co-tools:abc" and container["imagePullPolicy"] == "Never"
    assert container["command"] == Coldstart().server_argv()  # nginx as in every mode
    assert "--image=co-tools:abc" in start
    stop = timer.substitute(args.stop_argv, "co-x-0003")
    assert stop[len(KUBECTL) :][:2] == ["delete", "pod/co-x-0003"] and "--wait=true" in stop
    assert not args.native  # a stop command: the timer waits for `kubectl run` to return
    assert (args.address, args.port, args.starts, args.warmup) == ("10.77.0.11", PORT, 4, 1)


def _timer_args(step):
    args = _timer().parser().parse_args(step.timer_args("co-tools:abc", "node-one"))
    args.native = args.stop_argv is None  # as the timer's main decides
    return args


def test_nodeport_service_selects_the_steps_pods_on_the_benchmarks_port():
    step = _step("k8s-nodeport")
    service = step.service_manifest()
    assert service["spec"]["type"] == "NodePort"
    assert service["spec"]["selector"] == {POD_LABEL: step.s.prefix}
    (port,) = service["spec"]["ports"]
    assert port["port"] == port["targetPort"] == port["nodePort"] == PORT
    assert service["metadata"]["labels"][LABEL] == _Ctx.campaign
    assert _step("k8s-hostnetwork").service is None  # no Service: the node's own port


def test_names_fit_kubernetes_limits():
    step = _step("k8s-hostnetwork")
    name = f"{step.s.prefix}-0123"
    assert len(name) <= 63 and name == name.lower()
    assert len(step.service_manifest()["metadata"]["name"]) <= 63
    assert NAME_MARK == _timer().NAME
