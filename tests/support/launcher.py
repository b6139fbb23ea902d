"""Broker processes forked from a launcher that has already imported the broker.

The suite starts hundreds of brokers. Started as ``python -m broker serve``, each
spends about 1 s of CPU from spawn to exit, nearly all of it starting Python and
importing the broker; forked from a process that has imported it, about 0.1 s
(``python -m tests.benchmarks.broker_start_cpu`` prints both). The launcher, one per
test process, imports what ``serve`` imports once and then forks one child per broker. A child is a real, separate broker process: it runs the
same ``highwater serve`` command line (``broker.command.main`` with the same arguments),
with its own environment, working directory and log file, and is signalled, paused and
killed as any process is. It only skips the import.

Protocol, JSON lines: the test process writes ``{"argv", "env", "cwd", "log_path"}``
to the launcher's stdin and reads ``{"pid"}`` back; when a child exits, the launcher
reaps it and writes ``{"exited": pid, "code": c, "cpu_s": s}`` (``code`` as
``Popen.returncode``: negative for a signal). When the test process goes away (the
launcher's stdin closes), the launcher kills the children left and exits, so a crashed
test process leaves no broker behind.

Invariant: the launcher never starts a thread or an event loop, so a fork copies no
lock held by another thread and no loop state.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


class LaunchedProcess:
    """A broker forked by the launcher, with the part of ``subprocess.Popen`` the tests use.

    Signals go through a pidfd opened at launch, so a signal never reaches another
    process that reused the pid after this one was reaped.
    """

    def __init__(self, launcher: Launcher, pid: int) -> None:
        self.pid = pid
        self._launcher = launcher
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except ProcessLookupError:
            self._pidfd = None

    @property
    def returncode(self) -> int | None:
        exited = self._launcher.exits.get(self.pid)
        return None if exited is None else exited[0]

    @property
    def cpu_s(self) -> float | None:
        """User + system CPU of the child, once it has exited."""
        exited = self._launcher.exits.get(self.pid)
        return None if exited is None else exited[1]

    def poll(self) -> int | None:
        self._launcher.read_reports(timeout_s=0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        if self._pidfd is not None:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self._pidfd], [], [], remaining)[0]:
                raise subprocess.TimeoutExpired(f"broker pid {self.pid}", timeout or 0)
        while self.returncode is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"broker pid {self.pid}", timeout or 0)
            self._launcher.read_reports(timeout_s=0.05)
        code = self.returncode
        assert code is not None
        return code

    def send_signal(self, signum: int) -> None:
        if self._pidfd is None or self.poll() is not None:
            return
        try:
            signal.pidfd_send_signal(self._pidfd, signum)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __del__(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)


class Launcher:
    """The test process's side: one launcher process, started on first use."""

    _instance: Launcher | None = None
    _instance_lock = threading.Lock()

    @classmethod
    def shared(cls) -> Launcher:
        with cls._instance_lock:
            if cls._instance is None or cls._instance._process.poll() is not None:
                cls._instance = cls()
            return cls._instance

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.launcher"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=REPO_ROOT,
        )
        assert self._process.stdout is not None
        self._stdout = self._process.stdout.fileno()
        self._buffer = b""
        self._lock = threading.Lock()
        self._pids: list[int] = []
        self.exits: dict[int, tuple[int, float]] = {}
        """Pid -> (exit code as ``Popen.returncode``, CPU seconds) of each child reaped so far."""

    def launch(self, argv: list[str], env: dict[str, str], cwd: Path, log_path: Path) -> LaunchedProcess:
        """Fork a child that runs ``highwater <argv>``; its stdout and stderr append to ``log_path``."""
        request = {"argv": argv, "env": env, "cwd": str(cwd), "log_path": str(log_path)}
        with self._lock:
            assert self._process.stdin is not None
            self._process.stdin.write(json.dumps(request).encode() + b"\n")
            self._process.stdin.flush()
            while not self._pids:
                if self._process.poll() is not None:
                    raise RuntimeError(f"the broker launcher exited ({self._process.returncode})")
                self._read_reports_locked(timeout_s=1.0)
            return LaunchedProcess(self, self._pids.pop(0))

    def close(self, timeout_s: float = 10.0) -> int:
        """Close the launcher's stdin, as the end of the test process does: it kills its children and exits."""
        assert self._process.stdin is not None
        self._process.stdin.close()
        return self._process.wait(timeout_s)

    def read_reports(self, timeout_s: float) -> None:
        with self._lock:
            self._read_reports_locked(timeout_s)

    def _read_reports_locked(self, timeout_s: float) -> None:
        if not select.select([self._stdout], [], [], timeout_s)[0]:
            return
        chunk = os.read(self._stdout, 65536)
        if not chunk:
            raise RuntimeError(f"the broker launcher exited ({self._process.wait()})")
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            report = json.loads(line)
            if "pid" in report:
                self._pids.append(report["pid"])
            else:
                self.exits[report["exited"]] = (report["code"], report["cpu_s"])


def _import_what_serve_imports() -> None:
    from broker.cli.kio_types import import_kio_without_hypothesis

    import_kio_without_hypothesis()
    import uvloop  # noqa: F401

    import broker.command
    import broker.main  # noqa: F401


def _run_child(request: dict[str, Any], wakeup_fds: tuple[int, int], interrupt_handler: Any) -> None:
    """In the forked child: become the requested ``highwater`` command, then exit with its code."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, interrupt_handler)
    for fd in wakeup_fds:
        os.close(fd)
    log_fd = os.open(request["log_path"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null_fd, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    os.close(null_fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["highwater", *request["argv"]]
    code = 1
    try:
        from broker.command import main

        main()
        code = 0
    except SystemExit as stop:
        if isinstance(stop.code, int):
            code = stop.code
        elif stop.code is None:
            code = 0
        else:
            print(stop.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - a broker that crashes leaves its traceback in its log, as it would
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _serve() -> None:
    """The launcher's loop: fork on each request, report each exit, kill the rest on EOF.

    A Ctrl-C reaches the whole foreground process group; the launcher ignores it (its
    test process decides when it ends) and its children handle it as ``serve`` does.
    """
    _import_what_serve_imports()
    interrupt_handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.collect()
    gc.freeze()
    wakeup_read, wakeup_write = os.pipe()
    os.set_blocking(wakeup_read, False)
    os.set_blocking(wakeup_write, False)
    signal.set_wakeup_fd(wakeup_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    children: set[int] = set()
    buffer = b""

    def report(message: dict[str, Any]) -> None:
        os.write(1, json.dumps(message).encode() + b"\n")

    def reap() -> None:
        while children:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                return
            children.discard(pid)
            cpu_s = round(usage.ru_utime + usage.ru_stime, 3)
            report({"exited": pid, "code": os.waitstatus_to_exitcode(status), "cpu_s": cpu_s})

    while True:
        readable = select.select([0, wakeup_read], [], [])[0]
        if wakeup_read in readable:
            while True:
                try:
                    os.read(wakeup_read, 4096)
                except BlockingIOError:
                    break
            reap()
        if 0 in readable:
            chunk = os.read(0, 65536)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                request = json.loads(line)
                sys.stdout.flush()
                pid = os.fork()
                if pid == 0:
                    _run_child(request, (wakeup_read, wakeup_write), interrupt_handler)
                children.add(pid)
                report({"pid": pid})
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    for pid in list(children):
        os.waitpid(pid, 0)


if __name__ == "__main__":
    _serve()
