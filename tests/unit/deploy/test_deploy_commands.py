"""deploy/'s command lines and settings against the real CLI and configuration loaders.

Every ``chunkraft ...`` command line in the systemd units, the compose file and the rendered
Kubernetes manifests is run with ``--help`` and parsed by the real argparse parser
(``chunkraft.cli.main.build_parser``); every properties file they name (the systemd examples,
the compose files, the Kubernetes ConfigMaps) loads with the real loaders, with the
environment the unit, service or pod gives it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from chunkraft.broker_agent.config import BrokerConfig, load_broker_config
from chunkraft.broker_agent.settings import SETTINGS as BROKER_SETTINGS
from chunkraft.cli.main import build_parser
from chunkraft.controller.config import ControllerConfig, load_controller_config
from chunkraft.controller.properties import parse_properties
from chunkraft.controller.settings import SETTINGS as CONTROLLER_SETTINGS
from chunkraft.deploy.kustomize import render

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / "deploy"
SYSTEMD = DEPLOY / "systemd"
COMPOSE = DEPLOY / "compose"
UNITS = sorted(SYSTEMD.glob("*.service"))
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
LOOPBACK_OR_WILDCARD = re.compile(r"(//|@|^)(0\.0\.0\.0|127\.\d+\.\d+\.\d+|localhost|\[?::1?\]?)"
                                  r"(:|$)")


def unit_commands(path: Path) -> list[list[str]]:
    """The ``chunkraft`` argv (without the program) of each Exec* line of a unit."""
    # ExecStart may repeat in a oneshot unit: every line counts, not only the last one.
    commands = []
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip().startswith("Exec"):
            argv = shlex.split(value)
            if Path(argv[0]).name == "chunkraft":
                commands.append(argv[1:])
    return commands


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((COMPOSE / "compose.yaml").read_text(encoding="utf-8"))
    return data


def substitute_compose(text: str) -> str:
    """Compose's ``${VAR...}`` as the README's .env sets them."""
    return re.sub(r"\$\{CHUNKRAFT_CLUSTER_ID[^}]*\}", CLUSTER_ID, text)


def compose_commands() -> dict[str, list[str]]:
    return {name: [substitute_compose(arg) for arg in service["command"]]
            for name, service in compose()["services"].items() if "command" in service}


POD_VALUES = {"CHUNKRAFT_CLUSTER_ID": CLUSTER_ID, "CHUNKRAFT_BROKER_CLUSTER_ID": CLUSTER_ID,
              "CHUNKRAFT_NODE_ID": "1",
              "CHUNKRAFT_BROKER_NODE_ID": "1", "POD_NAME": "chunkraft-controller-1",
              "POD_NAMESPACE": "chunkraft", "POD_IP": "10.0.0.7",
              "SPARK_IMAGE": "chunkraft-spark:0.1.0"}


def substitute_pod(text: str) -> str:
    """Kubernetes' ``$(VAR)`` with values a pod would have."""
    return re.sub(r"\$\((\w+)\)", lambda match: POD_VALUES[match.group(1)], text)


def pod_containers() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for item in render(DEPLOY / "kubernetes" / "overlays" / "production"):
        spec = item.get("spec", {})
        if item["kind"] == "CronJob":
            spec = spec["jobTemplate"]["spec"]
        pod = spec.get("template", {}).get("spec", {})
        for container in [*pod.get("initContainers", []), *pod.get("containers", [])]:
            found.append((f"{item['kind']}/{item['metadata']['name']}/{container['name']}",
                          container))
    return found


def kubernetes_commands() -> dict[str, list[str]]:
    """The chunkraft argv of every container; the spark-submit container's job arguments are
    ``chunkraft audit``'s (deploy/spark/audit_job.py takes that command's flags)."""
    commands = {}
    for name, container in pod_containers():
        args = [substitute_pod(arg) for arg in container["args"]]
        if args[0] == "spark-submit":
            job = next(i for i, arg in enumerate(args) if arg.endswith("audit_job.py"))
            args = ["audit", *args[job + 1:]]
        commands[name] = args
    return commands


