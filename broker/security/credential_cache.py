"""Remembers which username/password pairs were verified, so a request costs no key derivation.

Verifying a password derives a key (PBKDF2, milliseconds of CPU); HTTP basic auth sends the
password with every request. The cache keeps, per username, the credential the password was
verified against and an HMAC of the password under a key drawn at random for this cache:
never the password, and nothing that outlives the process or can be checked offline.

Invariants:
- A hit needs the same password and the same credential (identical or equal): a user whose
  credential was replaced or deleted misses, so a changed password takes effect at once.
- Only a successful full verification is remembered; a different password is unknown
  (None), never "wrong", so the caller verifies it fully and a wrong one is never cached.
- At most ``max_entries`` users are kept; the least recently verified is dropped first.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import OrderedDict
from typing import Literal

PROCESS_KEY_BYTES = 32


class CredentialCache:
    __slots__ = ("_entries", "_key", "_max_entries")

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError(f"a credential cache holds at least one entry, not {max_entries}")
        self._max_entries = max_entries
        self._key = secrets.token_bytes(PROCESS_KEY_BYTES)
        self._entries: OrderedDict[str, tuple[object, bytes]] = OrderedDict()

    def verified(self, username: str, password: str, credential: object) -> Literal[True] | None:
        """True if ``password`` was verified for ``username`` against this ``credential``; None if unknown.

        None asks the caller to verify fully and, on success, to ``remember``. An entry kept
        for a credential that is no longer the user's is dropped.
        """
        entry = self._entries.get(username)
        if entry is None:
            return None
        verified_against, digest = entry
        if verified_against is not credential and verified_against != credential:
            del self._entries[username]
            return None
        if not hmac.compare_digest(digest, self._digest(password)):
            return None
        self._entries.move_to_end(username)
        return True

    def remember(self, username: str, password: str, credential: object) -> None:
        """Records that ``password`` verified for ``username`` against ``credential`` (call only on success)."""
        self._entries[username] = (credential, self._digest(password))
        self._entries.move_to_end(username)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def forget_all(self) -> None:
        """Drops every entry: called when users change, so no stale verification survives a reload."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def _digest(self, password: str) -> bytes:
        return hmac.new(self._key, password.encode(), hashlib.sha256).digest()
