"""The room store, both backends: versions, secrets, bounds and expiry.

The Redis backend runs against a real redis-server (Debian's package; `make test` installs it),
started here on a free port."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time

import pytest

from lab_ui import rooms


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (make test installs Debian's package)")
    port = _free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path_factory.mktemp("redis"))],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    import redis

    for _ in range(100):
        try:
            redis.Redis.from_url(url).ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(5)


@pytest.fixture(params=["memory", "redis"])
def store(request):
    if request.param == "memory":
        return rooms.MemoryRooms(max_rooms=3)
    url = request.getfixturevalue("redis_url")
    import redis

    redis.Redis.from_url(url).flushdb()
    return rooms.RedisRooms(url, max_rooms=3)


def test_versions_move_only_when_the_view_changes(store):
    room_id, secret = store.create()
    assert rooms.valid_room_id(room_id) and len(secret) >= 32
    assert store.version(room_id) == 0
    assert store.publish(room_id, secret, {"page": "masks", "values": {"L": 4}}) == 1
    assert store.publish(room_id, secret, {"values": {"L": 4}, "page": "masks"}) == 1  # same view
    assert store.publish(room_id, secret, {"page": "masks", "values": {"L": 5}}) == 2
    snap = store.snapshot(room_id)
    assert snap.version == 2 and snap.payload == {"page": "masks", "values": {"L": 5}}


def test_only_the_secret_drives_the_room(store):
    room_id, secret = store.create()
    for wrong in ("", secret[:-1] + ("a" if secret[-1] != "a" else "b"), None, 12, "x" * 10_000):
        with pytest.raises(rooms.RoomError, match="only the presenter"):
            store.publish(room_id, wrong, {"page": "x"})
        with pytest.raises(rooms.RoomError, match="only the presenter"):
            store.close(room_id, wrong)
    assert store.version(room_id) == 0
    store.close(room_id, secret)
    assert store.version(room_id) is None and store.snapshot(room_id) is None
    with pytest.raises(rooms.RoomError, match="ended or expired"):
        store.publish(room_id, secret, {})


def test_rooms_are_bounded_and_payloads_too(store):
    made = [store.create() for _ in range(3)]
    with pytest.raises(rooms.RoomError, match="all 3 rooms"):
        store.create()
    room_id, secret = made[0]
    with pytest.raises(rooms.RoomError, match="KiB"):
        store.publish(room_id, secret, {"values": {"text": "x" * (rooms.MAX_PAYLOAD_BYTES + 1)}})
    with pytest.raises(ValueError):
        store.publish(room_id, secret, {"values": {"x": float("nan")}})  # not JSON
    store.close(room_id, secret)
    store.create()  # a slot is free again


def test_unknown_rooms_are_none(store):
    assert store.version("zzzzzz") is None and store.snapshot("zzzzzz") is None


def test_memory_rooms_expire_when_idle():
    clock = Clock()
    store = rooms.MemoryRooms(max_rooms=1, ttl_s=60, clock=clock)
    room_id, secret = store.create()
    clock.now = 59
    store.publish(room_id, secret, {"a": 1})  # publishing keeps it alive
    clock.now = 59 + 61
    assert store.version(room_id) is None
    store.create()  # the expired one no longer counts


def test_redis_rooms_expire_when_idle(redis_url):
    store = rooms.RedisRooms(redis_url, ttl_s=1)
    room_id, _ = store.create()
    assert store.version(room_id) == 0
    time.sleep(2.1)
    assert store.version(room_id) is None


def test_concurrent_publishers_never_share_a_version(store):
    """Two replicas publishing different views at once: every view gets its own version."""
    room_id, secret = store.create()
    got: list[int] = []
    lock = threading.Lock()

    def publish(i):
        v = store.publish(room_id, secret, {"values": {"i": i}})
        with lock:
            got.append(v)

    threads = [threading.Thread(target=publish, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(1, 21))


def test_room_ids_are_unambiguous_on_a_projector():
    ids = {rooms.new_room_id() for _ in range(2000)}
    assert len(ids) > 1990
    assert not any(set(i) & set("01lo") for i in ids)
    for bad in ("", "ABCDEF", "abc", "abcdefg", "../../x", None, 123456, "abcd0f"):
        assert not rooms.valid_room_id(bad)


def test_the_store_is_chosen_by_the_environment(monkeypatch, redis_url):
    monkeypatch.setattr(rooms, "_store", None)
    monkeypatch.setenv(rooms.ROOMS_ENV, redis_url)
    assert isinstance(rooms.store(), rooms.RedisRooms)
    monkeypatch.setattr(rooms, "_store", None)
    monkeypatch.setenv(rooms.ROOMS_ENV, "")
    assert isinstance(rooms.store(), rooms.MemoryRooms)
    monkeypatch.setattr(rooms, "_store", None)
    monkeypatch.setenv(rooms.ROOMS_ENV, "mongodb://x")
    with pytest.raises(rooms.RoomError, match="redis://"):
        rooms.store()
    monkeypatch.setattr(rooms, "_store", None)
