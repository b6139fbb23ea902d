"""Resident memory read from /proc: this process's own status, and the line's parsing."""

from __future__ import annotations

import os

import pytest

from broker.bench.rss import rss_bytes, vm_rss_bytes


def test_own_rss_is_positive_and_grows_when_memory_is_touched() -> None:
    before = rss_bytes("self")
    assert before > 1 << 20, "a Python interpreter is resident in more than a MiB"
    ballast = b"\x01" * (64 << 20)  # written, so every page is resident
    assert rss_bytes(os.getpid()) >= before + (32 << 20)
    assert len(ballast) == 64 << 20


def test_vm_rss_line_in_kib_is_read_as_bytes_and_its_absence_is_an_error() -> None:
    assert vm_rss_bytes("Name:\tpython\nVmRSS:\t   2048 kB\nThreads:\t1\n") == 2048 * 1024
    with pytest.raises(ValueError, match="no VmRSS"):
        vm_rss_bytes("Name:\tkthreadd\n")
