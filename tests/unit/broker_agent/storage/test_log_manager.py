import uuid
from pathlib import Path

from chunkraft.broker_agent.storage import LogConfig, LogManager
from chunkraft.broker_agent.storage.log_manager import log_dir_name, parse_log_dir_name
from chunkraft.dataplane.record_batch import build_batch

A = uuid.UUID("11111111-1111-1111-1111-111111111111")
B = uuid.UUID("22222222-2222-2222-2222-222222222222")


def test_dir_names() -> None:
    assert log_dir_name("my-topic", 3) == "my-topic-3"
    assert parse_log_dir_name("my-topic-3") == ("my-topic", 3)
    assert parse_log_dir_name("nodash") is None
    assert parse_log_dir_name("t-x") is None


def test_create_reload_delete(tmp_path: Path) -> None:
    m = LogManager(tmp_path, LogConfig())
    log = m.get_or_create("t", 0, A)
    assert m.get_or_create("t", 0, A) is log
    log.append_as_leader(build_batch([(None, b"v", 1)]), 0)
    m.get_or_create("t", 1, A)
    m.close_all()
    (tmp_path / "stray-file").write_text("x")
    (tmp_path / "t-7.abc-delete").mkdir()
    m2 = LogManager(tmp_path, LogConfig())
    logs = m2.load_all()
    assert set(logs) == {("t", 0), ("t", 1)}
    assert logs[("t", 0)].log_end_offset == 1
    assert not (tmp_path / "t-7.abc-delete").exists()
    assert m2.delete("t", 1)
    assert not (tmp_path / "t-1").exists()
    assert not m2.delete("t", 1)
    m2.flush_all()


def test_stale_topic_id_is_replaced(tmp_path: Path) -> None:
    m = LogManager(tmp_path, LogConfig())
    old = m.get_or_create("t", 0, A)
    old.append_as_leader(build_batch([(None, b"v", 1)]), 0)
    new = m.get_or_create("t", 0, B)
    assert new.topic_id == B and new.log_end_offset == 0
    m.close_all()
    # also when the stale directory is only on disk
    m2 = LogManager(tmp_path, LogConfig())
    again = m2.get_or_create("t", 0, A)
    assert again.topic_id == A and again.log_end_offset == 0
    assert [p.name for p in tmp_path.iterdir()] == ["t-0"]
