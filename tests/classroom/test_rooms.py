"""The room store, both backends: versions, secrets, bounds and expiry.

The Redis backend runs against a real redis-server (Debian's package; `make test` installs it),
started here on a free port, and killed and restarted where the test is about a Redis crash."""

from __future__ import annotations

import json
import signal
import threading
import time

import pytest
from redis_server import RedisServer

from classroom_store import memory_rooms, records, redis_rooms, rooms, signing


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"), persist=False).start()
    yield server.url
    server.stop(signal.SIGTERM)


@pytest.fixture(autouse=True)
def publish_at_once(monkeypatch):
    """Tests that publish view after view without waiting take them all (one test sets the limit)."""
    monkeypatch.setattr(records, "PUBLISH_EVERY_S", 0.0)


@pytest.fixture(params=["memory", "redis"])
def store(request):
    if request.param == "memory":
        return memory_rooms.MemoryRooms(max_rooms=3)
    url = request.getfixturevalue("redis_url")
    import redis

    redis.Redis.from_url(url).flushdb()
    return redis_rooms.RedisRooms(url, max_rooms=3)


def test_versions_move_only_when_the_view_changes(store):
    room_id, secret = store.create()
    assert records.valid_room_id(room_id) and len(secret) >= 32
    assert store.version(room_id) == 0
    assert store.publish(room_id, secret, {"page": "masks", "values": {"L": 4}}) == 1
    assert store.publish(room_id, secret, {"values": {"L": 4}, "page": "masks"}) == 1  # same view
    assert store.publish(room_id, secret, {"page": "masks", "values": {"L": 5}}) == 2
    snap = store.snapshot(room_id)
    assert snap.version == 2 and snap.payload == {"page": "masks", "values": {"L": 5}}


def test_only_the_secret_drives_the_room(store):
    room_id, secret = store.create()
    for wrong in ("", secret[:-1] + ("a" if secret[-1] != "a" else "b"), None, 12, "x" * 10_000):
        with pytest.raises(records.RoomError, match="only the presenter"):
            store.publish(room_id, wrong, {"page": "x"})
        with pytest.raises(records.RoomError, match="only the presenter"):
            store.close(room_id, wrong)
    assert store.version(room_id) == 0
    store.close(room_id, secret)
    assert store.version(room_id) is None and store.snapshot(room_id) is None
    with pytest.raises(records.RoomError, match="ended or expired"):
        store.publish(room_id, secret, {})


def test_rooms_are_bounded_and_payloads_too(store):
    made = [store.create(f"client-{i}") for i in range(3)]
    with pytest.raises(records.RoomError, match="all 3 rooms"):
        store.create("client-4")
    room_id, secret = made[0]
    with pytest.raises(records.RoomError, match="KiB"):
        store.publish(room_id, secret, {"values": {"text": "x" * (records.MAX_PAYLOAD_BYTES + 1)}})
    with pytest.raises(ValueError):
        store.publish(room_id, secret, {"values": {"x": float("nan")}})  # not JSON
    store.close(room_id, secret)
    store.create("another")  # a slot is free again


def test_unknown_rooms_are_none(store):
    assert store.version("zzzzzz") is None and store.snapshot("zzzzzz") is None


def test_memory_rooms_expire_when_the_presenter_is_not_seen():
    clock = Clock()
    store = memory_rooms.MemoryRooms(max_rooms=1, clock=clock)
    room_id, secret = store.create()
    clock.now = 100
    assert store.status(room_id) == records.Status(0, 100.0)  # followers are told how long
    store.publish(room_id, secret, None)  # the presenter's screen checks in: no new version
    assert store.status(room_id) == records.Status(0, 0.0)
    clock.now = 100 + records.PRESENTER_TTL_S + 1  # the tab was closed a few minutes ago
    assert store.version(room_id) is None and store.status(room_id) is None
    assert not store.ended(room_id)  # aged out, not ended by its presenter
    store.create()  # the expired one no longer counts


def test_redis_rooms_expire_when_idle(redis_url):
    store = redis_rooms.RedisRooms(redis_url, ttl_s=1)
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
    ids = {records.new_room_id() for _ in range(2000)}
    assert len(ids) > 1990
    assert not any(set(i) & set("01lo") for i in ids)
    for bad in ("", "ABCDEF", "abc", "abcdefg", "../../x", None, 123456, "abcd0f"):
        assert not records.valid_room_id(bad)


