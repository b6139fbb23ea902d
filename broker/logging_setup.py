"""Structured logging for broker processes: one event per line on stderr.

Events are structlog key-values (``log.info("partition.leader", topic=..., partition=...,
leader_epoch=...)``). On a terminal they render as readable coloured lines; otherwise
(a service manager, a log file, ``highwater dev``'s per-broker logs) as one JSON object
per line, so they can be grepped and parsed. Records from the stdlib ``logging`` module
(aiohttp's access and server logs, asyncio) pass through the same renderer so there is
one format per process; they are kept at WARNING or above (higher when the level is
error or critical), so a busy broker's access log does not drown its own events.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

import structlog
from structlog.typing import Processor

LogFormat = Literal["json", "console", "auto"]

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}

STDLIB_MIN_LEVEL = logging.WARNING
"""Third-party stdlib loggers (aiohttp.access, asyncio) log at this level or above."""


def resolve_format(fmt: LogFormat, stream: TextIO) -> Literal["json", "console"]:
    """``auto`` means console rendering on a TTY and JSON lines otherwise."""
    if fmt != "auto":
        return fmt
    isatty = getattr(stream, "isatty", None)
    return "console" if isatty is not None and isatty() else "json"


def configure_logging(level: str = "info", fmt: LogFormat = "auto", stream: TextIO | None = None) -> None:
    """Route structlog and stdlib logging to ``stream`` (default stderr), one event per line.

    Safe to call more than once (tests, ``serve`` after ``dev``): the root handler is replaced.
    """
    stream = stream or sys.stderr
    level_no = _LEVELS[level.lower()]
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer = (
        structlog.dev.ConsoleRenderer(colors=True)
        if resolve_format(fmt, stream) == "console"
        else structlog.processors.JSONRenderer()
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder()],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(level_no, STDLIB_MIN_LEVEL))
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    _set_highwater_levels(level_no)


def _set_highwater_levels(level_no: int) -> None:
    """Our own packages log at ``level``; everything else stays at the root's WARNING floor.

    ``highwater`` is where the client libraries log (``broker.client.library_log``), so a
    broker process that runs them (the benchmarks) shows their events at its level too.
    """
    for package in ("broker", "producer", "consumer", "spark_connector", "config", "highwater", "__main__"):
        logging.getLogger(package).setLevel(level_no)
