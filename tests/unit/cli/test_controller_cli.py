"""``chunkraft controller`` (chunkraft.cli.controller): run, format, random-cluster-id."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkraft.cli.main import main
from chunkraft.controller.config import ControllerConfig
from chunkraft.controller.settings import SETTINGS
from chunkraft.controller.storage import format_storage, read_meta_properties
from chunkraft.errors import ConfigError, StorageError
from chunkraft.records.uuids import parse_kafka_uuid

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
OTHER_CLUSTER = "ZbXTn_OZSR-JIQ_VK7MsgQ"
PASSWORD = "correct-horse-battery-staple"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI reads os.environ: no CHUNKRAFT_* variable of the test runner may leak in."""
    for setting in SETTINGS:
        monkeypatch.delenv(setting.env_var, raising=False)


class FakeProcess:
    """Stands in for chunkraft.controller.process, recording the config it is given."""

    def __init__(self) -> None:
        self.configs: list[ControllerConfig] = []
        self.status = 0
        self.raises: Exception | None = None

    def run_controller(self, config: ControllerConfig) -> int:
        self.configs.append(config)
        if self.raises is not None:
            raise self.raises
        return self.status


@pytest.fixture
def process(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProcess]:
    fake = FakeProcess()
    module = types.ModuleType("chunkraft.controller.process")
    module.run_controller = fake.run_controller  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "chunkraft.controller.process", module)
    yield fake


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    data_dir = tmp_path / "data"
    path = tmp_path / "controller.properties"
    path.write_text(
        "# a single-voter controller for tests\n"
        "node.id=1\n"
        f"cluster.id={CLUSTER}\n"
        "controller.quorum.voters=1@127.0.0.1:9093\n"
        "listeners=http://127.0.0.1:9090\n"
        f"data.dir={data_dir}\n"
        f"raft.password={PASSWORD}\n"
    )
    return path


def formatted(config_file: Path) -> Path:
    data_dir = config_file.parent / "data"
    format_storage(data_dir, parse_kafka_uuid(CLUSTER), 1)
    return data_dir


# --- random-cluster-id and format --------------------------------------------------------------


def test_random_cluster_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["controller", "random-cluster-id"]) == 0
    out = capsys.readouterr().out.strip()
    assert len(out) == 22
    parse_kafka_uuid(out)


def test_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_dir = tmp_path / "data"
    args = ["controller", "format", "--cluster-id", CLUSTER, "--data-dir", str(data_dir)]
    assert main([*args, "--node-id", "2"]) == 0
    out = capsys.readouterr().out
    assert out == (
        f"Formatted {data_dir} for cluster {CLUSTER}, node 2 ({data_dir / 'meta.properties'})\n"
    )
    meta = read_meta_properties(data_dir)
    assert meta is not None and (meta.cluster_id, meta.node_id) == (parse_kafka_uuid(CLUSTER), 2)


def test_format_twice_fails_with_status_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["controller", "format", "--cluster-id", CLUSTER, "--data-dir", str(tmp_path)]
    assert main([*args, "--node-id", "1"]) == 0
    capsys.readouterr()
    assert main([*args, "--node-id", "1"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"error: data dir {tmp_path} is already formatted")
    assert main([*args, "--node-id", "1", "--ignore-formatted"]) == 0
    assert capsys.readouterr().out == (
        f"{tmp_path} is already formatted for cluster {CLUSTER}, node 1: nothing to do\n"
    )


def test_format_of_another_clusters_dir_names_both_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    format_storage(tmp_path, parse_kafka_uuid(OTHER_CLUSTER), 1)
    args = ["controller", "format", "--cluster-id", CLUSTER, "--data-dir", str(tmp_path)]
    assert main([*args, "--node-id", "1", "--ignore-formatted"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and CLUSTER in err and OTHER_CLUSTER in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cluster-id", "nope", "--data-dir", "d", "--node-id", "1"], "argument --cluster-id"),
        (["--cluster-id", CLUSTER, "--data-dir", "d", "--node-id", "x"], "argument --node-id"),
        (["--cluster-id", CLUSTER, "--node-id", "1"], "--data-dir"),
        (["--data-dir", "d", "--node-id", "1"], "--cluster-id"),
    ],
)
def test_format_usage_errors_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["controller", "format", *args])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: chunkraft controller format ")
    assert message in err


def test_run_flags_do_not_mix_with_a_subcommand(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["controller", "--config", str(config_file), "random-cluster-id"])
    assert status == 2
    assert capsys.readouterr().err == (
        "error: --config: only for running a controller, not with `random-cluster-id`\n"
    )


# --- running -----------------------------------------------------------------------------------


def test_run_hands_the_loaded_config_to_the_process(
    config_file: Path, process: FakeProcess
) -> None:
    data_dir = formatted(config_file)
    process.status = 7
    assert main(["controller", "--config", str(config_file)]) == 7
    (config,) = process.configs
    assert (config.node_id, config.data_dir, config.raft_password) == (1, data_dir, PASSWORD)