ALL_COMMANDS = ([(f"{unit.name}:{i}", argv) for unit in UNITS
                 for i, argv in enumerate(unit_commands(unit))]
                + [(f"compose:{name}", argv) for name, argv in compose_commands().items()]
                + [(f"kubernetes:{name}", argv) for name, argv in kubernetes_commands().items()])


def test_every_artifact_has_its_command_lines() -> None:
    names = {name.split(":")[0] for name, _ in ALL_COMMANDS}
    assert names >= {"chunkraft-controller.service", "chunkraft-broker.service",
                     "chunkraft-audit.service", "compose", "kubernetes"}
    firsts = {tuple(argv[:2]) for _, argv in ALL_COMMANDS}
    assert {("controller", "--config"), ("broker", "--config"), ("controller", "format"),
            ("snapshot", "export"), ("audit", "--snapshot")} <= firsts


@pytest.mark.parametrize(("where", "argv"), ALL_COMMANDS, ids=[n for n, _ in ALL_COMMANDS])
def test_a_command_line_is_one_the_cli_knows(where: str, argv: list[str]) -> None:
    parser = build_parser()
    # Its --help: the subcommand exists and prints its usage.
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_info:
        parser.parse_args([*argv, "--help"])
    assert exit_info.value.code == 0
    words = [word for word in argv if not word.startswith("-")][:2]
    assert re.match(r"usage:\s+chunkraft " + re.escape(words[0]), out.getvalue()), out.getvalue()
    # Its flags: the real parser takes them (argparse exits 2 on anything unknown).
    args = build_parser().parse_args(argv)
    assert isinstance(args, argparse.Namespace)
    # A group without its subcommand would only print the group's help (exit 2).
    assert not args.handler.__qualname__.startswith("_print_help."), where


# --- properties files --------------------------------------------------------------------------

