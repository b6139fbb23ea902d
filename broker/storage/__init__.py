"""Segment files, indexes, the partition log, checkpoints, recovery and group-commit flushing.

Import the modules themselves (``broker.storage.log``, ``broker.storage.epoch_cache``,
...): this package re-exports nothing, so a pure module that needs only the epoch cache
does not load the file-handling ones with it.
"""
