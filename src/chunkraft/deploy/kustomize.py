"""render: the subset of kustomize that ``deploy/kubernetes`` uses, so its overlays can be
rendered and checked where no kustomize (or kubectl) is installed.

``python -m chunkraft.deploy.kustomize deploy/kubernetes/overlays/dev`` prints what
``kubectl kustomize`` prints for the same directory (the same objects; kubectl sorts them by
kind). Needs PyYAML (the ``dev`` extra).

A ``kustomization.yaml`` may hold only these fields (any other is refused, so a field this
renderer would silently ignore can never slip into the manifests):

- ``resources``: YAML files (every document an object) and directories with a kustomization
  of their own, rendered first;
- ``patches``: ``- path: FILE`` strategic-merge patches. Each document names its target by
  ``apiVersion``, ``kind`` and ``metadata.name`` and must match exactly one object.
  ``$patch: delete`` at the top removes that object. Otherwise maps merge key by key, a null
  value deletes the key, lists whose items all carry a ``name`` (containers, env, volumes)
  merge item by item, and any other list is replaced whole (as kustomize does for lists
  without a merge key: ``volumeClaimTemplates``, affinity terms, ``args``);
- ``namespace``: set on every namespaced object, and on the ServiceAccount subjects of
  RoleBindings that name none;
- ``images``: ``- name: N, newName: M, newTag: T`` rewrites every container image ``N`` (with
  or without a tag) to ``M:T``.

Pure functions over plain dicts; nothing is cached or shared, so it is thread-safe.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

__all__ = ["KustomizeError", "main", "merge_patch", "render"]

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
FIELDS = frozenset({"apiVersion", "kind", "resources", "patches", "namespace", "images"})
CLUSTER_SCOPED = frozenset({
    "Namespace", "ClusterRole", "ClusterRoleBinding", "PersistentVolume", "StorageClass",
    "CustomResourceDefinition", "PriorityClass", "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration", "IngressClass", "RuntimeClass",
})

Resource = dict[str, Any]


class KustomizeError(ValueError):
    """A kustomization this renderer cannot render: an unknown field, a missing file, a patch
    that matches no object or several."""


def _kustomization_file(directory: Path) -> Path:
    for name in KUSTOMIZATION_FILES:
        path = directory / name
        if path.is_file():
            return path
    raise KustomizeError(f"{directory}: no kustomization.yaml")


def _documents(path: Path) -> list[Resource]:
    try:
        documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    except (OSError, yaml.YAMLError) as error:
        raise KustomizeError(f"{path}: {error}") from None
    objects = []
    for document in documents:
        if document is None:
            continue
        if not isinstance(document, dict):
            raise KustomizeError(f"{path}: a document is not a mapping")
        objects.append(document)
    return objects


def _identity(resource: Resource) -> tuple[str, str, str]:
    metadata = resource.get("metadata") or {}
    return (str(resource.get("apiVersion", "")), str(resource.get("kind", "")),
            str(metadata.get("name", "")))


def merge_patch(target: Any, patch: Any) -> Any:
    """``patch`` merged onto ``target`` (a new value; neither argument changes), by the rules
    in the module docstring."""
    if isinstance(target, dict) and isinstance(patch, dict):
        merged = copy.deepcopy(target)
        for key, value in patch.items():
            if key == "$patch":
                continue
            if value is None:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = merge_patch(merged[key], value)
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    if isinstance(target, list) and isinstance(patch, list) and _named(target) and _named(patch):
        items = [copy.deepcopy(item) for item in target]
        position = {item["name"]: index for index, item in enumerate(items)}
        for item in patch:
            if item["name"] in position:
                index = position[item["name"]]
                items[index] = merge_patch(items[index], item)
            else:
                position[item["name"]] = len(items)
                items.append(copy.deepcopy(item))
        return items
    return copy.deepcopy(patch)


def _named(items: list[Any]) -> bool:
    return bool(items) and all(isinstance(item, dict) and "name" in item for item in items)


def _apply_patches(resources: list[Resource], directory: Path,
                   patches: list[Any]) -> list[Resource]:
    for entry in patches:
        if not isinstance(entry, dict) or set(entry) != {"path"}:
            raise KustomizeError(f"{directory}: only `- path: FILE` patches are supported, "
                                 f"got {entry!r}")
        path = directory / str(entry["path"])
        for patch in _documents(path):
            identity = _identity(patch)
            matches = [i for i, resource in enumerate(resources)
                       if _identity(resource) == identity]
            if len(matches) != 1:
                raise KustomizeError(f"{path}: the patch of {'/'.join(identity)} matches "
                                     f"{len(matches)} objects, not one")
            if patch.get("$patch") == "delete":
                del resources[matches[0]]
            else:
                resources[matches[0]] = merge_patch(resources[matches[0]], patch)
    return resources


def _containers(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                yield from (item for item in value if isinstance(item, dict))
            else:
                yield from _containers(value)
    elif isinstance(node, list):
        for item in node:
            yield from _containers(item)


def _image_name(image: str) -> str:
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def _set_images(resources: list[Resource], images: list[Any], directory: Path) -> None:
    for entry in images:
        if not isinstance(entry, dict) or "name" not in entry:
            raise KustomizeError(f"{directory}: an images entry needs a name, got {entry!r}")
        unknown = set(entry) - {"name", "newName", "newTag"}
        if unknown:
            raise KustomizeError(f"{directory}: images: unsupported {sorted(unknown)}")
        for resource in resources:
            for container in _containers(resource):
                image = str(container.get("image", ""))
                if _image_name(image) != entry["name"]:
                    continue
                name = str(entry.get("newName", entry["name"]))
                tag = entry.get("newTag")
                old_tag = image[len(_image_name(image)):]
                container["image"] = f"{name}:{tag}" if tag is not None else name + old_tag


def _set_namespace(resources: list[Resource], namespace: str) -> None:
    for resource in resources:
        if resource.get("kind") in CLUSTER_SCOPED:
            continue
        resource.setdefault("metadata", {})["namespace"] = namespace
        if resource.get("kind") in ("RoleBinding", "ClusterRoleBinding"):
            for subject in resource.get("subjects") or []:
                if subject.get("kind") == "ServiceAccount" and not subject.get("namespace"):
                    subject["namespace"] = namespace


def render(directory: Path | str) -> list[Resource]:
    """The objects the kustomization in ``directory`` builds, in the order of its resources.

    Raises KustomizeError for anything outside the subset in the module docstring."""
    directory = Path(directory)
    path = _kustomization_file(directory)
    documents = _documents(path)
    if len(documents) != 1:
        raise KustomizeError(f"{path}: expected one document")
    kustomization = documents[0]
    unknown = set(kustomization) - FIELDS
    if unknown:
        raise KustomizeError(f"{path}: unsupported fields {sorted(unknown)}")
    resources: list[Resource] = []
    for entry in kustomization.get("resources") or []:
        source = directory / str(entry)
        if source.is_dir():
            resources.extend(render(source))
        elif source.is_file():
            resources.extend(_documents(source))
        else:
            raise KustomizeError(f"{path}: resource {entry} does not exist")
    resources = _apply_patches(resources, directory, kustomization.get("patches") or [])
    if kustomization.get("namespace"):
        _set_namespace(resources, str(kustomization["namespace"]))
    _set_images(resources, kustomization.get("images") or [], directory)
    return resources


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m chunkraft.deploy.kustomize DIR``: prints the rendered objects as YAML."""
    parser = argparse.ArgumentParser(prog="python -m chunkraft.deploy.kustomize",
                                     description="Render a kustomization (deploy/kubernetes's "
                                                 "subset of kustomize) to standard output.")
    parser.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    try:
        resources = render(args.directory)
    except KustomizeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(yaml.safe_dump_all(resources, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
