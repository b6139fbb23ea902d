"""Broker membership: ``/brokers/<id>`` bound to a lease that this broker keeps alive.

A broker is alive exactly while its registration key exists. The key is bound to a
lease of ``session_timeout_ms``, renewed every ``heartbeat_interval_ms``; when the
process dies or pauses longer than the session timeout, the store deletes the key
and the controller moves the broker's leaderships (Kafka's broker session).

* ``broker_epoch`` is the revision of the registration write (Kafka's broker epoch):
  a re-registration gets a larger one, so the controller can tell incarnations apart.
  A value cannot hold the revision of its own write, so the stored value carries 0
  and readers fill it in from the key's ``mod_revision`` (``registration_from``).
* Registration is create-only: if ``/brokers/<id>`` exists it may be this broker's
  previous incarnation (killed, lease not yet expired), so ``register`` waits up to
  ``session_timeout_ms`` + ``takeover_margin_ms`` for it to vanish. If it is still
  there, a live broker holds the id and ``DuplicateBrokerId`` is raised.
* A registration written from the same data directory (``directory_id``) is this
  broker's own previous incarnation — the data directory lock proves it is gone — and
  is replaced at once, so a restart after a crash does not wait out the session.
* If the lease is lost anyway (the process was paused too long), the broker
  re-registers with a new lease and a new broker epoch; listeners of
  ``wait_lease_lost`` (the controller) stop acting on the old lease first.
* The registration's own key is watched too: once the live-broker view has passed the
  registration's revision without it (deleted, or written by another), the broker takes
  its lease as lost, whatever keep-alives answer, and registers again. On three hosts,
  after a cut-off etcd member rejoined and forced elections, etcd 3.4 expired a broker's
  lease while still answering its keep-alives: the broker stayed up, unregistered, and
  refused every follower's fetch for ever.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from functools import partial

import structlog

from broker.cluster.prefix_view import PrefixView, retry_unavailable
from broker.cluster.records import BROKERS_PREFIX, BrokerRegistration, broker_key
from broker.cluster.store import (
    CompactedError,
    KeyValue,
    Lease,
    LeaseNotFoundError,
    MetadataStore,
    StoreUnavailableError,
    keep_lease_alive,
)

log = structlog.get_logger(__name__)

DEFAULT_TAKEOVER_MARGIN_MS = 1000


class DuplicateBrokerId(Exception):
    """Another live broker is registered under this broker's id."""


def registration_from(key_value: KeyValue) -> BrokerRegistration:
    """The registration stored in ``key_value`` with its ``broker_epoch`` (the key's revision)."""
    registration = BrokerRegistration.model_validate_json(key_value.value)
    return registration.model_copy(update={"broker_epoch": key_value.mod_revision})


