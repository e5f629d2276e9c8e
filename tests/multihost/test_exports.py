"""`globaltables export kubernetes` and `export chaos-mesh`: manifests for every shipped topology validate against a
named Kubernetes release's schemas (kubernetes-validate, strict: unknown fields are errors); every shipped chaos
schedule exports to a Chaos Mesh Workflow of the documented shape; and the container's exact entrypoint command
from the Dockerfile, with a region's exported arguments, starts a region (inside a network namespace of its own,
since the cluster topology binds 0.0.0.0)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

import network_namespaces
from separate_hosts import ROOT, cli, env

pytestmark = pytest.mark.timeout(240)
KUBERNETES_RELEASE = "1.32.0"  # the named release whose schemas the manifests must satisfy
TOPOLOGIES = sorted((ROOT / "topologies").glob("*.yaml"))
SCHEDULES = sorted((ROOT / "chaos").glob("*.yaml"))


def exported(topology: Path, tmp_path: Path, *extra: str) -> list[dict]:
    out = tmp_path / f"{topology.stem}.k8s.yaml"
    answer = cli("export", "kubernetes", str(topology), "--out", str(out), *extra, cwd=tmp_path)
    assert answer.returncode == 0, answer.stderr
    return [document for document in yaml.safe_load_all(out.read_text()) if document]


@pytest.mark.parametrize("topology", TOPOLOGIES, ids=lambda path: path.stem)
def test_manifests_validate_against_the_kubernetes_schemas(topology: Path, tmp_path: Path):
    documents = exported(topology, tmp_path, "--image", "registry.example/globaltables:0.1.0")
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES_RELEASE, strict=True)
    kinds = [document["kind"] for document in documents]
    regions = yaml.safe_load(topology.read_text())["regions"]
    assert kinds[0] == "Namespace" and kinds.count("StatefulSet") == len(regions) == kinds.count("Service")
    assert {"Secret", "ConfigMap", "Job"} <= set(kinds)
    for document in documents:
        if document["kind"] == "StatefulSet":
            spec = document["spec"]
            container = spec["template"]["spec"]["containers"][0]
            assert spec["replicas"] == 1 and spec["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
            assert container["readinessProbe"]["httpGet"]["path"] == "/"
            assert container["resources"]["requests"]
            labels = spec["template"]["metadata"]["labels"]
            assert labels["globaltables.io/region"] in {region["name"] for region in regions}
            # The secret reaches the pod through the environment, never its arguments.
            assert container["env"][0]["valueFrom"]["secretKeyRef"]["name"] == "globaltables-secret"
        if document["kind"] == "Service":
            assert document["spec"]["clusterIP"] == "None"
        if document["kind"] == "Job":
            assert document["spec"]["template"]["spec"]["containers"][0]["args"][:3] == [
                "run",
                "/etc/globaltables/topology.yaml",
                "--attach",
            ]
    config = next(document for document in documents if document["kind"] == "ConfigMap")
    placed = yaml.safe_load(config["data"]["topology.yaml"])
    assert "secret_file" not in placed
    assert all(region["bind"] == "0.0.0.0" and region["port"] == 8000 for region in placed["regions"])


def test_a_manifest_with_a_mistake_is_refused_by_the_validator(tmp_path: Path):
    # The validator is not a rubber stamp: an unknown field in a container fails the named release's schema.
    document = next(d for d in exported(TOPOLOGIES[0], tmp_path) if d["kind"] == "StatefulSet")
    document["spec"]["template"]["spec"]["containers"][0]["argz"] = ["region"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(document, KUBERNETES_RELEASE, strict=True)


# Chaos Mesh's documented fields for what the export writes (chaos-mesh.org/v1alpha1: Workflow templates; the
# NetworkChaos, TimeChaos and PodChaos specs). No cluster is reachable here, so the shape is checked against these.
SELECTOR = {
    "type": "object",
    "required": ["namespaces", "labelSelectors"],
    "additionalProperties": False,
    "properties": {
        "namespaces": {"type": "array"},
        "labelSelectors": {"type": "object"},
        "expressionSelectors": {"type": "array"},
    },
}
NETWORK = {
    "type": "object",
    "required": ["action", "mode", "selector"],
    "additionalProperties": False,
    "properties": {
        "action": {"enum": ["netem", "delay", "loss", "duplicate", "corrupt", "partition", "bandwidth"]},
        "mode": {"enum": ["one", "all", "fixed", "fixed-percent", "random-max-percent"]},
        "selector": SELECTOR,
        "direction": {"enum": ["to", "from", "both"]},
        "target": {"type": "object", "required": ["mode", "selector"]},
        "delay": {"type": "object", "required": ["latency"]},
        "loss": {"type": "object", "required": ["loss"]},
        "duplicate": {"type": "object", "required": ["duplicate"]},
        "bandwidth": {"type": "object", "required": ["rate", "limit", "buffer"]},
    },
}
TIME = {
    "type": "object",
    "required": ["mode", "selector", "timeOffset"],
    "additionalProperties": False,
    "properties": {
        "mode": {"const": "all"},
        "selector": SELECTOR,
        "timeOffset": {"type": "string", "pattern": r"^-?[0-9.]+ms$"},
        "clockIds": {"type": "array"},
        "containerNames": {"type": "array"},
    },
}
POD = {
    "type": "object",
    "required": ["action", "mode", "selector"],
    "additionalProperties": False,
    "properties": {
        "action": {"enum": ["pod-kill", "pod-failure", "container-kill"]},
        "mode": {"const": "all"},
        "selector": SELECTOR,
        "gracePeriod": {"type": "integer"},
    },
}
TEMPLATE = {
    "type": "object",
    "required": ["name", "templateType"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z0-9-]{1,63}$"},
        "templateType": {"enum": ["Serial", "Parallel", "Suspend", "NetworkChaos", "TimeChaos", "PodChaos"]},
        "deadline": {"type": "string", "pattern": r"^[0-9.]+s$"},
        "children": {"type": "array"},
        "networkChaos": NETWORK,
        "timeChaos": TIME,
        "podChaos": POD,
    },
}
WORKFLOW = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "chaos-mesh.org/v1alpha1"},
        "kind": {"const": "Workflow"},
        "spec": {
            "type": "object",
            "required": ["entry", "templates"],
            "additionalProperties": False,
            "properties": {"entry": {"type": "string"}, "templates": {"type": "array", "items": TEMPLATE}},
        },
    },
}


# Shipped schedules whose every step acts on the data plane (update-table), which has no Chaos Mesh equivalent.
DATA_PLANE_ONLY = {"raise-capacity"}


def topology_for(schedule: Path) -> Path:
    """A shipped topology whose regions the schedule names (a schedule written for the MREC test regions)."""
    for topology in [ROOT / "topologies" / "mrec-test.yaml", *TOPOLOGIES]:
        check = cli("validate", str(schedule), "--topology", str(topology), cwd=ROOT)
        if check.returncode == 0:
            return topology
    raise AssertionError(f"no shipped topology fits {schedule}")


@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda path: path.stem)
def test_every_shipped_schedule_exports_to_a_chaos_mesh_workflow(schedule: Path, tmp_path: Path):
    import jsonschema

    topology = topology_for(schedule)
    out = tmp_path / "workflow.yaml"
    answer = cli("export", "chaos-mesh", str(schedule), "--topology", str(topology), "--out", str(out), cwd=tmp_path)
    if schedule.stem in DATA_PLANE_ONLY:
        # Its only step changes a table through DynamoDB's API, which Chaos Mesh cannot do: refused, not emptied.
        assert answer.returncode == 2 and "no step has a Chaos Mesh equivalent" in answer.stderr, answer.stderr
        assert not out.exists()
        return
    assert answer.returncode == 0, answer.stderr
    workflow = yaml.safe_load(out.read_text())
    jsonschema.validate(workflow, WORKFLOW)
    templates = {template["name"]: template for template in workflow["spec"]["templates"]}
    entry = templates[workflow["spec"]["entry"]]
    assert entry["children"] and all(child in templates for child in entry["children"])
    for template in templates.values():
        assert all(child in templates for child in template.get("children", []))
        for kind in ("networkChaos", "timeChaos", "podChaos"):
            if kind in template:
                assert template[kind]["selector"]["labelSelectors"]["globaltables.io/topology"]


def test_partitions_export_as_the_grudge_they_cut(tmp_path: Path):
    schedule = tmp_path / "s.yaml"
    schedule.write_text(
        yaml.safe_dump(
            {
                "name": "s",
                "steps": [
                    {
                        "at": "1s",
                        "do": "partition",
                        "between": ["us-east-1", "eu-west-1"],
                        "for": "2s",
                        "one_way": True,
                    },
                    {"at": "4s", "do": "isolate", "region": "ap-southeast-1", "for": "1s"},
                ],
            }
        )
    )
    out = tmp_path / "w.yaml"
    topology = ROOT / "topologies" / "mrec-test.yaml"
    assert (
        cli(
            "export", "chaos-mesh", str(schedule), "--topology", str(topology), "--out", str(out), cwd=tmp_path
        ).returncode
        == 0
    )
    chaos = [t["networkChaos"] for t in yaml.safe_load(out.read_text())["spec"]["templates"] if "networkChaos" in t]
    region = lambda selector: selector["labelSelectors"]["globaltables.io/region"]  # noqa: E731
    cuts = sorted((region(c["selector"]), region(c["target"]["selector"]), c["direction"]) for c in chaos)
    assert cuts == [
        ("ap-southeast-1", "eu-west-1", "both"),
        ("ap-southeast-1", "us-east-1", "both"),
        ("us-east-1", "eu-west-1", "to"),
    ]


NAMESPACES_REFUSED = network_namespaces.available()  # None where namespaces can be made (probed once)


def dockerfile_entrypoint() -> list[str]:
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("ENTRYPOINT "):
            return json.loads(line.removeprefix("ENTRYPOINT "))
    raise AssertionError("the Dockerfile has no ENTRYPOINT")


@pytest.mark.skipif(
    NAMESPACES_REFUSED is not None,
    reason=f"the exported region binds 0.0.0.0, so it runs in a network namespace of its own: {NAMESPACES_REFUSED}",
)
def test_the_containers_entrypoint_command_starts_a_region(tmp_path: Path):
    documents = exported(ROOT / "topologies" / "quickstart.yaml", tmp_path)
    config = next(d for d in documents if d["kind"] == "ConfigMap")["data"]["topology.yaml"]
    secret = next(d for d in documents if d["kind"] == "Secret")["stringData"]["secret"]
    statefulset = next(d for d in documents if d["kind"] == "StatefulSet")
    container = statefulset["spec"]["template"]["spec"]["containers"][0]
    # The pod's filesystem: the ConfigMap mounted at /etc/globaltables, the claim at /data (paths mapped here).
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "topology.yaml").write_text(config)
    mapping = {
        "/etc/globaltables/topology.yaml": str(tmp_path / "etc" / "topology.yaml"),
        "/data": str(tmp_path / "data"),
    }
    command = dockerfile_entrypoint() + [mapping.get(arg, arg) for arg in container["args"]]
    assert command[0] == "globaltables"
    executable = Path(sys.executable).with_name("globaltables")
    command[0] = str(executable) if executable.exists() else command[0]
    namespaces = network_namespaces.Namespaces(1).create()
    process = None
    try:
        variables = env() | {"GLOBALTABLES_SECRET": secret}
        log = open(tmp_path / "region.log", "wb")  # noqa: SIM115 - closed below
        process = subprocess.Popen(
            ["ip", "netns", "exec", namespaces.names[0], *command],
            env=variables,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        probe = [
            sys.executable,
            "-c",
            "import urllib.request as u; print(u.urlopen('http://127.0.0.1:8000/', timeout=2).status)",
        ]
        deadline = time.monotonic() + 60
        while True:
            answer = subprocess.run(
                ["ip", "netns", "exec", namespaces.names[0], *probe], capture_output=True, text=True
            )
            if answer.stdout.strip() == "200":
                break
            assert process.poll() is None, (tmp_path / "region.log").read_text()
            assert time.monotonic() < deadline, f"no answer on GET / (the readiness probe): {shlex.join(command)}"
            time.sleep(0.2)
        assert secret not in " ".join(command)
    finally:
        if process is not None and process.poll() is None:
            process.terminate()
            process.wait(30)
        namespaces.remove()
    assert secret not in (tmp_path / "region.log").read_text()
