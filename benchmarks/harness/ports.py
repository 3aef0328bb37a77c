"""Free loopback ports: one, or a run of consecutive ones (for deploy/serve.sh's BASE_PORT)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port free right now (the kernel picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_run(n: int) -> int:
    """A port p such that p, p + 1, …, p + n − 1 are all free on loopback right now."""
    for _ in range(50):
        base = free_port()
        if base + n > 65535:
            continue
        socks = []
        try:
            for port in range(base, base + n):
                socks.append(socket.socket())
                socks[-1].bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"found no {n} consecutive free loopback ports")