def test_run_precedence_flags_over_environment_over_file(
    config_file: Path, process: FakeProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    formatted(config_file)
    with config_file.open("a") as file:
        file.write("request.timeout.ms=1000\nbroker.session.timeout.ms=5000\n")
    monkeypatch.setenv("CHUNKRAFT_REQUEST_TIMEOUT_MS", "2000")
    monkeypatch.setenv("CHUNKRAFT_SUPER_USERS", "User:admin")
    args = ["controller", "--config", str(config_file), "--override", "request.timeout.ms=3000"]
    assert main(args) == 0
    (config,) = process.configs
    assert config.request_timeout_ms == 3000  # flag
    assert config.super_users == ("User:admin",)  # environment
    assert config.broker_session_timeout_ms == 5000  # file
    assert config.broker_heartbeat_interval_ms == 2000  # default


def test_node_id_flag(tmp_path: Path, config_file: Path, process: FakeProcess) -> None:
    format_storage(tmp_path / "data2", parse_kafka_uuid(CLUSTER), 2)
    args = [
        "controller",
        "--config",
        str(config_file),
        "--node-id",
        "2",
        "--override",
        "controller.quorum.voters=2@127.0.0.1:9094",
        "--override",
        f"data.dir={tmp_path / 'data2'}",
    ]
    assert main(args) == 0
    assert process.configs[0].node_id == 2


def test_a_config_error_exits_2_naming_setting_and_source(
    config_file: Path,
    process: FakeProcess,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CHUNKRAFT_BROKER_SESSION_TIMEOUT_MS", "soon")
    assert main(["controller", "--config", str(config_file)]) == 2
    assert capsys.readouterr().err == (
        "error: broker.session.timeout.ms (environment variable "
        "CHUNKRAFT_BROKER_SESSION_TIMEOUT_MS): not an integer: 'soon'\n"
    )
    assert process.configs == []


def test_a_bad_node_id_flag_is_a_config_error(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["controller", "--config", str(config_file), "--node-id", "one"]) == 2
    assert capsys.readouterr().err.startswith("error: node.id (command line): ")


def test_no_configuration_at_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["controller"]) == 2
    assert capsys.readouterr().err.startswith(
        "error: node.id: required, and not set; set it in a config file (none was given)"
    )


def test_an_override_given_twice_is_refused(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["controller", "--config", str(config_file), "--override", "node.id=1", "--node-id", "1"]
    assert main(args) == 2
    assert capsys.readouterr().err == "error: node.id is given twice on the command line\n"


def test_an_override_without_equals_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["controller", "--override", "node.id"])
    assert caught.value.code == 2
    assert "expected KEY=VALUE, got 'node.id'" in capsys.readouterr().err


def test_an_unformatted_data_dir_exits_1(
    config_file: Path, process: FakeProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["controller", "--config", str(config_file)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: data dir {config_file.parent / 'data'} is not formatted")
    assert f"chunkraft controller format --cluster-id {CLUSTER}" in err
    assert process.configs == []


def test_another_clusters_data_dir_exits_1(
    config_file: Path, process: FakeProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    format_storage(config_file.parent / "data", parse_kafka_uuid(OTHER_CLUSTER), 1)
    assert main(["controller", "--config", str(config_file)]) == 1
    err = capsys.readouterr().err
    assert CLUSTER in err and OTHER_CLUSTER in err
    assert process.configs == []


def test_a_missing_process_module_is_reported(
    config_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    formatted(config_file)
    monkeypatch.setitem(sys.modules, "chunkraft.controller.process", None)  # import fails
    assert main(["controller", "--config", str(config_file)]) == 1
    assert capsys.readouterr().err.startswith(
        "error: the controller process cannot be loaded (chunkraft.controller.process): "
    )


@pytest.mark.parametrize(
    ("error", "status"),
    [(ConfigError("raft.password: rejected by a peer"), 2), (StorageError("disk gone"), 1)],
)
def test_errors_raised_by_the_process_keep_their_status(
    config_file: Path,
    process: FakeProcess,
    capsys: pytest.CaptureFixture[str],
    error: Exception,
    status: int,
) -> None:
    formatted(config_file)
    process.raises = error
    assert main(["controller", "--config", str(config_file)]) == status
    assert capsys.readouterr().err == f"error: {error}\n"


def test_the_password_is_never_printed(
    config_file: Path, process: FakeProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    with config_file.open("a") as file:
        file.write("listeners=http://127.0.0.1:9093\n")  # a duplicate key: refused
    assert main(["controller", "--config", str(config_file)]) == 2
    captured = capsys.readouterr()
    assert PASSWORD not in captured.out + captured.err


def test_help_shows_both_forms(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["controller", "--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert "chunkraft controller [--config FILE]" in out
    assert "chunkraft controller format --cluster-id ID" in out
    assert "random-cluster-id" in out