def test_the_store_is_chosen_by_the_environment(monkeypatch, redis_url):
    monkeypatch.setattr(rooms, "_store", None)
    monkeypatch.setenv(rooms.ROOMS_ENV, redis_url)
    assert isinstance(rooms.store(), redis_rooms.RedisRooms)
    monkeypatch.setattr(rooms, "_store", None)
    monkeypatch.setenv(rooms.ROOMS_ENV, "")
    assert isinstance(rooms.store(), memory_rooms.MemoryRooms)
    monkeypatch.setattr(rooms, "_store", None)
    monkeypatch.setenv(rooms.ROOMS_ENV, "mongodb://x")
    with pytest.raises(records.RoomError, match="redis://"):
        rooms.store()
    monkeypatch.setattr(rooms, "_store", None)


def test_room_creation_is_rate_limited_per_client(store):
    for _ in range(records.MAX_CREATES_PER_CLIENT):
        room_id, secret = store.create("10.0.0.7")
        store.close(room_id, secret)  # ending rooms does not refill the allowance
    with pytest.raises(records.RoomError, match=f"you started {records.MAX_CREATES_PER_CLIENT} rooms"):
        store.create("10.0.0.7")
    store.create("10.0.0.8")  # another client is not affected


def test_memory_rate_limit_window_slides():
    clock = Clock()
    store = memory_rooms.MemoryRooms(clock=clock)
    for _ in range(records.MAX_CREATES_PER_CLIENT):
        store.close(*store.create("a"))
    clock.now = records.CREATE_WINDOW_S + 1
    store.create("a")


def test_followers_per_room_are_capped(request):
    clock = Clock()
    for store in (memory_rooms.MemoryRooms(max_followers=2, clock=clock), _redis(request, max_followers=2)):
        room_id, _ = store.create()
        assert store.follow(room_id, "s1", "a") is store.follow(room_id, "s2", "b") is records.Seat.TAKEN
        assert store.follow(room_id, "s3", "c") is records.Seat.ROOM_FULL  # the page tells the one refused
        assert store.follow(room_id, "s1", "a") is records.Seat.TAKEN  # a seated follower keeps its seat
        assert store.status(room_id).followers == 2
        with pytest.raises(records.RoomGone):
            store.follow("zzzzzz", "s1")
    clock.now = records.FOLLOWER_TTL_S + 1  # the first two tabs were closed
    memory = memory_rooms.MemoryRooms(max_followers=1, clock=clock)
    room_id, secret = memory.create()
    assert memory.follow(room_id, "s1") is records.Seat.TAKEN
    clock.now += records.FOLLOWER_TTL_S + 1
    memory.publish(room_id, secret, None)
    assert memory.status(room_id).followers == 0
    assert memory.follow(room_id, "s2") is records.Seat.TAKEN  # s1 stopped checking in: its seat is free