def password_file(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "raft-password"
    path.write_text("a test password\n", encoding="utf-8")
    return {"raft.password.file": str(path)}


def assert_known_keys(path: Path, settings: Any) -> None:
    names = {setting.name for setting in settings}
    keys = set(parse_properties(path.read_text(encoding="utf-8")))
    assert keys, path
    assert keys <= names, f"{path}: unknown {sorted(keys - names)}"


def load_controller(path: Path, tmp_path: Path, environ: dict[str, str]) -> ControllerConfig:
    return load_controller_config(str(path), password_file(tmp_path), environ)


def load_broker(path: Path, environ: dict[str, str]) -> BrokerConfig:
    return load_broker_config(str(path), {}, environ)


def test_the_systemd_controller_example_loads_on_the_hosts_own_address(tmp_path: Path) -> None:
    path = SYSTEMD / "controller.properties.example"
    assert_known_keys(path, CONTROLLER_SETTINGS)
    config = load_controller(path, tmp_path, {})
    assert config.node_id == 1
    voters = config.controller_quorum_voters
    assert len(voters) == 3
    assert config.listeners.host == config.voter.host  # this host's address, for both
    text = path.read_text(encoding="utf-8")
    for key in ("listeners", "controller.quorum.voters", "controller.http.urls"):
        value = str(parse_properties(text)[key].value)
        for entry in value.split(","):
            assert not LOOPBACK_OR_WILDCARD.search(entry), f"{key}: {entry}"
    assert config.data_dir.as_posix().startswith("/var/lib/chunkraft/")  # ReadWritePaths


def test_the_systemd_broker_example_loads_on_the_hosts_own_address() -> None:
    path = SYSTEMD / "broker.properties.example"
    assert_known_keys(path, BROKER_SETTINGS)
    config = load_broker(path, {})
    assert config.node_id == 0
    assert not LOOPBACK_OR_WILDCARD.search(config.listeners.url)
    for url in config.controller_quorum_bootstrap_servers:
        assert not LOOPBACK_OR_WILDCARD.search(url)
    assert config.log_dir.as_posix().startswith("/var/lib/chunkraft/")  # ReadWritePaths


def unit_setting(path: Path, name: str) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == name:
            return value.strip()
    raise AssertionError(f"{path.name}: no {name}")


def test_the_units_are_sandboxed_and_wait_for_a_controlled_shutdown() -> None:
    for unit in UNITS:
        assert unit_setting(unit, "User") == "chunkraft"
        assert unit_setting(unit, "NoNewPrivileges") == "yes"
        assert unit_setting(unit, "ProtectSystem") == "strict"
        assert unit_setting(unit, "ReadWritePaths") == "/var/lib/chunkraft"
        assert unit_setting(unit, "ProtectHome") == "yes"
        assert unit_setting(unit, "PrivateTmp") == "yes"
    broker = load_broker(SYSTEMD / "broker.properties.example", {})
    stop = int(unit_setting(SYSTEMD / "chunkraft-broker.service", "TimeoutStopSec"))
    # The controlled shutdown, then uvicorn's 5 s and the flush, before systemd's SIGKILL.
    assert stop >= broker.controlled_shutdown_timeout_ms / 1000 + 30


def service_environment(service: dict[str, Any]) -> dict[str, str]:
    return {key: substitute_compose(str(value))
            for key, value in service.get("environment", {}).items()}


def test_the_compose_properties_load_with_each_services_environment(tmp_path: Path) -> None:
    services = compose()["services"]
    assert_known_keys(COMPOSE / "controller.properties", CONTROLLER_SETTINGS)
    assert_known_keys(COMPOSE / "broker.properties", BROKER_SETTINGS)
    for node_id in (1, 2, 3):
        config = load_controller(COMPOSE / "controller.properties", tmp_path,
                                 service_environment(services[f"controller-{node_id}"]))
        assert config.node_id == node_id
        assert config.voter.host == config.listeners.host == f"controller-{node_id}"
    for broker_id in (0, 1, 2):
        service = services[f"broker-{broker_id}"]
        config = load_broker(COMPOSE / "broker.properties", service_environment(service))
        assert config.node_id == broker_id
        token = Path(str(config.broker_token_file)).name
        assert token in service["secrets"]  # its own token, mounted as a compose secret


def test_the_compose_file_has_secrets_and_readiness_checks() -> None:
    data = compose()
    assert {"raft-password", "credentials.json"} <= set(data["secrets"])
    for name, service in data["services"].items():
        if name.startswith(("controller-", "broker-")):
            assert "/readyz" in " ".join(service["healthcheck"]["test"]), name


def test_the_kubernetes_configmaps_load_with_each_pods_environment(tmp_path: Path) -> None:
    objects = {(o["kind"], o["metadata"]["name"]): o
               for o in render(DEPLOY / "kubernetes" / "overlays" / "production")}
    containers = dict(pod_containers())

    def environment(name: str) -> dict[str, str]:
        values = {**POD_VALUES, "POD_NAME": name.split("/")[1] + "-1"}
        env = {}
        for item in containers[name]["env"]:
            value = item.get("value")
            if value is None:  # from the downward API or a ConfigMap
                value = values[item["name"]]
            env[item["name"]] = re.sub(r"\$\((\w+)\)", lambda m: values[m.group(1)], value)
        return env

    controller_file = tmp_path / "controller.properties"
    controller_file.write_text(
        objects[("ConfigMap", "chunkraft-controller")]["data"]["controller.properties"])
    assert_known_keys(controller_file, CONTROLLER_SETTINGS)
    config = load_controller(controller_file, tmp_path,
                             environment("StatefulSet/chunkraft-controller/controller"))
    assert config.node_id == 1
    assert config.voter.host == config.listeners.host == (
        "chunkraft-controller-1.chunkraft-controller-headless")
    broker_file = tmp_path / "broker.properties"
    broker_file.write_text(objects[("ConfigMap", "chunkraft-broker")]["data"]["broker.properties"])
    assert_known_keys(broker_file, BROKER_SETTINGS)
    broker = load_broker(broker_file, environment("StatefulSet/chunkraft-broker/broker"))
    assert broker.node_id == 1
    assert str(broker.broker_token_file) == "/etc/chunkraft/tokens/broker-1.token"
