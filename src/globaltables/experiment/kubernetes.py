"""`globaltables export kubernetes TOPOLOGY [--image IMAGE] [--namespace NS]`: the topology as Kubernetes manifests.

What is written (one YAML stream, applied with `kubectl apply -f`):
- a Namespace (default: the topology's name, made a DNS label);
- a Secret `globaltables-secret` holding a freshly generated shared secret (key `secret`), which every pod reads
  as `$GLOBALTABLES_SECRET`: never on a command line, never in the ConfigMap;
- a ConfigMap `globaltables-topology` with the topology placed for the cluster: each region advertised at its
  headless Service's DNS name on port 8000 and bound to 0.0.0.0 (inside its pod), no secret_file;
- per region a headless Service (a stable DNS name, `<service>.<namespace>.svc.cluster.local`) and a
  single-replica StatefulSet (the region process, `globaltables region --topology ... --name R --data-dir /data`,
  its data dir on a PersistentVolumeClaim so a restarted pod keeps every acknowledged write, a readiness probe on
  `GET /`, resource requests), labelled `globaltables.io/topology` and `globaltables.io/region`: Chaos Mesh
  selects pods by these (experiment/chaos_mesh.py);
- a Job running `globaltables run --attach` against the regions (the topology's workload and checkers; results in
  the pod's /results).
The image is the repository's Dockerfile (ENTRYPOINT `globaltables`), so every command here is `args:` to it.
"""

from __future__ import annotations

import copy
import re
import secrets
from pathlib import Path
from typing import Any

import yaml

import globaltables

from ..topology.model import Topology
from ..topology.secret import SECRET_ENV

PORT = 8000
TOPOLOGY_DIR = "/etc/globaltables"
TOPOLOGY_PATH = f"{TOPOLOGY_DIR}/topology.yaml"
DATA_DIR = "/data"
RESULTS_DIR = "/results"
SECRET_NAME = "globaltables-secret"
CONFIG_NAME = "globaltables-topology"
TOPOLOGY_LABEL = "globaltables.io/topology"
REGION_LABEL = "globaltables.io/region"
DEFAULT_STORAGE = "1Gi"
REQUESTS = {"cpu": "250m", "memory": "256Mi"}


def dns_label(text: str) -> str:
    """`text` as an RFC 1123 label (lower case, digits and '-', at most 63 characters), as names must be."""
    label = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:63].strip("-")
    return label or "globaltables"


def default_image() -> str:
    return f"globaltables:{globaltables.__version__}"


def service_name(region: str) -> str:
    return dns_label(f"region-{region}")


def labels(topology: Topology, region: str | None = None) -> dict[str, str]:
    found = {TOPOLOGY_LABEL: dns_label(topology.name), "app.kubernetes.io/name": "globaltables"}
    if region is not None:
        found[REGION_LABEL] = region
    return found


def cluster_topology(topology: Topology, source: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The topology file as the pods read it: placed at the Services, bound inside the pods, secret from the env."""
    document = copy.deepcopy(source)
    document.pop("secret_file", None)
    for entry in document.get("regions", []):
        for key in ("host", "advertise", "bind", "port", "endpoint"):
            entry.pop(key, None)
        entry["advertise"] = f"{service_name(entry['name'])}.{namespace}.svc.cluster.local"
        entry["bind"] = "0.0.0.0"  # inside the pod's own network namespace; the Service is the way in
        entry["port"] = PORT
    return document


def secret_env() -> dict[str, Any]:
    return {"name": SECRET_ENV, "valueFrom": {"secretKeyRef": {"name": SECRET_NAME, "key": "secret"}}}


def region_command(region: str) -> list[str]:
    """The region container's arguments to the image's `globaltables` entrypoint."""
    return ["region", "--topology", TOPOLOGY_PATH, "--name", region, "--data-dir", DATA_DIR]


def run_command() -> list[str]:
    return ["run", TOPOLOGY_PATH, "--attach", "--out", RESULTS_DIR]


def manifests(
    topology: Topology,
    source: dict[str, Any],
    *,
    image: str | None = None,
    namespace: str | None = None,
    secret: str | None = None,
) -> list[dict[str, Any]]:
    """Every resource, in the order `kubectl apply` needs them (the Namespace first)."""
    namespace = dns_label(namespace or topology.name)
    image = image or default_image()
    placed = cluster_topology(topology, source, namespace)
    meta = lambda name, region=None: {"name": name, "namespace": namespace, "labels": labels(topology, region)}  # noqa: E731
    resources: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels(topology)}},
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": meta(SECRET_NAME),
            "type": "Opaque",
            "stringData": {"secret": secret or secrets.token_hex(32)},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(CONFIG_NAME),
            "data": {"topology.yaml": yaml.safe_dump(placed, sort_keys=False)},
        },
    ]
    config_volume = {"name": "topology", "configMap": {"name": CONFIG_NAME}}
    config_mount = {"name": "topology", "mountPath": TOPOLOGY_DIR, "readOnly": True}
    for region in topology.regions:
        name = service_name(region.name)
        selector = labels(topology, region.name)
        resources.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": meta(name, region.name),
                "spec": {
                    "clusterIP": "None",  # headless: the name resolves to the one pod, a stable DNS name
                    "publishNotReadyAddresses": True,  # peers connect while the region still creates its tables
                    "selector": selector,
                    "ports": [{"name": "dynamodb", "port": PORT, "targetPort": PORT}],
                },
            }
        )
        resources.append(
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": meta(name, region.name),
                "spec": {
                    "serviceName": name,
                    "replicas": 1,
                    "selector": {"matchLabels": selector},
                    "template": {
                        "metadata": {"labels": selector},
                        "spec": {
                            "terminationGracePeriodSeconds": 30,
                            "containers": [
                                {
                                    "name": "region",
                                    "image": image,
                                    "args": region_command(region.name),
                                    "env": [secret_env()],
                                    "ports": [{"name": "dynamodb", "containerPort": PORT}],
                                    "readinessProbe": {
                                        "httpGet": {"path": "/", "port": "dynamodb"},
                                        "periodSeconds": 2,
                                        "failureThreshold": 3,
                                    },
                                    "resources": {"requests": dict(REQUESTS)},
                                    "volumeMounts": [{"name": "data", "mountPath": DATA_DIR}, config_mount],
                                }
                            ],
                            "volumes": [config_volume],
                        },
                    },
                    "volumeClaimTemplates": [
                        {
                            "metadata": {"name": "data", "labels": selector},
                            "spec": {
                                "accessModes": ["ReadWriteOnce"],
                                "resources": {"requests": {"storage": DEFAULT_STORAGE}},
                            },
                        }
                    ],
                },
            }
        )
    resources.append(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta("globaltables-run"),
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "metadata": {"labels": labels(topology)},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "run",
                                "image": image,
                                "args": run_command(),
                                "env": [secret_env()],
                                "resources": {"requests": dict(REQUESTS)},
                                "volumeMounts": [config_mount, {"name": "results", "mountPath": RESULTS_DIR}],
                            }
                        ],
                        "volumes": [config_volume, {"name": "results", "emptyDir": {}}],
                    },
                },
            },
        }
    )
    return resources


def render(resources: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(resources, sort_keys=False)


def read_source(path: Path) -> dict[str, Any]:
    """The topology file's own mapping (already validated by load_topology), to be rewritten for the cluster."""
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
