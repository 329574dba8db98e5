"""``chunkraft snapshot export``: one summary line, and a clear error with exit status 1 for an
existing output, an unreadable source or a server's refusal (with its Kafka error code)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkraft.cli.main import main
from chunkraft.export.manifest import Manifest
from tests.unit.export.samples import write_sample_snapshot


class _Server(http.server.BaseHTTPRequestHandler):
    snapshot: bytes = b""

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != "Bearer good":
            body = json.dumps({"error_code": 31, "error_name": "CLUSTER_AUTHORIZATION_FAILED",
                               "message": "no CLUSTER_ACTION"}).encode()
            self.send_response(403)
        elif self.path == "/controller/v1/snapshot":
            body = self.snapshot
            self.send_response(200)
            self.send_header("X-Snapshot-End-Offset", "42")
            self.send_header("X-Snapshot-Epoch", "2")
        else:
            body = b"{}"
            self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "source").mkdir()
    path = write_sample_snapshot(tmp_path / "source")
    # the stream sends what the controller holds; its append time is 0
    _Server.snapshot = path.read_bytes()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_export_of_a_snapshot_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_sample_snapshot(tmp_path)
    assert main(["snapshot", "export", "--snapshot", str(path), "--out",
                 str(tmp_path / "out")]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("exported controller-snapshot offset=41 epoch=2 ")
    assert "chunks=2 " in line and "topics=2 " in line and line.endswith("s")
    assert main(["snapshot", "export", "--snapshot", str(path), "--out",
                 str(tmp_path / "out")]) == 1
    assert "already exists" in capsys.readouterr().err


def test_an_unreadable_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "export", "--snapshot", str(tmp_path / "nope.checkpoint"),
                 "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error while executing snapshot command : cannot read")
    assert not (tmp_path / "out").exists()


def test_download_export_and_cleanup(server: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("bearer.token=good\n")
    out = tmp_path / "exports" / "now"
    assert main(["snapshot", "export", "--bootstrap-server", f"http://127.0.0.1:1,{server}",
                 "--command-config", str(config), "--out", str(out)]) == 0
    manifest = Manifest.read(out)
    assert manifest.source == f"{server}/controller/v1/snapshot"
    assert (manifest.offset, manifest.epoch) == (41, 2)
    assert manifest.tables["chunks"].rows == 2
    assert [p.name for p in out.parent.iterdir()] == ["now"]  # the download is gone
    assert "exported controller-snapshot" in capsys.readouterr().out


def test_a_refusal_names_the_kafka_error(server: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("bearer.token=bad\n")
    out = tmp_path / "exports" / "now"
    assert main(["snapshot", "export", "--bootstrap-server", server, "--command-config",
                 str(config), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "HTTP 403 CLUSTER_AUTHORIZATION_FAILED (error code 31): no CLUSTER_ACTION" in err
    assert not out.parent.exists() or list(out.parent.iterdir()) == []


def test_a_broker_refusal(server: str, tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "export", "--broker-server", server, "--out",
                 str(tmp_path / "b")]) == 1
    assert "CLUSTER_AUTHORIZATION_FAILED" in capsys.readouterr().err


def test_exactly_one_source(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["snapshot", "export", "--out", str(tmp_path / "x")])
    with pytest.raises(SystemExit):
        main(["snapshot", "export", "--snapshot", "a", "--broker-server", "http://b:1",
              "--out", str(tmp_path / "x")])
