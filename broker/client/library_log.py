"""Where the client libraries' log events go: stdlib ``logging``, under ``highwater``.

The producer, consumer, Spark connector and this shared client are libraries: where
their messages end up is the application's decision, never theirs. So client code
never configures logging, never prints, and does not use structlog (unconfigured,
structlog prints every event, debug included, to stdout). It logs on stdlib loggers
named ``highwater.<module>`` (``highwater.producer.sender``), so an application can
turn all of it up or down with one name, and a broker process routes them through its
own structured handler like any other stdlib record.

Invariants:

* nothing here adds a handler that writes anywhere: the only one is a ``NullHandler``
  on ``highwater``, which keeps Python's last-resort handler from printing warnings
  to stderr in an application that configured no logging (the logging HOWTO's rule
  for libraries);
* routine events (a metadata refresh, a position reset, a retry that may yet succeed)
  log at DEBUG; what a user may have to act on (a record given up, a feature turned
  off, an error also raised to the caller) at WARNING;
* a message starts with the event name, then ``key=value`` pairs as ``%`` arguments,
  so nothing is formatted unless a handler wants the record.
"""

from __future__ import annotations

import logging

LIBRARY_LOGGER = "highwater"

logging.getLogger(LIBRARY_LOGGER).addHandler(logging.NullHandler())


def library_logger(module_name: str) -> logging.Logger:
    """The logger of one client module: ``library_logger(__name__)`` -> ``highwater.<module>``."""
    return logging.getLogger(f"{LIBRARY_LOGGER}.{module_name}")
