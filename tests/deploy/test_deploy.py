"""deploy/: the nginx config template and the start/stop script behind `make serve`.

The rendered config is checked against the settings it was rendered from (every upstream, in
order; every path nginx writes under the run dir) and by nginx itself (`nginx -t`). The live test
starts 2 replicas + nginx and checks, from nginx's own access log (which names the replica that
served each request), that one client address always reaches one replica — its websocket
included — that distinct loopback addresses reach both, and that a killed replica's client is
served by the other. The oracle for "the page came through" is the same page fetched straight
from a replica.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness.ports import free_port_run

from classroom_store.records import RoomsUnavailable
from classroom_store.redis_rooms import RedisRooms

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "deploy" / "serve.sh"
NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/sbin")
NO_NGINX = "nginx is not installed (`make serve` installs Debian's nginx; `apt-get install nginx`)"


def wait_until_dead(pid: int, limit_s: float = 20.0) -> None:
    """Return once ``pid`` has exited (gone, or a zombie: either way its sockets are closed), or
    after ``limit_s``; the assertions that follow then say what went wrong. A closed port is not
    proof: on a loaded machine a connect can time out while the process still serves."""
    deadline = time.monotonic() + limit_s
    status = Path(f"/proc/{pid}/status")
    while time.monotonic() < deadline:
        try:
            if "\nState:\tZ" in status.read_text():
                return
        except OSError:  # gone
            return
        time.sleep(0.05)


def serve_sh(cmd: str, run_dir: Path, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("UPSTREAMS", "REPLICAS", "LISTEN")}
    full_env.update(RUN_DIR=str(run_dir), PYTHON=sys.executable, **env)
    return subprocess.run(
        [str(SCRIPT), cmd], env=full_env, capture_output=True, text=True, timeout=timeout, check=False
    )


def upstream_servers(conf: str) -> list[str]:
    block = re.search(r"upstream streamlit \{(.*?)\n    \}", conf, re.S)
    assert block, conf
    return re.findall(r"^\s*server (\S+) ", block.group(1), re.M)


def test_render_names_every_upstream_and_keeps_writes_in_the_run_dir(tmp_path):
    given = ["127.0.0.1:9001", "10.0.0.2:8501", "[::1]:8600"]
    res = serve_sh("render", tmp_path, UPSTREAMS=" ".join(given), LISTEN="0.0.0.0:8080")
    assert res.returncode == 0, res.stderr
    conf = res.stdout
    assert upstream_servers(conf) == given
    assert "listen 0.0.0.0:8080;" in conf
    # Sticky by the whole client address (ip_hash would use only 3 octets of an IPv4 address).
    assert re.search(r"^\s*hash \$remote_addr consistent;", conf, re.M)
    assert not re.search(r"^\s*ip_hash", conf, re.M)
    # Websocket upgrade: the Upgrade header forwarded and Connection set from it, over HTTP/1.1.
    assert "proxy_set_header Upgrade $http_upgrade;" in conf
    assert "proxy_set_header Connection $connection_upgrade;" in conf
    assert "proxy_http_version 1.1;" in conf
    # Passive health: every server is taken out after a failure.
    block = re.search(r"upstream streamlit \{(.*?)\n    \}", conf, re.S).group(1)
    assert block.count("max_fails=") == block.count("fail_timeout=") == len(given)
    # Everything nginx writes is under the run dir (absolute), so no root is needed to run it.
    writes = re.findall(r"^\s*(?:pid|error_log|access_log|\w+_temp_path) (\S+?);?(?:\s|$)", conf, re.M)
    assert len(writes) == 8
    assert all(w.startswith(str(tmp_path.resolve()) + "/") for w in writes), writes


def test_render_defaults_to_the_local_replicas(tmp_path):
    res = serve_sh("render", tmp_path, REPLICAS="3", BASE_PORT="9100")
    assert res.returncode == 0, res.stderr
    assert upstream_servers(res.stdout) == ["127.0.0.1:9100", "127.0.0.1:9101", "127.0.0.1:9102"]


@pytest.mark.parametrize(
    "env",
    [
        {"UPSTREAMS": "127.0.0.1:9001; include /etc/shadow"},  # pasted into the config otherwise
        {"UPSTREAMS": "127.0.0.1"},  # no port
        {"REPLICAS": "0"},  # nothing to proxy to
        {"LISTEN": "80; daemon off"},
        {"REPLICAS": "two"},
    ],
)
def test_render_refuses_bad_settings_before_writing_anything(tmp_path, env):
    res = serve_sh("render", tmp_path, **env)
    assert res.returncode != 0
    assert res.stdout == ""
    assert "serve.sh:" in res.stderr


@pytest.mark.skipif(NGINX is None, reason=NO_NGINX)
def test_rendered_config_passes_nginx_t(tmp_path):
    res = serve_sh("render", tmp_path, UPSTREAMS="127.0.0.1:9001 127.0.0.1:9002", LISTEN="127.0.0.1:9000")
    assert res.returncode == 0, res.stderr
    conf = tmp_path / "nginx.conf"
    conf.write_text(res.stdout)
    (tmp_path / "tmp").mkdir()
    check = subprocess.run(
        [NGINX, "-t", "-p", f"{tmp_path}/", "-e", str(tmp_path / "err.log"), "-c", str(conf)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    assert "test is successful" in check.stderr


# ------------------------------------------------------------------------------------------
# The live stack
# ------------------------------------------------------------------------------------------


def get(port: int, path: str, source: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def access_log(run_dir: Path) -> list[tuple[str, str, str, str]]:
    """(client address, upstream address(es), status, request) per line of nginx's access log."""
    lines = (run_dir / "nginx-access.log").read_text().splitlines()
    return [re.match(r'(\S+) (.+?) (\d{3}) "([^"]*)"', line).groups() for line in lines]


