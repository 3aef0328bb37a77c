#!/usr/bin/env bash
# Start or stop N Streamlit replicas with nginx in front of them (sticky by client address,
# websocket upgrade, passive health checks). Used by `make serve` / `make serve-stop` and by
# benchmarks/serve_load.py --replicas N.
#
#   deploy/serve.sh start    start REPLICAS replicas, wait for their /_stcore/health, start nginx
#   deploy/serve.sh stop     stop nginx and every replica this run dir started
#   deploy/serve.sh status   which pids this run dir started are alive; /_stcore/health of each upstream and nginx
#   deploy/serve.sh render   print the nginx config that `start` would use
#
# Settings (environment variables; the same files serve one machine or several):
#   REPLICAS=2               Streamlit processes to start here, on consecutive ports from BASE_PORT
#                            (0 on a machine that only runs the proxy)
#   BASE_PORT=8511           port of the first replica
#   REPLICA_ADDRESS=127.0.0.1  address the replicas listen on (0.0.0.0 on a machine whose
#                            replicas another machine's nginx reaches)
#   UPSTREAMS="h:p h:p"      the replicas nginx balances over; default: the ones started here
#   LISTEN=127.0.0.1:8500    nginx's address (0.0.0.0:8500 to serve a classroom's network)
#   NGINX=1                  0: start replicas only (a machine behind another one's proxy)
#   RUN_DIR=.run/serve       pids, logs, the rendered config and nginx's temp files
#   PYTHON=.venv/bin/python  the interpreter with the app installed
#   HEALTH_TIMEOUT=120       seconds to wait for every upstream's /_stcore/health
#   ROOMS_URL=redis://h:p/0  the Redis that holds classroom rooms for every replica (classroom_store/rooms.py);
#                            default: a redis-server started here on REDIS_PORT (with REPLICAS > 0)
#   REDIS_PORT=6391          port of that local Redis (loopback only, no persistence)
#   ATTN_LAB_REPLICAS=N      replicas serving the rooms; a room seats 150 per replica (default: the
#                            upstreams nginx balances over); ATTN_LAB_ROOM_SEATS=N sets seats per room
#   TRUSTED_PROXIES=127.0.0.1  the proxy addresses whose X-Forwarded-For the replicas believe (the
#                            nginx in front; "" with NGINX=0 and no proxy: the socket's peer is the client)
#   SECRET_FILE=$RUN_DIR/secret  the key that signs presenter cookies, shared by every replica (made
#                            here, mode 600, when missing; copy it to every backend of a multi-machine setup)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPLICAS="${REPLICAS:-2}"
BASE_PORT="${BASE_PORT:-8511}"
REPLICA_ADDRESS="${REPLICA_ADDRESS:-127.0.0.1}"
LISTEN="${LISTEN:-127.0.0.1:8500}"
NGINX="${NGINX:-1}"
RUN_DIR="${RUN_DIR:-$ROOT/.run/serve}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
HEALTH_TIMEOUT="${HEALTH_TIMEOUT:-120}"
REDIS_PORT="${REDIS_PORT:-6391}"
TRUSTED_PROXIES="${TRUSTED_PROXIES-127.0.0.1}"
ROOMS_URL="${ROOMS_URL:-}"
[[ "$PYTHON" == */* && "$PYTHON" != /* ]] && PYTHON="$PWD/$PYTHON"  # the replicas start in $ROOT
NGINX_BIN="${NGINX_BIN:-$(PATH="$PATH:/usr/sbin:/sbin" command -v nginx || echo nginx)}"

die() { echo "serve.sh: $*" >&2; exit 1; }

[[ "$REPLICAS" =~ ^[0-9]+$ ]] && ((REPLICAS <= 32)) || die "REPLICAS must be 0..32, got '$REPLICAS'"
[[ "$BASE_PORT" =~ ^[0-9]+$ ]] && ((BASE_PORT >= 1024 && BASE_PORT + REPLICAS <= 65536)) ||
    die "BASE_PORT must be a port from 1024 up, got '$BASE_PORT'"
[[ "$HEALTH_TIMEOUT" =~ ^[0-9]+$ ]] || die "HEALTH_TIMEOUT must be whole seconds"
mkdir -p "$RUN_DIR"
RUN_DIR="$(cd "$RUN_DIR" && pwd)"  # nginx resolves relative paths against its prefix, not here

# host:port or [ipv6]:port, nothing else: the value is pasted into nginx's config.
ADDR_RE='^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$'

upstreams() {
    if [[ -n "${UPSTREAMS:-}" ]]; then
        echo "$UPSTREAMS"
    else
        local host="$REPLICA_ADDRESS" i out=""
        [[ "$host" == 0.0.0.0 ]] && host=127.0.0.1
        for ((i = 0; i < REPLICAS; i++)); do out+="$host:$((BASE_PORT + i)) "; done
        echo "$out"
    fi
}

render() {
    local addr servers="" user_directive=""
    for addr in $(upstreams); do
        [[ "$addr" =~ $ADDR_RE ]] || die "bad upstream address '$addr' (want host:port)"
        servers+="        server $addr max_fails=1 fail_timeout=10s;"$'\n'
    done
    [[ -n "$servers" ]] || die "no upstreams: set REPLICAS > 0 or UPSTREAMS=\"host:port ...\""
    [[ "$LISTEN" =~ ^([0-9.]+:)?[0-9]{1,5}$|^\[[0-9A-Fa-f:.]+\]:[0-9]{1,5}$ ]] ||
        die "bad LISTEN '$LISTEN' (want port, ipv4:port or [ipv6]:port)"
    # Started by root, nginx would hand its workers to "nobody"; keep them the invoking user.
    [[ "$(id -u)" == 0 ]] && user_directive="user $(id -un) $(id -gn);"
    local line
    while IFS= read -r line || [[ -n "$line" ]]; do
        if [[ "$line" == "@UPSTREAM_SERVERS@" ]]; then
            printf '%s' "$servers"
            continue
        fi
        line="${line//@RUN_DIR@/$RUN_DIR}"
        line="${line//@LISTEN@/$LISTEN}"
        line="${line//@USER_DIRECTIVE@/$user_directive}"
        printf '%s\n' "$line"
    done <"$ROOT/deploy/nginx.conf.in"
}

running() {  # pid $1 exists and is not a zombie waiting for its reaper
    local state
    state="$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)"
    [[ -n "$state" && "$state" != Z ]]
}

alive() { [[ -f "$1" ]] && running "$(cat "$1")"; }

healthy() {  # exit 0 when http://$1/_stcore/health answers 200
    "$PYTHON" -c 'import sys, urllib.request
with urllib.request.urlopen(f"http://{sys.argv[1]}/_stcore/health", timeout=2) as r:
    sys.exit(r.status != 200)' "$1" 2>/dev/null
}

wait_healthy() {
    local addr deadline=$((SECONDS + HEALTH_TIMEOUT)) pending
    while :; do
        pending=""
        for addr in $(upstreams); do healthy "$addr" || pending+="$addr "; done
        [[ -z "$pending" ]] && return 0
        for f in "$RUN_DIR"/replica-*.pid; do
            [[ -e "$f" ]] || continue
            alive "$f" || die "replica $(basename "$f" .pid) exited; its log: $RUN_DIR/$(basename "$f" .pid).log"
        done
        ((SECONDS < deadline)) || die "no /_stcore/health answer in ${HEALTH_TIMEOUT} s from: $pending"
        sleep 0.5
    done
}

start() {
    local i port f
    for f in "$RUN_DIR"/*.pid; do
        [[ -e "$f" ]] && alive "$f" && die "already running ($f); run 'deploy/serve.sh stop' first"
    done
    rm -f "$RUN_DIR"/*.pid
    if ((NGINX)); then
        command -v "$NGINX_BIN" >/dev/null || die "nginx not found: make serve installs Debian's nginx"
        render >"$RUN_DIR/nginx.conf"  # fails early on bad settings, before anything starts
    fi
    trap 'stop >/dev/null 2>&1' EXIT  # a failed start leaves nothing running
    if ((REPLICAS > 0)) && [[ -z "$ROOMS_URL" ]]; then
        # Rooms must be shared: a presenter and their students may land on different replicas.
        [[ "$REDIS_PORT" =~ ^[0-9]+$ ]] || die "REDIS_PORT must be a port, got '$REDIS_PORT'"
        command -v redis-server >/dev/null || die "redis-server not found: make serve installs Debian's redis-server"
        # Append-only file on: a Redis that crashes and is started again keeps every room.
        (cd "$RUN_DIR" && exec setsid redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" \
            --appendonly yes --appendfsync everysec --dir "$RUN_DIR") >"$RUN_DIR/redis.log" 2>&1 </dev/null &
        echo $! >"$RUN_DIR/redis.pid"
        local n=0
        until redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; do
            alive "$RUN_DIR/redis.pid" || die "redis-server exited (port $REDIS_PORT taken?); its log: $RUN_DIR/redis.log"
            ((n++ < 100)) || die "redis-server did not answer on port $REDIS_PORT in 10 s"
            sleep 0.1
        done
        ROOMS_URL="redis://127.0.0.1:$REDIS_PORT/0"
    fi
    export ATTN_LAB_ROOMS="$ROOMS_URL"
    export ATTN_LAB_REPLICAS="${ATTN_LAB_REPLICAS:-$(wc -w <<<"$(upstreams)")}"
    export ATTN_LAB_TRUSTED_PROXIES="$TRUSTED_PROXIES"
    # Streamlit's server (uvicorn) rewrites the peer from X-Forwarded-For for the hosts named here
    # (127.0.0.1 and ::1 when unset): the same proxies as the app's own rule, and no others.
    export FORWARDED_ALLOW_IPS="$(tr -s ' ' ',' <<<"$TRUSTED_PROXIES")"
    local secret_file="${SECRET_FILE:-$RUN_DIR/secret}"
    if [[ ! -s "$secret_file" ]]; then
        (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$secret_file")
    fi
    ATTN_LAB_SECRET="$(cat "$secret_file")"
    export ATTN_LAB_SECRET
    for ((i = 0; i < REPLICAS; i++)); do
        port=$((BASE_PORT + i))
        # The flags of `make run`; .streamlit/config.toml (read from the repo root) does the rest.
        (cd "$ROOT" && exec setsid "$PYTHON" -m lab_ui.launch run app.py --server.headless true \
            --server.address "$REPLICA_ADDRESS" --server.port "$port") \
            >"$RUN_DIR/replica-$port.log" 2>&1 </dev/null &
        echo $! >"$RUN_DIR/replica-$port.pid"
    done
    wait_healthy
    if ((NGINX)); then
        mkdir -p "$RUN_DIR/tmp"
        "$NGINX_BIN" -p "$RUN_DIR/" -e "$RUN_DIR/nginx-error.log" -c "$RUN_DIR/nginx.conf"
        # nginx checks its config and binds its port before it forks into the background (a failure
        # exits non-zero here); the background master then writes the pid file that stop reads.
        i=0
        while [[ ! -s "$RUN_DIR/nginx.pid" ]] && ((i++ < 50)); do sleep 0.1; done
        alive "$RUN_DIR/nginx.pid" || die "nginx did not start; see $RUN_DIR/nginx-error.log"
        echo "serving http://$LISTEN through nginx to: $(upstreams)"
    else
        echo "replicas up: $(upstreams)"
    fi
    trap - EXIT
}

stop() {
    local f pid n
    for f in "$RUN_DIR"/nginx.pid "$RUN_DIR"/replica-*.pid "$RUN_DIR"/redis.pid; do
        [[ -e "$f" ]] || continue
        pid="$(cat "$f")"
        if running "$pid"; then
            kill -TERM "$pid" 2>/dev/null || true
            n=0
            while running "$pid" && ((n++ < 100)); do sleep 0.1; done  # up to 10 s
            kill -KILL "$pid" 2>/dev/null || true
        fi
        rm -f "$f"
    done
    echo "stopped (run dir $RUN_DIR)"
}

status() {
    local f addr started=0
    for f in "$RUN_DIR"/nginx.pid "$RUN_DIR"/replica-*.pid "$RUN_DIR"/redis.pid; do
        [[ -e "$f" ]] || continue
        started=1
        echo "$(basename "$f" .pid) pid $(cat "$f") $(alive "$f" && echo alive || echo dead)"
    done
    ((started)) || { echo "nothing started (run dir $RUN_DIR)"; return 0; }
    [[ -f "$RUN_DIR/nginx.pid" && -f "$RUN_DIR/nginx.conf" ]] || return 0
    # /_stcore/health of every upstream and of the proxy, as the running config names them.
    for addr in $(sed -n 's/^ *server \([^ ]*\) .*/\1/p; s/^ *listen \([^;]*\);/\1/p' "$RUN_DIR/nginx.conf"); do
        [[ "$addr" == *:* ]] || addr="127.0.0.1:$addr"
        echo "http://${addr/0.0.0.0/127.0.0.1}/_stcore/health $(healthy "${addr/0.0.0.0/127.0.0.1}" && echo ok || echo 'no answer')"
    done
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
render) render ;;
*) die "usage: deploy/serve.sh start|stop|status|render" ;;
esac
