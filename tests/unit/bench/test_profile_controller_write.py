"""profile_controller_write.py's reading of py-spy's collapsed stacks: frames and thread roles."""

from __future__ import annotations

from pathlib import Path

from profile_controller_write import frame_name, thread_role, top_frames

API = 'process 10:"python -m chunkraft controller"'
RAFT = 'process 11:"python -m chunkraft.controller.raft.raft_process"'
TICK = ("thread (12): Thread-3;Thread.run (threading.py:982);"
        "SyncObj._autoTickThread (pysyncobj/syncobj.py:593)")


def test_a_frame_is_named_by_its_function_and_file_without_the_line() -> None:
    assert frame_name("sync (/x/y/checked_journal.py:88)") == "sync (checked_journal.py)"
    assert frame_name("<module>") == "<module>"


def test_threads_are_told_apart_by_process_and_thread() -> None:
    assert thread_role([API, "thread (10): MainThread", "run (runners.py:1)"]) == \
        "event loop (API)"
    assert thread_role([API, RAFT, "thread (11): MainThread", "serve (raft_process.py:1)"]) == \
        "raft process main (serves the API)"
    assert thread_role([API, RAFT, *TICK.split(";")]) == "raft tick thread"
    assert thread_role([API, *TICK.split(";")]) == "raft tick thread"  # embedded: same thread
    assert thread_role([API, "thread (13): chunkraft-raft-channel", "f (a.py:1)"]) == \
        "channel reader (API process)"
    assert thread_role([API, RAFT, "thread (14): Thread-9", "f (a.py:1)"]) == \
        "other threads of the Raft process"


def test_each_roles_time_is_shared_among_its_leaves(tmp_path: Path) -> None:
    collapsed = tmp_path / "leader.txt"
    collapsed.write_text(
        f"{API};{RAFT};{TICK};CheckedFileJournal.sync (checked_journal.py:88) 300\n"
        f"{API};{RAFT};{TICK};PollPoller.poll (poller.py:40) 100\n"
        f"{API};thread (10): MainThread;Runner.run (runners.py:118) 250\n")
    summary = top_frames(collapsed, limit=5)
    roles = summary["roles"]
    assert isinstance(roles, dict)
    assert roles["raft tick thread"]["samples"] == 400
    assert roles["raft tick thread"]["top"][0] == ("CheckedFileJournal.sync (checked_journal.py)",
                                                   75.0)
    assert roles["event loop (API)"]["top"] == [("Runner.run (runners.py)", 100.0)]
    assert summary["samples"] == 650
    own = summary["own"]
    assert isinstance(own, list)
    assert own[0] == ("CheckedFileJournal.sync (checked_journal.py)", 46.2)
