"""The kustomize subset of chunkraft.deploy.kustomize, and deploy/kubernetes rendered with it and
validated offline against Kubernetes' own schemas (the kubernetes-validate package)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from chunkraft.deploy.kustomize import KustomizeError, main, merge_patch, render

REPO = Path(__file__).resolve().parents[3]
KUBERNETES = REPO / "deploy" / "kubernetes"
OVERLAYS = ("dev", "production")
KUBERNETES_VERSION = "1.32.0"
"""The pod-index label the StatefulSets read is GA from 1.32 (beta, on by default, from 1.28)."""


def write(path: Path, documents: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(documents), encoding="utf-8")


def deployment(name: str = "web", image: str = "app:1") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "template": {"spec": {
                "containers": [{"name": "app", "image": image,
                                "env": [{"name": "A", "value": "1"}]}],
                "initContainers": [{"name": "init", "image": "app"}]}}}}


# --- merge_patch -------------------------------------------------------------------------------

def test_maps_merge_key_by_key_and_null_deletes() -> None:
    target = {"a": 1, "b": {"c": 2, "d": 3}}
    assert merge_patch(target, {"b": {"c": 5, "d": None}, "e": 6}) == {"a": 1, "b": {"c": 5},
                                                                        "e": 6}
    assert target == {"a": 1, "b": {"c": 2, "d": 3}}  # unchanged


def test_lists_of_named_items_merge_by_name_others_are_replaced() -> None:
    target = {"containers": [{"name": "a", "image": "x", "env": [{"name": "K", "value": "1"}]}],
              "args": ["one", "two"]}
    patched = merge_patch(target, {
        "containers": [{"name": "a", "env": [{"name": "L", "value": "2"}]},
                       {"name": "b", "image": "y"}],
        "args": ["three"]})
    assert patched == {"containers": [{"name": "a", "image": "x",
                                       "env": [{"name": "K", "value": "1"},
                                               {"name": "L", "value": "2"}]},
                                      {"name": "b", "image": "y"}],
                       "args": ["three"]}


def test_a_list_without_names_is_replaced_whole() -> None:
    target = {"claims": [{"metadata": {"name": "data"}, "size": 1}]}
    assert merge_patch(target, {"claims": [{"metadata": {"name": "data"}}]}) == {
        "claims": [{"metadata": {"name": "data"}}]}


# --- render ------------------------------------------------------------------------------------

def test_an_overlay_renders_its_base_with_patches_namespace_and_images(tmp_path: Path) -> None:
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "rb"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
               "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}
    write(tmp_path / "base" / "app.yaml", [deployment(), binding, namespace])
    write(tmp_path / "base" / "kustomization.yaml",
          [{"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": ["app.yaml"]}])
    write(tmp_path / "overlay" / "patch.yaml",
          [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 3}}])
    write(tmp_path / "overlay" / "kustomization.yaml",
          [{"namespace": "prod", "resources": ["../base"], "patches": [{"path": "patch.yaml"}],
            "images": [{"name": "app", "newName": "registry/app", "newTag": "2"}]}])
    web, rb, ns = render(tmp_path / "overlay")
    assert web["metadata"]["namespace"] == "prod"
    assert web["spec"]["replicas"] == 3
    pod = web["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "registry/app:2"
    assert pod["initContainers"][0]["image"] == "registry/app:2"
    assert rb["subjects"] == [{"kind": "ServiceAccount", "name": "sa", "namespace": "prod"}]
    assert "namespace" not in ns["metadata"]  # cluster-scoped


def test_a_delete_patch_removes_its_object(tmp_path: Path) -> None:
    write(tmp_path / "app.yaml", [deployment("a"), deployment("b")])
    write(tmp_path / "delete.yaml",
          [{"$patch": "delete", "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "a"}}])
    write(tmp_path / "kustomization.yaml",
          [{"resources": ["app.yaml"], "patches": [{"path": "delete.yaml"}]}])
    assert [r["metadata"]["name"] for r in render(tmp_path)] == ["b"]


@pytest.mark.parametrize(("kustomization", "message"), [
    ({"resources": ["app.yaml"], "commonLabels": {"a": "b"}}, "unsupported fields"),
    ({"resources": ["missing.yaml"]}, "does not exist"),
    ({"resources": ["app.yaml"], "patches": [{"path": "p.yaml", "target": {"kind": "X"}}]},
     r"only `- path: FILE`"),
    ({"resources": ["app.yaml"], "patches": [{"path": "nothing.yaml"}]}, "matches 0 objects"),
    ({"resources": ["app.yaml"], "images": [{"name": "app", "digest": "sha256:1"}]},
     "unsupported"),
])
def test_what_the_subset_does_not_cover_is_refused(tmp_path: Path, kustomization: dict[str, Any],
                                                    message: str) -> None:
    write(tmp_path / "app.yaml", [deployment()])
    write(tmp_path / "nothing.yaml", [deployment("other")])
    write(tmp_path / "kustomization.yaml", [kustomization])
    with pytest.raises(KustomizeError, match=message):
        render(tmp_path)


def test_a_directory_without_a_kustomization_is_refused(tmp_path: Path) -> None:
    with pytest.raises(KustomizeError, match=r"no kustomization\.yaml"):
        render(tmp_path)


def test_main_prints_the_objects_as_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(KUBERNETES / "overlays" / "dev")]) == 0
    objects = list(yaml.safe_load_all(capsys.readouterr().out))
    assert {o["kind"] for o in objects} >= {"StatefulSet", "CronJob", "NetworkPolicy"}


def test_main_reports_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 1
    assert "no kustomization.yaml" in capsys.readouterr().err


# --- deploy/kubernetes -------------------------------------------------------------------------

def by_name(objects: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_of_an_overlay_validates_against_the_kubernetes_schemas(
        overlay: str) -> None:
    objects = render(KUBERNETES / "overlays" / overlay)
    assert objects
    for item in objects:
        # strict: a field the schema does not know (a typo) is an error too.
        kubernetes_validate.validate(item, KUBERNETES_VERSION, strict=True)


def test_the_validator_catches_a_wrong_field() -> None:
    item = by_name(render(KUBERNETES / "overlays" / "dev"))[("StatefulSet",
                                                             "chunkraft-controller")]
    item["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(item, KUBERNETES_VERSION, strict=True)


def container(objects: dict[tuple[str, str], dict[str, Any]], kind: str, name: str
              ) -> dict[str, Any]:
    spec = objects[(kind, name)]["spec"]
    if kind == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    first: dict[str, Any] = spec["template"]["spec"]["containers"][0]
    return first


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_overlays_keep_the_quorum_services_namespaces_and_volumes(overlay: str) -> None:
    objects = by_name(render(KUBERNETES / "overlays" / overlay))
    namespace = {"dev": "chunkraft-dev", "production": "chunkraft"}[overlay]
    assert {o["metadata"].get("namespace") for o in objects.values()} == {namespace}
    headless = objects[("Service", "chunkraft-controller-headless")]["spec"]
    assert headless["clusterIP"] == "None" and headless["publishNotReadyAddresses"] is True
    controllers = objects[("StatefulSet", "chunkraft-controller")]["spec"]
    assert controllers["serviceName"] == "chunkraft-controller-headless"
    assert controllers["podManagementPolicy"] == "Parallel"  # a quorum needs them all to start
    assert controllers["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    controller = container(objects, "StatefulSet", "chunkraft-controller")
    assert controller["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert controller["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert "podAntiAffinity" in controllers["template"]["spec"]["affinity"]
    assert objects[("PodDisruptionBudget", "chunkraft-controller")]["spec"]["minAvailable"] == 2
    brokers = objects[("StatefulSet", "chunkraft-broker")]["spec"]["template"]["spec"]
    broker = container(objects, "StatefulSet", "chunkraft-broker")
    assert "kill -TERM 1" in " ".join(broker["lifecycle"]["preStop"]["exec"]["command"])
    # controlled.shutdown.timeout.ms (30 s) + uvicorn's 5 s + flushing, within the grace period.
    assert brokers["terminationGracePeriodSeconds"] >= 45
    policy = objects[("NetworkPolicy", "chunkraft-controller-raft")]["spec"]
    raft_rules = [rule for rule in policy["ingress"]
                  if any(port["port"] == 9093 for port in rule["ports"])]
    assert len(raft_rules) == 1
    assert raft_rules[0]["from"] == [{"podSelector": policy["podSelector"]}]
    audit = container(objects, "CronJob", "chunkraft-audit")
    assert audit["args"][:3] == ["spark-submit", "--master", "k8s://https://kubernetes.default.svc"]
    secrets = {name for kind, name in objects if kind == "Secret"}
    expected = {"chunkraft-raft", "chunkraft-credentials", "chunkraft-broker-tokens",
                "chunkraft-audit"}
    # production takes its secrets from outside git; dev fills the base's empty ones.
    assert secrets == (expected if overlay == "dev" else set())
    images = {c["image"] for o in objects.values()
              for c in _pod_containers(o)}
    assert all(":" in image for image in images), images


def _pod_containers(item: dict[str, Any]) -> list[dict[str, Any]]:
    spec = item.get("spec", {})
    if item["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    pod = spec.get("template", {}).get("spec", {})
    return [*pod.get("initContainers", []), *pod.get("containers", [])]