class BrokerMembership:
    """This broker's registration, its lease keep-alive, and the live broker set."""

    def __init__(
        self,
        store: MetadataStore,
        registration: BrokerRegistration,
        session_timeout_ms: int,
        heartbeat_interval_ms: int,
        takeover_margin_ms: int = DEFAULT_TAKEOVER_MARGIN_MS,
    ) -> None:
        if heartbeat_interval_ms >= session_timeout_ms:
            raise ValueError(
                f"heartbeat_interval_ms ({heartbeat_interval_ms}) must be less than "
                f"session_timeout_ms ({session_timeout_ms})"
            )
        self.store = store
        self.registration = registration.model_copy(update={"broker_epoch": 0})
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.takeover_margin_ms = takeover_margin_ms
        self.lease: Lease | None = None
        self.broker_epoch = -1
        self._lease_changed = asyncio.Event()
        self._registered = asyncio.Event()
        self._brokers = PrefixView(store, BROKERS_PREFIX, on_change=self._on_view_change)
        self._live: dict[int, BrokerRegistration] | None = None
        """The view's registrations parsed, until its next change (``live_brokers``)."""
        self._registration_gone = asyncio.Event()
        """Set when the view shows this broker's registration gone (``_check_own_registration``)."""
        self._heartbeat_task: asyncio.Task[None] | None = None
        self.failure: DuplicateBrokerId | None = None
        self._key = broker_key(registration.broker_id)
        self._log = log.bind(broker_id=registration.broker_id)

    @property
    def broker_id(self) -> int:
        return self.registration.broker_id

    async def register(self) -> BrokerRegistration:
        """Register (waiting out a previous incarnation), start the keep-alive and the
        live-broker view; return the registration with its broker epoch."""
        await self._register_once()
        await self._brokers.start()
        self._heartbeat_task = asyncio.get_running_loop().create_task(
            self._heartbeat_forever(), name=f"broker-heartbeat {self.broker_id}"
        )
        return self.registration.model_copy(update={"broker_epoch": self.broker_epoch})

    async def wait_registered(self) -> Lease:
        """The current lease, waiting while a re-registration is under way. Raises
        ``DuplicateBrokerId`` if a re-registration found the id taken."""
        while self.lease is None:
            if self.failure is not None:
                raise self.failure
            await self._registered.wait()
        return self.lease

    async def wait_lease_lost(self, lease: Lease) -> None:
        """Return once ``lease`` is no longer this broker's lease (lost or revoked)."""
        while self.lease is not None and self.lease.id == lease.id:
            changed = self._lease_changed
            await changed.wait()

    def live_brokers(self) -> Mapping[int, BrokerRegistration]:
        """Every registered broker by id, as of the last change the watch delivered.

        Parsed once per change, not per call: a leader asks on every follower fetch
        (the follower's broker epoch), and parsing every registration's JSON there was
        8.9 % of a leader's GIL samples (py-spy) under lone acks=all writes.
        """
        if self._live is None:
            registrations = (registration_from(kv) for kv in self._brokers.snapshot().values())
            self._live = {registration.broker_id: registration for registration in registrations}
        return self._live

    def _on_view_change(self) -> None:
        self._live = None
        self._check_own_registration()

    async def deregister(self) -> None:
        """Leave the cluster now: stop renewing and revoke the lease, which deletes
        ``/brokers/<id>`` (and ``/controller`` if this broker held it).

        The revoke is tried for one session timeout at most: renewals have stopped, so by
        then the lease has expired on its own. A broker stopped while cut off from the store
        used to retry the revoke until the link came back, and never exited.
        """
        lease = self.lease
        await self._stop_tasks()
        self._set_lease(None)
        if lease is None:
            return
        try:
            async with asyncio.timeout(self.session_timeout_ms / 1000):
                await retry_unavailable(lambda: self.store.revoke(lease.id), "revoke broker lease")
        except TimeoutError:
            self._log.warning(
                "broker_deregistration_abandoned",
                lease_id=lease.id,
                broker_epoch=self.broker_epoch,
                session_timeout_ms=self.session_timeout_ms,
            )
            return
        self._log.info("broker_deregistered", lease_id=lease.id, broker_epoch=self.broker_epoch)

    async def close(self) -> None:
        """Stop renewing and watching WITHOUT revoking: the registration vanishes when
        the lease expires, exactly as if this process had been killed."""
        await self._stop_tasks()

    async def _stop_tasks(self) -> None:
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat_task
            self._heartbeat_task = None
        await self._brokers.close()

    def _check_own_registration(self) -> None:
        """After each change the view applied: once it has passed this registration's revision
        without it (the key deleted, or written by another), the registration is gone."""
        if self.lease is None or self._brokers.revision < self.broker_epoch:
            return
        own = self._brokers.get(self._key)
        if own is None or own.mod_revision != self.broker_epoch:
            self._registration_gone.set()

    async def _heartbeat_forever(self) -> None:
        while True:
            lease = self.lease
            assert lease is not None
            self._registration_gone.clear()
            self._check_own_registration()
            keeper = asyncio.create_task(keep_lease_alive(self.store, lease, self.heartbeat_interval_ms))
            gone = asyncio.create_task(self._registration_gone.wait())
            try:
                await asyncio.wait((keeper, gone), return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (keeper, gone):
                    task.cancel()
                await asyncio.gather(keeper, gone, return_exceptions=True)
            if keeper.cancelled():
                self._log.warning(
                    "broker_registration_gone_reregistering", lease_id=lease.id, broker_epoch=self.broker_epoch
                )
                with contextlib.suppress(StoreUnavailableError):
                    await self.store.revoke(lease.id)
            else:
                keeper.result()
                self._log.warning("broker_lease_lost_reregistering", lease_id=lease.id, broker_epoch=self.broker_epoch)
            self._set_lease(None)
            try:
                await self._register_once()
            except DuplicateBrokerId as error:
                self._log.error("broker_reregistration_refused", error=str(error))
                self.failure = error
                self._registered.set()
                return

    def _set_lease(self, lease: Lease | None) -> None:
        self.lease = lease
        if lease is None:
            self._registered.clear()
        else:
            self._registered.set()
        changed, self._lease_changed = self._lease_changed, asyncio.Event()
        changed.set()

    async def _register_once(self) -> None:
        """Create ``/brokers/<id>`` under a fresh lease, waiting for a previous holder's
        key to vanish until the takeover deadline."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.session_timeout_ms + self.takeover_margin_ms) / 1000
        value = self.registration.model_dump_json().encode()
        while True:
            lease = await retry_unavailable(lambda: self.store.grant(self.session_timeout_ms), "grant broker lease")
            revision = await self._create_registration(value, lease)
            if revision is not None:
                self.broker_epoch = revision
                self._set_lease(lease)
                self._log.info(
                    "broker_registered",
                    url=self.registration.url,
                    rack=self.registration.rack,
                    broker_epoch=revision,
                    lease_id=lease.id,
                    session_timeout_ms=self.session_timeout_ms,
                )
                return
            await retry_unavailable(partial(self.store.revoke, lease.id), "revoke unused broker lease")
            holder = await retry_unavailable(lambda: self.store.get(self._key), "read broker registration")
            if holder is not None and holder.lease is not None and self._is_previous_incarnation(holder):
                self._log.info("broker_previous_incarnation_released", lease_id=holder.lease)
                await retry_unavailable(partial(self.store.revoke, holder.lease), "revoke previous incarnation")
                continue
            if holder is not None and not await self._wait_until_released(holder, deadline):
                raise DuplicateBrokerId(
                    f"broker id {self.broker_id} is already registered by a live broker at "
                    f"{registration_from(holder).url}; each broker needs its own --node-id"
                )

    def _is_previous_incarnation(self, holder: KeyValue) -> bool:
        """The key was written from this very data directory (same ``directory_id``).

        The caller holds the directory's exclusive lock, so the process that wrote it
        is gone: its lease can be revoked at once instead of waiting for it to expire
        (Kafka's broker incarnation id serves the same purpose).
        """
        mine = self.registration.directory_id
        return mine is not None and holder.lease is not None and registration_from(holder).directory_id == mine

    async def _create_registration(self, value: bytes, lease: Lease) -> int | None:
        """Create-only put; after an unknown outcome, a key already bound to our own
        lease means the earlier attempt succeeded."""
        try:
            return await self.store.put_if(self._key, value, 0, lease=lease.id)
        except LeaseNotFoundError:
            return None
        except StoreUnavailableError as error:
            self._log.warning("broker_registration_outcome_unknown", error=str(error))
        holder = await retry_unavailable(lambda: self.store.get(self._key), "read broker registration")
        if holder is not None and holder.lease == lease.id:
            return holder.mod_revision
        return None

    async def _wait_until_released(self, holder: KeyValue, deadline: float) -> bool:
        """True once ``holder``'s key changed (the caller retries), False at the deadline."""
        remaining_s = deadline - asyncio.get_running_loop().time()
        if remaining_s <= 0:
            return False
        self._log.info("broker_id_held_waiting", holder_revision=holder.mod_revision, wait_ms=int(remaining_s * 1000))
        events = self.store.watch(self._key, holder.mod_revision + 1)
        try:
            async with asyncio.timeout(remaining_s), contextlib.aclosing(events):  # type: ignore[type-var]
                async for event in events:
                    if event.key == self._key:
                        return True
        except TimeoutError:
            return False
        except (StoreUnavailableError, CompactedError):
            return True
        return True
