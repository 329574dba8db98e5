"""The console's session store: expiry, the bound, CSRF comparison."""

from __future__ import annotations

from chunkraft.console.sessions import SessionStore, cookie_name


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_session_expires_when_idle_and_after_its_lifetime() -> None:
    clock = Clock()
    store = SessionStore(idle=10, lifetime=25, clock=clock)
    session = store.create("User:alice", "crt_x")
    assert store.get(session.session_id) is session
    clock.now += 9
    assert store.get(session.session_id) is session  # each use restarts the idle time
    clock.now += 9
    assert store.get(session.session_id) is session
    clock.now += 9  # 27 s old: past the lifetime though never idle for 10 s
    assert store.get(session.session_id) is None
    other = store.create("User:bob", None)
    clock.now += 11
    assert store.get(other.session_id) is None
    assert len(store) == 0


def test_the_store_is_bounded_evicting_the_least_recently_used() -> None:
    store = SessionStore(max_sessions=2)
    first, second = store.create("User:a", "t1"), store.create("User:b", "t2")
    assert store.get(first.session_id) is first  # now the most recently used
    third = store.create("User:c", "t3")
    assert store.get(second.session_id) is None
    assert store.get(first.session_id) is first and store.get(third.session_id) is third


def test_sessions_have_distinct_ids_and_csrf_tokens_and_end_on_logout() -> None:
    store = SessionStore()
    one, two = store.create("User:a", "t"), store.create("User:a", "t")
    assert len({one.session_id, two.session_id, one.csrf, two.csrf}) == 4
    assert one.csrf_matches(one.csrf)
    assert not one.csrf_matches(two.csrf) and not one.csrf_matches(None)
    store.end(one.session_id)
    assert store.get(one.session_id) is None and store.get(two.session_id) is two


def test_each_controller_names_its_own_cookie() -> None:
    assert cookie_name(1) != cookie_name(2)
