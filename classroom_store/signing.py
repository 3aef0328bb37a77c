"""Presenter secrets (no Streamlit): only the holder of a room's secret can publish. The server
issues it: a random nonce and the time issued, signed with HMAC-SHA-256 under the server's key
(ATTN_LAB_SECRET, which deploy/serve.sh makes and hands every replica; else one generated and kept
in Redis for every replica, or in this process's memory). Stores keep the secret's SHA-256. A room
the store lost (aged out, a Redis restart) comes back only to a secret the server signed for that
room id, and only while no other room holds the id.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from collections.abc import Mapping

from classroom_store.records import RoomError, not_presenter

ISSUED_TTL_S = 12 * 3600  # a presenter's secret restores its room for this long (the cookie's life)
KEY_ENV = "ATTN_LAB_SECRET"  # the key that signs presenter secrets (any string of 32+ characters)


def digest(secret: str) -> str:
    """Stores keep a hash of the secret, never the secret itself."""
    return hashlib.sha256(secret.encode()).hexdigest()


def env_key(env: Mapping[str, str] = os.environ) -> bytes | None:
    raw = env.get(KEY_ENV, "").strip()
    if raw and len(raw) < 32:
        raise RoomError(f"{KEY_ENV} must be at least 32 characters (deploy/serve.sh makes one)")
    return raw.encode() if raw else None


def _mac(key: bytes, room_id: str, issued: int, nonce: str) -> str:
    return hmac.new(key, f"{room_id}:{issued}:{nonce}".encode(), hashlib.sha256).hexdigest()[:32]


def issue_secret(key: bytes, room_id: str, now: float | None = None) -> str:
    """A presenter's secret for ``room_id``: ``<issue time, hex>-<nonce>-<HMAC>`` (hex and '-' only,
    so it travels in a cookie as it is)."""
    issued, nonce = int(time.time() if now is None else now), secrets.token_hex(12)
    return f"{issued:x}-{nonce}-{_mac(key, room_id, issued, nonce)}"


def signed_by(key: bytes, room_id: str, secret: object, now: float | None = None) -> bool:
    """Whether ``secret`` is one this server issued for ``room_id`` in the last ISSUED_TTL_S."""
    if not isinstance(secret, str) or len(secret) > 80 or secret.count("-") != 2:
        return False
    issued_hex, nonce, mac = secret.split("-")
    try:
        issued = int(issued_hex, 16)
    except ValueError:
        return False
    now = time.time() if now is None else now
    if not 0 <= now - issued <= ISSUED_TTL_S:
        return False
    return hmac.compare_digest(mac, _mac(key, room_id, issued, nonce))


def not_issued(room_id: str) -> RoomError:
    return RoomError(f"room {room_id!r} was not started from this browser")


def check_secret(stored_digest: str, secret: object) -> None:
    if not isinstance(secret, str) or not hmac.compare_digest(stored_digest, digest(secret)):
        raise not_presenter()


def presenter_digest(secret: object) -> str:
    """What a store compares to the room's: the digest of a secret (RoomError for a non-string)."""
    if not isinstance(secret, str):
        raise not_presenter()
    return digest(secret)