def test_seats_per_room_come_from_the_deployment():
    assert records.room_seats({}) == records.SEATS_PER_REPLICA  # one server
    assert records.room_seats({records.REPLICAS_ENV: "2"}) == 2 * records.SEATS_PER_REPLICA
    assert records.room_seats({records.REPLICAS_ENV: "2", records.SEATS_ENV: "500"}) == 500  # the operator's
    for bad in ("0", "-3", "1e3", "many", str(records.MAX_SEATS + 1)):
        with pytest.raises(records.RoomError, match=records.SEATS_ENV):
            records.room_seats({records.SEATS_ENV: bad})
        with pytest.raises(records.RoomError, match=records.REPLICAS_ENV):
            records.room_seats({records.REPLICAS_ENV: bad})


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_a_room_seats_a_whole_class(backend, request, monkeypatch):
    """A hundred students from their own addresses all get a seat (more than the 40 a room once
    had); the seats counted are the ones the presenter is shown."""
    monkeypatch.setenv(records.REPLICAS_ENV, "2")
    store = memory_rooms.MemoryRooms() if backend == "memory" else _redis(request)
    assert store.seats == 2 * records.SEATS_PER_REPLICA
    room_id, _ = store.create()
    seats = [store.follow(room_id, f"s{i}", f"10.0.{i // 250}.{i % 250}") for i in range(100)]
    assert seats == [records.Seat.TAKEN] * 100
    assert store.status(room_id).followers == 100


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_one_address_holds_a_few_seats_until_the_presenter_raises_it(backend, request):
    """A script cannot take every seat from one address; a class behind one NAT address follows
    once its presenter raises the per-address seats."""
    store = (
        memory_rooms.MemoryRooms(max_followers=60)
        if backend == "memory"
        else _redis(request, max_followers=60)
    )
    room_id, secret = store.create()
    nat = [store.follow(room_id, f"s{i}", "203.0.113.9") for i in range(records.SEATS_PER_CLIENT + 1)]
    assert nat == [records.Seat.TAKEN] * records.SEATS_PER_CLIENT + [records.Seat.CLIENT_FULL]
    assert store.follow(room_id, "s0", "203.0.113.9") is records.Seat.TAKEN  # a seated screen keeps it
    assert store.follow(room_id, "other", "198.51.100.1") is records.Seat.TAKEN  # others still get in
    with pytest.raises(records.RoomError, match="only the presenter"):
        store.set_per_client(room_id, "forged", 60)
    for bad in (0, 61, 2.5, True, "60"):
        with pytest.raises(records.RoomError, match="seats per address"):
            store.set_per_client(room_id, secret, bad)
    store.set_per_client(room_id, secret, 60)
    assert store.status(room_id).per_client == 60
    more = [store.follow(room_id, f"t{i}", "203.0.113.9") for i in range(49)]
    assert more == [records.Seat.TAKEN] * 49  # 10 + 49 from the NAT and 1 other: the room's 60
    assert store.follow(room_id, "t49", "203.0.113.9") is records.Seat.ROOM_FULL


def _redis(request, **kw) -> redis_rooms.RedisRooms:
    import redis

    url = request.getfixturevalue("redis_url")
    redis.Redis.from_url(url).flushdb()
    return redis_rooms.RedisRooms(url, **kw)