async def open_websocket(port: int, source: str) -> str:
    """Handshake through the proxy as a browser tab does, then load Home over it; returns the
    negotiated subprotocol. A Streamlit protobuf both ways proves the upgrade really proxies."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.asyncio.client import connect

    async with connect(
        f"ws://127.0.0.1:{port}/_stcore/stream",
        subprotocols=["streamlit"],
        origin=f"http://127.0.0.1:{port}",
        local_addr=(source, 0),
        max_size=2**26,
    ) as ws:
        msg = BackMsg()
        msg.rerun_script.page_name = "home"
        await ws.send(msg.SerializeToString())
        kinds = []
        async with asyncio.timeout(60):
            while "script_finished" not in kinds:
                fwd = ForwardMsg()
                fwd.ParseFromString(await ws.recv())
                kinds.append(fwd.WhichOneof("type"))
        assert "new_session" in kinds
        return ws.subprotocol


@pytest.mark.slow
@pytest.mark.timeout(150)
@pytest.mark.skipif(NGINX is None, reason=NO_NGINX)
def test_two_replicas_behind_nginx_sticky_websocket_and_failover(tmp_path):
    base = free_port_run(4)
    proxy, replicas, redis_port = base + 2, [base, base + 1], base + 3
    env = {
        "REPLICAS": "2",
        "BASE_PORT": str(base),
        "LISTEN": f"127.0.0.1:{proxy}",
        "REDIS_PORT": str(redis_port),
    }
    try:
        started = serve_sh("start", tmp_path, timeout=130, **env)
        assert started.returncode == 0, started.stderr + started.stdout
        pids = {p: int((tmp_path / f"replica-{p}.pid").read_text()) for p in replicas}
        for p, pid in pids.items():  # the pid file names the streamlit process itself
            assert f"--server.port\0{p}" in Path(f"/proc/{pid}/cmdline").read_text()
            # every replica keeps classroom rooms in the Redis started beside it
            assert (
                f"ATTN_LAB_ROOMS=redis://127.0.0.1:{redis_port}/0" in Path(f"/proc/{pid}/environ").read_text()
            )
        rooms = RedisRooms(f"redis://127.0.0.1:{redis_port}/0")
        room_id, secret = rooms.create()
        assert rooms.publish(room_id, secret, {"page": "masks"}) == 1
        # The Redis that serve.sh started keeps rooms through a crash: kill it, start it again on
        # its own directory, and the room is there with its secret.
        import redis

        config = redis.Redis(port=redis_port, decode_responses=True).config_get("*")
        assert config["appendonly"] == "yes" and Path(config["dir"]) == tmp_path
        redis_pid = int((tmp_path / "redis.pid").read_text())
        argv = [
            "redis-server",
            "--port",
            str(redis_port),
            "--bind",
            "127.0.0.1",
            "--appendonly",
            "yes",
            "--save",
            "",
            "--dir",
            str(tmp_path),
        ]
        time.sleep(1.2)  # appendfsync everysec: what a crash may lose is the last second
        os.kill(redis_pid, signal.SIGKILL)
        with pytest.raises(RoomsUnavailable):
            rooms.status(room_id)
        again = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL, start_new_session=True)
        (tmp_path / "redis.pid").write_text(str(again.pid))  # serve.sh stop ends it
        for _ in range(100):
            with contextlib.suppress(RoomsUnavailable):
                if rooms.status(room_id) is not None:
                    break
            time.sleep(0.1)
        assert rooms.snapshot(room_id).payload == {"page": "masks"}
        assert rooms.publish(room_id, secret, {"page": "gradients"}) == 2

        status, body = get(proxy, "/", "127.0.0.1")
        assert status == 200 and body == get(replicas[0], "/", "127.0.0.1")[1]
        assert get(proxy, "/_stcore/health", "127.0.0.1") == (200, b"ok")

        sources = [f"127.0.0.{i}" for i in range(2, 18)]
        for _ in range(2):
            for src in sources:
                assert get(proxy, "/_stcore/health", src)[0] == 200
        # In a thread of its own: Playwright's sync API (the browser tests' session fixture) keeps
        # an event loop running on this thread, and asyncio.run refuses to start inside one.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            protocol = pool.submit(asyncio.run, open_websocket(proxy, "127.0.0.5")).result(timeout=30)
        assert protocol == "streamlit"
        time.sleep(0.2)  # nginx logs a websocket when it closes

        served_by: dict[str, set[str]] = {}
        for client, upstream, status, request in access_log(tmp_path):
            served_by.setdefault(client, set()).add(upstream)
            if request.startswith("GET /_stcore/stream"):
                assert (client, status) == ("127.0.0.5", "101")
        assert all(len(served_by[src]) == 1 for src in sources), served_by  # sticky
        assert {u for src in sources for u in served_by[src]} == {f"127.0.0.1:{p}" for p in replicas}

        # Kill the replica that serves 127.0.0.5: its next request is served by the other one.
        (victim,) = served_by["127.0.0.5"]
        victim_port = int(victim.rsplit(":", 1)[1])

        def health_lines() -> list:
            return [e for e in access_log(tmp_path) if e[0] == "127.0.0.5" and "/_stcore/health" in e[3]]

        before = len(health_lines())
        os.kill(pids[victim_port], signal.SIGKILL)
        wait_until_dead(pids[victim_port])  # a loaded machine may take a while to tear the process down
        assert get(proxy, "/_stcore/health", "127.0.0.5") == (200, b"ok")
        # The health check's own line, once nginx has written it (the websocket opened above is
        # logged when it closes, which the kill may make happen after the health check).
        deadline = time.monotonic() + 5
        while len(health := health_lines()) == before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(health) > before
        assert health[-1][1].split(", ")[-1] != victim
        status = serve_sh("status", tmp_path).stdout.splitlines()
        assert f"replica-{victim_port} pid {pids[victim_port]} dead" in status
        assert f"http://{victim}/_stcore/health no answer" in status
        assert f"http://127.0.0.1:{proxy}/_stcore/health ok" in status
    finally:
        stopped = serve_sh("stop", tmp_path, timeout=60)
    assert stopped.returncode == 0, stopped.stderr
    assert not list(tmp_path.glob("*.pid"))
    for p in [*replicas, proxy, redis_port]:
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", p)) != 0, f"port {p} still answers after stop"


@pytest.mark.slow
@pytest.mark.timeout(150)
@pytest.mark.skipif(NGINX is None, reason=NO_NGINX)
def test_a_failed_start_leaves_nothing_running(tmp_path):
    """nginx cannot bind its port (taken): start fails, and the replica it had started is stopped."""
    base = free_port_run(2)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", base + 1))
        taken.listen()
        res = serve_sh(
            "start", tmp_path, timeout=130, REPLICAS="1", BASE_PORT=str(base), LISTEN=f"127.0.0.1:{base + 1}"
        )
    assert res.returncode != 0
    assert "Address already in use" in res.stderr
    assert not list(tmp_path.glob("*.pid"))
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", base)) != 0, "the replica still answers after a failed start"
