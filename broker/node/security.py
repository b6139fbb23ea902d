"""The security state of one broker: users, ACLs and quotas from the store, and the decisions on them.

A thin driver around the pure pieces of ``broker.security``: it follows the store's
``/security/`` keys (``SecurityView``; a change made on any broker or offline reaches
this one within the store's watch latency), rebuilds the ``Authorizer`` when the ACLs
change, forgets remembered passwords when the users change, and hands the clock and
the TLS peer certificate to the ``Authenticator``. It keeps the byte-rate meters of the
principals with a quota (``quotas``), and drops a meter when its quota is removed.

With ``authentication = "none"`` nothing is authorized: every decision allows, and
only the broker-only routes stay closed (the middleware checks those by principal).

Users, ACLs and quotas are written through ``records`` (one ``SecurityStore``), then
``catch_up`` waits until this broker's view holds the write, so the writer's next
request is decided on it.
"""

from __future__ import annotations

import asyncio

from broker.clock import monotonic_ms
from broker.cluster.security_keys import PREFIX
from broker.cluster.security_store import SecurityStore
from broker.cluster.security_view import SecurityView
from broker.cluster.store import MetadataStore
from broker.security.acl import AclOperation, Resource
from broker.security.authenticator import Authenticator
from broker.security.authorizer import Authorizer, Decision
from broker.security.credential_cache import CredentialCache
from broker.security.login_limiter import LoginLimiter
from broker.security.principal import Principal
from broker.security.quota import QuotaMeters
from broker.tls import peer_common_name
from config.security import SecuritySettings

AUTHORIZATION_OFF = Decision(True, "authentication is off")


class NodeSecurity:
    def __init__(self, settings: SecuritySettings, store: MetadataStore) -> None:
        self.settings = settings
        self.store = store
        self.records = SecurityStore(store)
        """The users, ACLs and quotas as stored, which the security routes write (and ``catch_up`` then reads)."""
        self.view = SecurityView(store, on_change=self._changed)
        self._cache = CredentialCache(settings.credential_cache_entries)
        self._authenticator = Authenticator(
            settings.authentication, self._cache, LoginLimiter(settings.failed_logins_per_minute)
        )
        self._authorizer: Authorizer | None = None
        self._users: object = None
        self.quotas = QuotaMeters(
            settings.quota_window_size_ms, settings.quota_window_num, settings.quota_max_throttle_ms
        )

    @property
    def authorizing(self) -> bool:
        return self.settings.authorizing

    async def start(self) -> None:
        await self.view.start()

    async def close(self) -> None:
        await self.view.close()

    async def catch_up(self) -> None:
        """Return once this broker applies every security change the store held when called.

        A route that changed a user, an ACL or a quota waits for this before it answers,
        so the caller's next request to this broker meets the change (other brokers
        follow within their watch latency).
        """
        _, revision = await self.store.list(PREFIX)
        while self.view.snapshot.revision < revision:
            await self.view.wait_changed()

    def _changed(self) -> None:
        snapshot = self.view.snapshot
        self._authorizer = None
        self.quotas.retain(snapshot.quotas)
        if snapshot.users != self._users:
            self._users = snapshot.users
            self._cache.forget_all()

    def authenticate(self, authorization: str | None, transport: asyncio.BaseTransport | None, source: str):
        """The request's principal, None without credentials; raises on bad ones (see ``Authenticator``).

        The peer certificate is read only under mTLS: every produce and fetch passes here.
        """
        snapshot = self.view.snapshot
        peer_name = None
        if self.settings.authentication == "mtls" and transport is not None:
            peer_name = peer_common_name(transport.get_extra_info("peercert"))
        return self._authenticator.authenticate(
            authorization,
            peer_name,
            source,
            snapshot.users,
            snapshot.broker_secret,
            self.now_ms(),
        )

    def now_ms(self) -> int:
        """The clock of the quota meters and the login limiter: monotonic, so a clock step changes no rate."""
        return monotonic_ms()

    def decide(self, principal: Principal, host: str, operation: AclOperation, resource: Resource) -> Decision:
        if not self.authorizing:
            return AUTHORIZATION_OFF
        return self._current_authorizer().authorize(principal, host, operation, resource)

    def allows_any(self, principal: Principal, host: str, operation: AclOperation, resource_type) -> bool:
        if not self.authorizing:
            return True
        return self._current_authorizer().allows_any(principal, host, operation, resource_type)

    def _current_authorizer(self) -> Authorizer:
        if self._authorizer is None:
            self._authorizer = Authorizer(
                self.view.snapshot.acls,
                super_users=frozenset(self.settings.super_users),
                allow_if_no_acl=self.settings.allow_if_no_acl,
            )
        return self._authorizer
