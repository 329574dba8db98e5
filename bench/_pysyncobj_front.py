"""Raw pysyncobj behind a tiny HTTP front: the baseline chunkraft's controller is compared with.

One process per node: a ``SyncObj`` with a dict store, configured as chunkraft's RaftNode is
(password, journal + dump file, ``appendEntriesUseBatch=False``, the same election, append,
retry and fallback timings, ``commandsWaitLeader=False``) and the same HTTP stack (FastAPI on
uvicorn). ``POST /put {"key", "value"}`` commits one value; ``POST /put-batch {"items"}`` commits
a list of values as one command. pysyncobj forwards a call made on a follower to the leader.
``POST /ceiling {"mode": "sync"|"async", "seconds", "batch", "window"}`` measures the library
itself from a thread of this process, with no HTTP per call. :class:`RawCluster` starts three.

``GET /status`` answers the node's leader and ``raft_term`` (``getStatus()``) and, counted on
each of pysyncobj's ticks by chunkraft's own ``LeadershipWatch`` (the rule chunkraft's nodes
count by: one attribute read a tick), its ``leadership_changes``, ``term_increments`` and
``incarnation``: :meth:`RawCluster.leadership` samples them for the steady-leader rule of
``bench/_steady.py``.

Run as ``python bench/_pysyncobj_front.py --node-id N --raft ... --http-port P ...``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from chunkraft.local.steady_leader import LeadershipSample, NodeLeadership

SELF = Path(__file__).resolve()


def _serve(args: argparse.Namespace) -> None:
    import uvicorn
    from pysyncobj import FAIL_REASON, SyncObj, SyncObjConf, SyncObjConsumer, replicated

    from chunkraft.controller.raft.leadership_watch import LeadershipWatch

    class Store(SyncObjConsumer):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.data: dict[str, str] = {}
            self.count = 0

        @replicated  # type: ignore[untyped-decorator]
        def put(self, key: str, value: str) -> int:
            self.data[key] = value
            self.count += 1
            return self.count

        @replicated  # type: ignore[untyped-decorator]
        def put_many(self, items: list[tuple[str, str]]) -> int:
            for key, value in items:
                self.data[key] = value
            self.count += len(items)
            return self.count

    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    password = Path(args.password_file).read_text().strip()
    store = Store()
    conf = SyncObjConf(
        password=password, bindAddress=args.raft, journalFile=str(data_dir / "journal"),
        fullDumpFile=str(data_dir / "dump"), appendEntriesUseBatch=False,
        raftMinTimeout=0.2, raftMaxTimeout=0.5, appendEntriesPeriod=0.05,
        connectionRetryTime=0.5, connectionTimeout=1.0, leaderFallbackTimeout=1.5,
        commandsWaitLeader=False, logCompactionMinEntries=50_000,
        logCompactionMinTime=300.0, dynamicMembershipChange=False)
    node = SyncObj(args.raft, args.partners.split(","), conf, consumers=[store])
    watch = LeadershipWatch()
    node.addOnTickCallback(lambda: watch.observe(int(node.raftCurrentTerm), node._getLeader()))
    app = FastAPI()

    async def commit(method: Any, *call_args: Any) -> JSONResponse:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()

        def settle(result: Any, error: int) -> None:
            if future.done():
                return
            if error == FAIL_REASON.SUCCESS:
                future.set_result(result)
            else:
                future.set_exception(RuntimeError(f"pysyncobj error {error}"))

        def callback(result: Any, error: int) -> None:
            loop.call_soon_threadsafe(settle, result, error)

        method(*call_args, callback=callback)
        try:
            count = await asyncio.wait_for(future, 30.0)
        except (RuntimeError, TimeoutError) as exc:
            return JSONResponse({"ok": False, "error": str(exc)}, status_code=503)
        return JSONResponse({"ok": True, "count": count})

    @app.post("/put")
    async def put(request: Request) -> JSONResponse:
        body = await request.json()
        return await commit(store.put, body["key"], body["value"])

    @app.post("/put-batch")
    async def put_batch(request: Request) -> JSONResponse:
        body = await request.json()
        return await commit(store.put_many, [tuple(item) for item in body["items"]])

    @app.get("/status")
    async def status() -> JSONResponse:
        info = node.getStatus()
        leader = info.get("leader")
        return JSONResponse({"leader": None if leader is None else str(leader),
                             "self": args.raft, "has_quorum": bool(info.get("has_quorum")),
                             "count": store.count, "raft_term": info.get("raft_term"),
                             "leadership_changes": watch.leadership_changes,
                             "term_increments": watch.term_increments,
                             "incarnation": watch.incarnation})

    @app.post("/ceiling")
    async def ceiling(request: Request) -> JSONResponse:
        body = await request.json()
        result: dict[str, Any] = {}
        thread = threading.Thread(target=_ceiling, args=(store, body, result))
        thread.start()
        await asyncio.get_running_loop().run_in_executor(None, thread.join)
        return JSONResponse(result)

    uvicorn.run(app, host="127.0.0.1", port=args.http_port, log_level="warning",
                access_log=False)


def _ceiling(store: Any, body: dict[str, Any], result: dict[str, Any]) -> None:
    """Library ceiling from one thread: sync calls of one record, or async calls of ``batch``
    records with at most ``window`` in flight. Bounded by ``seconds``."""
    seconds = min(float(body.get("seconds", 5)), 30.0)
    mode = body.get("mode", "sync")
    value = "v" * 200
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()
    cpu = time.process_time()
    calls = records = errors = 0
    if mode == "sync":
        while time.perf_counter() < deadline:
            try:
                store.put(f"ceiling-{calls}", value, sync=True, timeout=5)
                calls += 1
                records += 1
            except Exception:
                errors += 1
    else:
        batch = int(body.get("batch", 100))
        window = threading.Semaphore(int(body.get("window", 100)))
        lock = threading.Lock()
        done = {"calls": 0, "errors": 0}

        def callback(_result: Any, error: int) -> None:
            with lock:
                if error == 0:
                    done["calls"] += 1
                else:
                    done["errors"] += 1
            window.release()

        sent = 0
        while time.perf_counter() < deadline:
            if not window.acquire(timeout=1.0):
                continue
            items = [(f"c-{sent}-{i}", value) for i in range(batch)]
            store.put_many(items, callback=callback)
            sent += 1
        for _ in range(int(body.get("window", 100))):  # wait for the ones in flight
            window.acquire(timeout=5.0)
        calls, errors = done["calls"], done["errors"]
        records = calls * batch
    elapsed = time.perf_counter() - started
    result.update(mode=mode, seconds=round(elapsed, 3), calls=calls, records=records,
                  errors=errors, calls_per_s=round(calls / elapsed, 1),
                  records_per_s=round(records / elapsed, 1),
                  process_cpu_s=round(time.process_time() - cpu, 3))


def node_leadership(answer: object, raft: list[str]) -> NodeLeadership | None:
    """What one node's ``/status`` answer says of the leadership, in chunkraft's terms (the
    leader as its index in ``raft``, the nodes' Raft addresses), or None if it cannot say."""
    if not isinstance(answer, dict):
        return None
    term, changes = answer.get("raft_term"), answer.get("leadership_changes")
    increments = answer.get("term_increments")
    if not (isinstance(term, int) and isinstance(changes, int)
            and isinstance(increments, int)):
        return None
    leader, incarnation = answer.get("leader"), answer.get("incarnation")
    index = raft.index(leader) if isinstance(leader, str) and leader in raft else None
    return NodeLeadership(index, term, changes, increments,
                          incarnation if isinstance(incarnation, str) else None)


@dataclass
class RawCluster:
    """Three raw pysyncobj nodes with HTTP fronts on 127.0.0.1."""

    base_dir: Path
    password: str
    size: int = 3
    processes: dict[int, subprocess.Popen[bytes] | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from chunkraft.local.local_cluster import free_ports

        ports = free_ports(2 * self.size)
        self.raft = [f"127.0.0.1:{p}" for p in ports[: self.size]]
        self.http_ports = ports[self.size:]

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.http_ports]

    def start(self) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        password_file = self.base_dir / "password"
        password_file.write_text(self.password)
        password_file.chmod(0o600)
        for i in range(self.size):
            partners = ",".join(a for j, a in enumerate(self.raft) if j != i)
            log = (self.base_dir / f"node-{i + 1}.log").open("ab")
            self.processes[i] = subprocess.Popen(
                [sys.executable, str(SELF), "--raft", self.raft[i], "--partners", partners,
                 "--http-port", str(self.http_ports[i]),
                 "--data-dir", str(self.base_dir / f"node-{i + 1}"),
                 "--password-file", str(password_file)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"})
            log.close()

    def pid(self, index: int) -> int | None:
        process = self.processes.get(index)
        return process.pid if process is not None else None

    def leadership(self) -> LeadershipSample:
        """Every node's view of the leadership (``bench/_steady.py``'s sampler); a node that
        does not answer is left out. Node ids are node indexes, as the leader's."""
        nodes: dict[int, NodeLeadership] = {}
        for i, url in enumerate(self.urls):
            try:
                answer = httpx.get(f"{url}/status", timeout=2.0, trust_env=False).json()
            except (httpx.HTTPError, ValueError):
                continue
            seen = node_leadership(answer, self.raft)
            if seen is not None:
                nodes[i] = seen
        return LeadershipSample(nodes)

    def leader_index(self, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            leaders = set()
            for url in self.urls:
                try:
                    answer = httpx.get(f"{url}/status", timeout=1.0).json()
                    leaders.add(answer["leader"] if answer["has_quorum"] else None)
                except (httpx.HTTPError, ValueError, KeyError):
                    leaders.add(None)
            if len(leaders) == 1:
                leader = leaders.pop()
                if leader in self.raft:
                    return self.raft.index(leader)
            time.sleep(0.1)
        raise TimeoutError("the raw pysyncobj nodes have no agreed leader")

    def stop(self) -> None:
        for process in self.processes.values():
            if process is not None and process.poll() is None:
                process.terminate()
        for i, process in list(self.processes.items()):
            if process is None:
                continue
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                process.wait(timeout=10)
            self.processes[i] = None

    def __enter__(self) -> RawCluster:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--raft", required=True)
    parser.add_argument("--partners", required=True)
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--password-file", required=True)
    _serve(parser.parse_args())