def test_redis_creation_never_exceeds_the_cap_under_contention(request):
    """Twenty replicas' presenters press Start at once with four slots left: exactly four rooms."""
    import redis

    store = _redis(request, max_rooms=4)
    made, refused = [], []
    barrier = threading.Barrier(20)

    def start(i):
        barrier.wait()
        try:
            made.append(store.create(f"client-{i}"))
        except records.RoomError as err:
            refused.append(str(err))

    threads = [threading.Thread(target=start, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    r = redis.Redis.from_url(request.getfixturevalue("redis_url"))
    keys = list(r.scan_iter(match=redis_rooms.RedisRooms.PREFIX + "*"))
    assert len(made) == 4 == len(keys) and len(refused) == 16
    assert all(0 < r.ttl(k) <= records.PRESENTER_TTL_S for k in keys)  # no room without an expiry


def test_redis_writes_are_atomic(request):
    """Every write a room operation sends is inside one script or one MULTI…EXEC: a crash between
    two commands cannot leave a room without its expiry or outside the cap's count."""
    import redis

    store = _redis(request)
    url = request.getfixturevalue("redis_url")
    room_id, secret = store.create("x")  # load the scripts first
    seen: list[tuple[str, str]] = []  # (command, "lua" when a script sent it)
    with redis.Redis.from_url(url, decode_responses=True).monitor() as monitor:
        done = threading.Event()

        def listen():
            for event in monitor.listen():
                seen.append((event["command"], event.get("client_type", "")))
                if event["command"].upper().startswith("ECHO"):
                    done.set()
                    return

        listener = threading.Thread(target=listen)
        listener.start()
        time.sleep(0.2)
        other, other_secret = store.create("y")
        store.publish(other, other_secret, {"page": "masks"})
        store.publish(other, other_secret, None)
        store.follow(other, "s")
        store.close(other, other_secret)
        redis.Redis.from_url(url).echo("done")
        listener.join(10)
    assert done.is_set()
    writes = {"HSET", "HSETNX", "EXPIRE", "SET", "DEL", "ZADD", "ZREM", "INCR", "PUBLISH"}
    in_tx = False
    for command, client in seen:
        name = command.split()[0].strip('"').upper()
        in_tx = (in_tx or name == "MULTI") and name != "EXEC"
        if command.startswith(f"SET {redis_rooms.RedisRooms.KEY} ") and command.endswith(" NX"):
            continue  # one atomic command: puts the signing key back only where it is missing
        if name in writes:
            assert in_tx or client == "lua", f"{command} ran outside a script or transaction: {seen}"
    assert sum(client == "lua" for _, client in seen) > 5  # the oracle sees inside scripts


def test_redis_loss_is_a_plain_error_and_a_restart_keeps_rooms(tmp_path):
    """Stopped Redis: every call raises RoomsUnavailable (a RoomError), not a redis exception.
    Restarted with its append-only file (as deploy/serve.sh runs it): the rooms are still there."""
    server = RedisServer(tmp_path).start()
    try:
        store = redis_rooms.RedisRooms(server.url)
        room_id, secret = store.create()
        assert store.publish(room_id, secret, {"page": "masks"}) == 1
        server.stop()  # SIGKILL: a crash
        for call in (
            lambda: store.create(),
            lambda: store.publish(room_id, secret, {"page": "x"}),
            lambda: store.status(room_id),
            lambda: store.version(room_id),
            lambda: store.snapshot(room_id),
            lambda: store.follow(room_id, "s"),
            lambda: store.ended(room_id),
            lambda: store.close(room_id, secret),
        ):
            with pytest.raises(records.RoomsUnavailable, match="cannot be reached") as info:
                call()
            assert isinstance(info.value, records.RoomError)
        server.start()
        assert store.snapshot(room_id) == records.Snapshot(1, {"page": "masks"})
        assert store.publish(room_id, secret, {"page": "gradients"}) == 2  # same secret drives it
        assert not store.ended(room_id)
    finally:
        server.stop()


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_a_presenter_restores_a_room_the_store_lost(backend, tmp_path):
    """A Redis restart without its data: the presenter's next check-in re-publishes the room under
    its id and secret; a room its presenter ended stays ended; nobody else can take the id."""
    server = RedisServer(tmp_path, persist=False).start() if backend == "redis" else None
    try:
        store = redis_rooms.RedisRooms(server.url) if server else memory_rooms.MemoryRooms()
        room_id, secret = store.create()
        store.publish(room_id, secret, {"page": "masks"})
        if server:
            server.stop()
            server.start()
        else:
            store._rooms.clear()  # what a restart without persistence does to the memory
        assert store.status(room_id) is None and not store.ended(room_id)
        with pytest.raises(records.RoomGone):
            store.publish(room_id, secret, None)
        assert store.restore(room_id, secret, {"page": "masks"}, version=2) == 2
        assert store.snapshot(room_id) == records.Snapshot(2, {"page": "masks"})
        with pytest.raises(records.RoomError, match="not started from this browser"):
            store.restore(room_id, "not-the-secret", {"page": "evil"})
        store.close(room_id, secret)
        assert store.ended(room_id)
        with pytest.raises(records.RoomGone, match="ended by its presenter"):
            store.restore(room_id, secret, {"page": "masks"})
    finally:
        if server:
            server.stop()


# ------------------------------------------------------------------ rooms only the server issued


def _forgeries(room_id: str, secret: str, other_id: str) -> list[object]:
    """Secrets that are not this server's for ``room_id``: made up, altered, signed for another
    room, signed with another key, signed long ago."""
    issued, nonce, mac = secret.split("-")
    flipped = mac[:-1] + ("0" if mac[-1] != "0" else "1")
    stale = int(time.time()) - signing.ISSUED_TTL_S - 60
    return [
        "anything",
        "1-2-3",
        f"{issued}-{nonce}-{flipped}",
        f"{issued}-{'0' * len(nonce)}-{mac}",
        signing.issue_secret(b"k" * 32, room_id),
        secret,  # (checked against other_id below)
        f"{stale:x}-{nonce}-{mac}",
        "x" * 10_000,
        None,
    ], other_id


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_a_forged_secret_restores_no_room(backend, request):
    """Nobody makes a room the server did not issue: no id from a made-up or borrowed secret."""
    store = memory_rooms.MemoryRooms() if backend == "memory" else _redis(request)
    room_id, secret = store.create("teacher")
    store.close(room_id, secret)
    free = next(r for r in iter(records.new_room_id, None) if store.status(r) is None and not store.ended(r))
    candidates, other = _forgeries(room_id, secret, free)
    for forged in candidates:
        target = other if forged == secret else free
        assert not store.issued(target, forged)
        with pytest.raises(records.RoomError, match="not started from this browser"):
            store.restore(target, forged, {"page": "evil"}, client="attacker")
        assert store.status(target) is None


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_a_lost_room_comes_back_to_its_presenter_only_and_restores_are_counted_once(
    backend, request, tmp_path
):
    server = RedisServer(tmp_path, persist=False).start() if backend == "redis" else None
    try:
        store = redis_rooms.RedisRooms(server.url) if server else memory_rooms.MemoryRooms()

        def lose() -> None:  # the rooms age out (the creation counts stay, as they do then)
            if server:
                import redis

                r = redis.Redis.from_url(server.url)
                r.delete(
                    *(k for k in r.scan_iter(redis_rooms.RedisRooms.PREFIX + "*")),
                    redis_rooms.RedisRooms.LIVE,
                )
            else:
                store._rooms.clear()

        room_id, secret = store.create("teacher")
        other_id, _ = store.create("student")
        lose()
        with pytest.raises(records.RoomError, match="not started from this browser"):  # signed for another id
            store.restore(other_id, secret, {"page": "evil"})
        assert store.restore(room_id, secret, {"page": "masks"}, version=3, client="teacher") == 3
        # a secret once signed for this id (the id re-issued after an earlier room aged out) does
        # not take it while her room lives
        key = store._signing_key() if server else store._key
        with pytest.raises(records.RoomError, match="only the presenter"):
            store.restore(room_id, signing.issue_secret(key, room_id), {"page": "evil"})
        assert store.snapshot(room_id).payload == {"page": "masks"}
        # her own room comes back however often it is lost: it is one room, counted once
        for _ in range(records.MAX_CREATES_PER_CLIENT + 1):
            lose()
            store.restore(room_id, secret, {"page": "masks"}, client="teacher")
        # but a restore is a room like any other: rooms she did not make here count, up to the limit
        for _ in range(records.MAX_CREATES_PER_CLIENT - 1):
            store.create("teacher")
        lose()
        with pytest.raises(records.RoomError, match=f"you started {records.MAX_CREATES_PER_CLIENT} rooms"):
            store.restore(other_id, signing.issue_secret(key, other_id), {"page": "masks"}, client="teacher")
        assert store.status(other_id) is None
    finally:
        if server:
            server.stop()


def test_replicas_share_the_signing_key_and_an_empty_redis_gets_it_back(tmp_path, monkeypatch):
    """Without ATTN_LAB_SECRET, the first replica makes the key in Redis and every other one reads
    it; a Redis that restarts empty gets it back, so presenters keep their rooms."""
    monkeypatch.delenv(signing.KEY_ENV, raising=False)
    server = RedisServer(tmp_path, persist=False).start()
    try:
        one, two = redis_rooms.RedisRooms(server.url), redis_rooms.RedisRooms(server.url)
        room_id, secret = one.create("teacher")
        assert two.issued(room_id, secret)
        server.stop()
        server.start()  # empty: rooms and key gone
        assert two.restore(room_id, secret, {"page": "masks"}, client="teacher") == 1
        three = redis_rooms.RedisRooms(server.url)  # a replica started after the restart
        assert three.issued(room_id, secret)
    finally:
        server.stop()


def test_the_operator_key_signs_for_every_replica(monkeypatch, request):
    monkeypatch.setenv(signing.KEY_ENV, "s" * 40)
    memory, shared = memory_rooms.MemoryRooms(), _redis(request)
    room_id, secret = memory.create()
    assert shared.issued(room_id, secret)  # same key, another store
    monkeypatch.setenv(signing.KEY_ENV, "short")
    with pytest.raises(records.RoomError, match=signing.KEY_ENV):
        memory_rooms.MemoryRooms()


# ------------------------------------------------------------------ fair pushes, views that fit


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_a_room_takes_a_new_view_at_most_every_half_second(backend, request):
    clock = Clock()
    kw = {"publish_every_s": 0.5}
    store = memory_rooms.MemoryRooms(clock=clock, **kw) if backend == "memory" else _redis(request, **kw)
    room_id, secret = store.create()
    assert store.publish(room_id, secret, {"values": {"L": 1}}) == 1
    t0 = time.monotonic()
    clock.now = 0.2
    with pytest.raises(records.RoomBusy):
        store.publish(room_id, secret, {"values": {"L": 2}})
    if backend == "redis" and time.monotonic() - t0 >= 0.5:
        pytest.fail("the second publish came too late to test the limit (a loaded machine?)")
    assert store.status(room_id).presenter_age_s < 0.5  # the refused view still checked in
    assert store.publish(room_id, secret, {"values": {"L": 1}}) == 1  # the same view is no new one
    assert store.snapshot(room_id).payload == {"values": {"L": 1}}
    clock.now = 0.6
    if backend == "redis":
        time.sleep(0.6)
    assert store.publish(room_id, secret, {"values": {"L": 2}}) == 2


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_a_store_reads_the_publish_interval_where_it_is_set(backend, request, monkeypatch):
    """One source: a store built without its own interval follows PUBLISH_EVERY_S as it stands when
    it publishes (this one was built while the fixture had it at 0), and a refusal names the
    interval that refused it, a store's own where it has one."""

    def build(**kw):
        return memory_rooms.MemoryRooms(clock=Clock(), **kw) if backend == "memory" else _redis(request, **kw)

    store = build()
    monkeypatch.setattr(records, "PUBLISH_EVERY_S", 30.0)  # far longer than this test takes
    room_id, secret = store.create()
    assert store.publish(room_id, secret, {"values": {"L": 1}}) == 1
    with pytest.raises(records.RoomBusy, match=r"at most every 30 s"):
        store.publish(room_id, secret, {"values": {"L": 2}})
    own = build(publish_every_s=20.0)
    room_id, secret = own.create()
    assert own.publish(room_id, secret, {"values": {"L": 1}}) == 1
    with pytest.raises(records.RoomBusy, match=r"at most every 20 s"):
        own.publish(room_id, secret, {"values": {"L": 2}})


def test_views_are_measured_on_their_utf8_bytes(store):
    """Three text areas at their 4,000-character cap of 4-byte characters fit (48,000 bytes of
    UTF-8; ASCII-escaped they would be 144,000 bytes); a view over the limit is refused with its size."""
    room_id, secret = store.create()
    text = "𝔸" * 4000
    view = {"page": "playground", "values": {"in_Q": text, "in_K": text, "in_V": text}}
    assert len(json.dumps(view).encode()) > records.MAX_PAYLOAD_BYTES  # the escaped form would not fit
    assert store.publish(room_id, secret, view) == 1
    assert store.snapshot(room_id).payload == view  # and it comes back intact
    over = {"values": {"a": "é" * (records.MAX_PAYLOAD_BYTES // 2)}}  # 2 bytes each
    with pytest.raises(records.ViewTooLarge, match=r"64\.0 KiB, more than the 64 KiB"):
        store.publish(room_id, secret, over)
    assert store.snapshot(room_id).payload == view


def test_an_operator_sets_how_many_rooms_one_address_may_start():
    """A department behind one NAT address may need more than the default three rooms in ten
    minutes: ATTN_LAB_ROOMS_PER_CLIENT raises it, within the store's MAX_ROOMS; nonsense is named."""
    assert records.creates_per_client({}) == records.MAX_CREATES_PER_CLIENT == 3
    assert records.creates_per_client({records.CREATES_ENV: " 12 "}) == 12
    for bad in ("0", "-1", "three", str(records.MAX_ROOMS + 1)):
        with pytest.raises(records.RoomError, match=records.CREATES_ENV):
            records.creates_per_client({records.CREATES_ENV: bad})


def test_the_operators_room_limit_holds_in_the_store(monkeypatch):
    monkeypatch.setenv(records.CREATES_ENV, "5")
    store = memory_rooms.MemoryRooms()
    for _ in range(5):
        store.create(client="10.0.0.1")
    with pytest.raises(records.RoomError, match="you started 5 rooms"):
        store.create(client="10.0.0.1")
    store.create(client="10.0.0.2")  # another address is not held back
