"""One simulated broker: the broker's own replica drivers, wired to the simulated world.

Each broker process is the broker's ``Partition`` (its log a ``SimLog`` on a ``SimDisk``
with power loss), its ``ReplicaFetcherManager`` fetching through ``SimFetchTransport``,
and ``serve_replica_fetch`` answering its followers, all running on a
``VirtualTimeLoop`` of its own: the broker's clock. Disk work runs inline (or, on a slow
disk, completes later in broker time), fetches and ISR proposals travel as messages on
the simulated ``Network``, and the background loops are the replica manager's (the
ISR-expiration tick, the HW checkpoint, the interval flusher). Nothing here decides
anything a broker decides: a fault the simulation finds is a fault in the broker's code.

A process lives from a start to a crash. A crash unplugs its log, cancels its tasks and
lets them unwind with nothing reaching the disk or the network, then closes its loop;
a restart is a new process on the same disk, with a new broker epoch.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Coroutine, Hashable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.acks import Acks
from broker.cluster.records import PartitionRecord
from broker.errors import HighwaterError, StaleBrokerEpoch
from broker.replica_io.background import every, tick_led
from broker.replica_io.fetch_handler import serve_replica_fetch
from broker.replica_io.fetch_transport import FetchTransport, FetchTransportError
from broker.replica_io.fetcher import ReplicaFetcherManager
from broker.replica_io.partition import INLINE_FLUSH_MAX_BYTES, Partition
from broker.replica_io.replication_stream import StreamFetchTransport, serve_stream
from broker.replication import PartitionLeaderState, PartitionReplica, ProposeIsr
from broker.replication.fetch_session import LeaderSessions
from broker.replication.fetch_wire import (
    FetchRequest,
    FetchResponse,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from broker.replication.isr_change import IsrChangeAnswer
from broker.storage.flusher import GroupCommitFlusher, IntervalFlusher
from tests.simulation.storage import RecordView, SimDisk, decode_views
from tests.simulation.streams import SimStreamEnd, StreamFrame, StreamReset
from tests.simulation.world import CONTROLLER, PARTITION, TOPIC, AlterIsrResponse, SimConfig
from tests.support.virtual_time import InlineExecutor, VirtualTimeLoop

ReadAnswer = tuple[list[tuple[int, RecordView]], int]


MAX_UNWIND_ROUNDS = 10
"""A dying process cancels its tasks until none is left (one's cleanup may start another).
None may outlive the loop: a coroutine collected later runs its cleanup on whatever loop
is running then, another broker's."""


@dataclass(frozen=True)
class FetchRequestMessage:
    request_id: int
    body: bytes
    """``fetch_wire.encode_request``: the bytes the broker's HTTP transport carries."""


@dataclass(frozen=True)
class FetchResponseMessage:
    request_id: int
    body: bytes


@dataclass(frozen=True)
class ProposeIsrMessage:
    request_id: int
    proposal: ProposeIsr


@dataclass
class Hooks:
    """What a broker needs from the simulation."""

    now_ms: Callable[[], int]
    send: Callable[[int, int, object], None]
    produce_done: Callable[[Hashable, HighwaterError | None, int | None], None]
    trace: Callable[[str], None]
    registered_broker_epoch: Callable[[int], int]
    """A broker's incarnation as the metadata registers it, or ``UNKNOWN_BROKER_EPOCH``."""
    request_ids: Callable[[], int]
    """Unique across every process of every broker, so an answer never reaches the wrong request."""
    rng: random.Random


class SlowDiskExecutor(InlineExecutor):
    """Runs disk work at once but completes it ``delay_ms()`` later in broker time: a slow disk.

    The work itself happens at submission (a crash before completion leaves it done but
    unreported, as a real write that finished just before the process died).
    """

    def __init__(self, loop: VirtualTimeLoop, delay_ms: Callable[[], int]) -> None:
        super().__init__()
        self._loop = loop
        self._delay_ms = delay_ms

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        done = super().submit(fn, *args, **kwargs)
        delay_ms = self._delay_ms()
        if delay_ms <= 0:
            return done
        later: Future[Any] = Future()
        self._loop.call_later(delay_ms / 1000, _copy_outcome, done, later)
        return later


def _copy_outcome(source: Future[Any], target: Future[Any]) -> None:
    error = source.exception()
    if error is not None:
        target.set_exception(error)
    else:
        target.set_result(source.result())


class SimFetchTransport:
    """``FetchTransport`` over the simulated network: the request and its answer are messages."""

    def __init__(self, process: SimProcess) -> None:
        self._process = process
        self.waiting: dict[int, asyncio.Future[bytes]] = {}

    def reachable(self, leader_id: int) -> bool:
        return True

    async def close(self) -> None:
        """Nothing kept between fetches."""

    async def send(self, leader_id: int, request: FetchRequest) -> FetchResponse:
        process = self._process
        request_id = process.hooks.request_ids()
        answer = process.loop.create_future()
        self.waiting[request_id] = answer
        process.send(leader_id, FetchRequestMessage(request_id, encode_request(request)))
        try:
            async with asyncio.timeout(process.config.fetch_timeout_ms / 1000):
                body = await answer
        except TimeoutError as error:
            raise FetchTransportError(f"no answer from broker {leader_id} within the fetch timeout") from error
        finally:
            self.waiting.pop(request_id, None)
        return decode_response(body)


@dataclass
class SimProcess:
    """One run of a broker, from its start to its crash."""

    broker: SimBroker
    incarnation: int
    loop: VirtualTimeLoop = field(init=False)
    partition: Partition = field(init=False)
    fetchers: ReplicaFetcherManager = field(init=False)
    sessions: LeaderSessions = field(init=False)
    transport: FetchTransport = field(init=False)
    streams: dict[int, SimStreamEnd] = field(default_factory=dict)
    """This process's ends of replication streams, by connection id (``config.fetch_transport`` "stream")."""
    alive: bool = True
    failures: list[BaseException] = field(default_factory=list)
    """Errors raised on the loop (a driver's, or an invariant a produce's answer broke)."""
    _isr_waiting: dict[int, asyncio.Future[IsrChangeAnswer]] = field(default_factory=dict)
    _produces: dict[Hashable, asyncio.Task] = field(default_factory=dict)

    @property
    def hooks(self) -> Hooks:
        return self.broker.hooks

    @property
    def config(self) -> SimConfig:
        return self.broker.config

    def __post_init__(self) -> None:
        self.loop = VirtualTimeLoop(start=self.broker.clock_ms() / 1000)
        self.loop.set_default_executor(SlowDiskExecutor(self.loop, self.broker.disk_delay_ms))
        self.loop.set_exception_handler(self._on_loop_error)
        self.transport = self._new_transport()
        self.call(self._start)

    def _new_transport(self) -> FetchTransport:
        """Fetches as messages, or the broker's replication stream over simulated connections;
        either way a fetch gives up ``fetch_timeout_ms`` after it was sent."""
        if self.config.fetch_transport == "stream":
            grace_s = (self.config.fetch_timeout_ms - self.config.fetch_max_wait_ms) / 1000
            return StreamFetchTransport(self._open_stream, lambda leader_id: True, answer_grace_s=grace_s)
        return SimFetchTransport(self)

    async def _open_stream(self, leader_id: int) -> SimStreamEnd:
        self.broker.streams_opened += 1
        return self._stream_end(self.hooks.request_ids(), leader_id, opener=True)

    def _stream_end(self, connection: int, peer: int, *, opener: bool) -> SimStreamEnd:
        end = SimStreamEnd(
            connection, peer, opener=opener, send=self.send, forget=lambda known: self.streams.pop(known, None)
        )
        self.streams[connection] = end
        return end

    def _start(self) -> None:
        """What the replica manager builds at start, with the HW from its checkpoint."""
        broker = self.broker
        log = broker.disk.open()
        self.partition = Partition(
            TOPIC,
            PARTITION,
            log,
            GroupCommitFlusher(),
            local_broker_id=broker.broker_id,
            replica_lag_time_max_ms=self.config.replica_lag_time_max_ms,
            propose_isr=self._propose_isr,
            high_watermark=broker.hw_checkpoint or 0,
            clock_ms=self.loop.clock_ms,
            inline_flush_max_bytes=INLINE_FLUSH_MAX_BYTES if self.config.inline_follower_flush else 0,
            fsync_timer=self.loop.time,
        )
        broker.disk.fsync_lies = lambda: not self.config.follower_fsync and not self.partition.is_leader
        self.fetchers = ReplicaFetcherManager(
            local_broker_id=broker.broker_id,
            broker_epoch=lambda: self.incarnation,
            transport=self.transport,
            max_wait_ms=self.config.fetch_max_wait_ms,
            max_bytes=self.config.fetch_max_bytes,
        )
        self.sessions = self.new_sessions()
        interval_flusher = IntervalFlusher(tick_ms=50, clock_ms=self.loop.clock_ms)
        interval_flusher.watch(self.partition.log)
        interval_flusher.start()
        self.loop.create_task(every(self.config.replica_lag_time_max_ms / 2000, lambda: tick_led([self.partition])))
        self.loop.create_task(every(self.config.hw_checkpoint_interval_ms / 1000, self._checkpoint_high_watermark))

    def new_sessions(self) -> LeaderSessions:
        """A leader's fetch-session cache, its session ids random as the broker's."""
        return LeaderSessions(new_session_id=lambda: self.hooks.rng.randrange(1, 2**31))

    def _checkpoint_high_watermark(self) -> None:
        """The simulated disk keeps the one replica's checkpointed HW (the broker writes a file)."""
        self.broker.hw_checkpoint = self.partition.high_watermark

    # ------------------------------------------------------------ running the loop

    def _on_loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if self.alive:
            self.failures.append(context.get("exception") or AssertionError(context.get("message")))

    def _on_task_done(self, task: asyncio.Task) -> None:
        error = None if task.cancelled() else task.exception()
        if error is not None and self.alive:
            self.failures.append(error)

    def run(self) -> None:
        """Everything due up to the broker's clock now; an error raised on the loop fails the run."""
        self.loop.run_until(self.broker.clock_ms() / 1000)
        if self.failures:
            failure = self.failures[0]
            if isinstance(failure, AssertionError):
                raise failure
            raise AssertionError(f"b{self.broker.broker_id}'s drivers failed: {failure!r}") from failure

    def call(self, action: Callable[..., None], *args: Any) -> None:
        """``action(*args)`` on the broker's loop (driver code may start tasks), then everything it set off."""
        self.loop.call_soon(action, *args)
        self.run()

    def start_task(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task:
        task = self.loop.create_task(coroutine)
        task.add_done_callback(self._on_task_done)
        self.run()
        return task

    def send(self, destination: int, payload: object) -> None:
        if self.alive:
            self.hooks.send(self.broker.broker_id, destination, payload)

    # ------------------------------------------------------------ the partition record

    def apply_metadata(self, record: PartitionRecord, min_insync_replicas: int) -> None:
        """The watch delivers the topic record (its ``min.insync.replicas``) and a partition record."""
        self.call(self._apply_metadata, record, min_insync_replicas)

    def _apply_metadata(self, record: PartitionRecord, min_insync_replicas: int) -> None:
        """``ReplicaManager.apply_topic_record``, then ``apply_partition_record``: role, then fetchers.
        A broker the record leaves out (a move removed it) resigns as the record says and stops
        fetching; it keeps its log, which the broker would delete: added back, it must truncate."""
        was = (self.partition.is_leader, self.partition.leader_epoch)
        self.partition.apply_topic_config(self.broker.disk.log_config, min_insync_replicas)
        self.partition.apply_record(record, min_insync_replicas)
        if self.broker.broker_id in record.replicas:
            self.fetchers.update(self.partition)
        else:
            self.fetchers.remove(self.partition)
        if (self.partition.is_leader, self.partition.leader_epoch) != was:
            self.hooks.trace(
                f"b{self.broker.broker_id} {'leader' if self.partition.is_leader else 'follower'} of epoch "
                f"{self.partition.leader_epoch} leader={self.partition.leader_id} "
                f"leo={self.partition.log_end_offset} hw={self.partition.high_watermark}"
            )

    # ------------------------------------------------------------ messages

    def deliver(self, source: int, payload: object) -> None:
        if isinstance(payload, FetchRequestMessage):
            self.start_task(self._serve_fetch(source, payload))
        elif isinstance(payload, FetchResponseMessage):
            assert isinstance(self.transport, SimFetchTransport)
            self._answer(self.transport.waiting.get(payload.request_id), payload.body)
        elif isinstance(payload, StreamFrame):
            self._on_stream_frame(source, payload)
        elif isinstance(payload, StreamReset):
            if (end := self.streams.get(payload.connection)) is not None:
                end.broken()
            self.run()
        elif isinstance(payload, AlterIsrResponse):
            self._answer(self._isr_waiting.get(payload.request_id), payload.answer)

    def _answer(self, waiting: asyncio.Future | None, answer: object) -> None:
        """An answer for a request still waiting here; a late or duplicated one finds nothing."""
        if waiting is not None and not waiting.done():
            waiting.set_result(answer)
        self.run()

    def _on_stream_frame(self, source: int, frame: StreamFrame) -> None:
        """A frame for one of this process's ends; a follower's first frame of a new connection opens
        the leader's end and starts the broker's ``serve_stream`` on it; any other unknown one is reset."""
        end = self.streams.get(frame.connection)
        if end is None:
            if not (frame.from_opener and frame.seq == 0):
                self.send(source, StreamReset(frame.connection))
                return
            end = self._stream_end(frame.connection, source, opener=False)
            self.start_task(serve_stream(end, lambda request: self._answer_fetch(source, request), peer=f"b{source}"))
        end.take(frame)
        self.run()

    async def _serve_fetch(self, follower_id: int, message: FetchRequestMessage) -> None:
        response = await self._answer_fetch(follower_id, decode_request(message.body))
        self.send(follower_id, FetchResponseMessage(message.request_id, encode_response(response)))

    async def _answer_fetch(self, follower_id: int, request: FetchRequest) -> FetchResponse:
        response = await serve_replica_fetch(
            request,
            lambda topic, partition: self.partition if (topic, partition) == (TOPIC, PARTITION) else None,
            self.hooks.registered_broker_epoch,
            self.sessions,
            clock_ms=self.loop.clock_ms,
        )
        if any(isinstance(answer.error, StaleBrokerEpoch) for answer in response.partitions):
            self.broker.stale_fetches_refused += 1
            self.hooks.trace(f"b{self.broker.broker_id} refused a fetch from a dead incarnation of b{follower_id}")
        return response

    async def _propose_isr(self, proposal: ProposeIsr) -> IsrChangeAnswer | None:
        """The controller's compare-and-set, over the network; no answer within the fetch timeout is None."""
        request_id = self.hooks.request_ids()
        answer: asyncio.Future[IsrChangeAnswer] = self.loop.create_future()
        self._isr_waiting[request_id] = answer
        self.send(CONTROLLER, ProposeIsrMessage(request_id, proposal))
        try:
            async with asyncio.timeout(self.config.fetch_timeout_ms / 1000):
                return await answer
        except TimeoutError:
            return None
        finally:
            self._isr_waiting.pop(request_id, None)

    # ------------------------------------------------------------ clients

    def produce(self, request_id: Hashable, batch: bytes, acks: Acks) -> None:
        """``Partition.append`` as the produce route calls it; the outcome reaches ``Hooks.produce_done``."""
        self._produces[request_id] = self.start_task(self._produce(request_id, batch, acks))

    async def _produce(self, request_id: Hashable, batch: bytes, acks: Acks) -> None:
        try:
            outcome = await self.partition.append(batch, acks, self.config.produce_timeout_ms)
        except HighwaterError as error:
            self.hooks.produce_done(request_id, error, None)
        else:
            self.hooks.produce_done(request_id, None, outcome.base_offset)
        finally:
            self._produces.pop(request_id, None)

    def read(self, offset: int, answer: Callable[[ReadAnswer | None], None]) -> None:
        """``Partition.read`` without a long poll (on a slow disk it takes a while); ``answer`` gets
        (the records it returned, the HW once it returned), or ``None`` when it failed."""
        self.start_task(self._read(offset, answer))

    async def _read(self, offset: int, answer: Callable[[ReadAnswer | None], None]) -> None:
        try:
            result = await self.partition.read(offset, self.config.fetch_max_bytes, 0)
        except HighwaterError:
            answer(None)
            return
        except BaseException:
            answer(None)
            raise
        answer((decode_views(result.data), self.partition.high_watermark))

    # ------------------------------------------------------------ the end

    def crash(self) -> list[Hashable]:
        """The process dies now (its log already unplugged): return the produces it left unanswered."""
        hanging = list(self._produces)
        self.alive = False
        for _ in range(MAX_UNWIND_ROUNDS):
            tasks = asyncio.all_tasks(self.loop)
            if not tasks:
                break
            for task in tasks:
                task.cancel()
            self.loop.run_until(self.loop.time())
        left = asyncio.all_tasks(self.loop)
        assert not left, f"b{self.broker.broker_id}'s tasks outlive its crash: {sorted(t.get_name() for t in left)}"
        self.loop.close()
        return hanging


@dataclass
class SimBroker:
    """A broker id across its processes: its disk, its HW checkpoint file and its clock."""

    broker_id: int
    directory: Path
    config: SimConfig
    hooks: Hooks
    disk: SimDisk = field(init=False)
    process: SimProcess | None = None
    paused: bool = False
    hw_checkpoint: int | None = None
    incarnation: int = 0
    """The broker epoch: a new one at every start."""
    clock_skew_ms: int = 0
    """How far this broker's clock has jumped ahead of the simulation's."""
    slow_disk_until_ms: int = -1
    stale_fetches_refused: int = 0
    streams_opened: int = 0

    def __post_init__(self) -> None:
        self.disk = SimDisk(self.directory, self.config)
        self.process = SimProcess(self, self.incarnation)

    def clock_ms(self) -> int:
        return self.hooks.now_ms() + self.clock_skew_ms

    def disk_delay_ms(self) -> int:
        """Extra broker time each disk operation takes while the disk is slow."""
        if self.hooks.now_ms() >= self.slow_disk_until_ms:
            return 0
        return self.hooks.rng.randint(0, 2 * self.config.fetch_max_wait_ms)

    # ---------------------------------------------------------------- views

    @property
    def running(self) -> bool:
        return self.process is not None

    @property
    def active(self) -> bool:
        return self.process is not None and not self.paused

    @property
    def live(self) -> SimProcess:
        assert self.process is not None, f"b{self.broker_id} is not running"
        return self.process

    @property
    def core(self) -> PartitionReplica:
        return self.live.partition.core

    @property
    def leader_state(self) -> PartitionLeaderState | None:
        return self.core.leader_state

    @property
    def high_watermark(self) -> int:
        return self.core.high_watermark

    # ------------------------------------------------------------ crash and restart

    def crash(self, power_loss: bool) -> list[Hashable]:
        """The process dies: every in-memory state is gone; return the produces left hanging."""
        log = self.disk.unplug()
        hanging = self.live.crash()
        self.process = None
        self.paused = False
        if power_loss:
            self.disk.lose_power(log)
        else:
            self.disk.close_files(log)
        return hanging

    def shut_down(self) -> None:
        """The end of a run: the process stops as a ``kill -9`` would, its loop closed, its files closed."""
        if self.process is not None:
            self.crash(power_loss=False)

    def restart(self, hw_checkpoint_lost: bool) -> None:
        """A new process recovers the log from disk; the HW comes from its checkpoint (0 if deleted)."""
        if hw_checkpoint_lost:
            self.hw_checkpoint = None
        self.incarnation += 1
        self.process = SimProcess(self, self.incarnation)
