"""What the dev scripts share about the processes they run in the background (a Kafka broker, a
Spark Connect server, a schema registry, Prometheus): free loopback ports, waiting until one answers,
whether it still runs, stopping it, the tail of its log, the record of a server on a port with a
folder of its own, and the `start` / `status` / `stop` command line whose state file lets a later
invocation find the process an earlier one started.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, TypeVar

REPO_ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = REPO_ROOT / ".cache"  # git-ignored: jars, state files and the data of processes started by hand


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_answers(port: int) -> bool:
    """Whether something accepts connections on the loopback port."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


Result = TypeVar("Result")


def wait(condition: Callable[[], Result], timeout: float, interval: float = 0.1) -> Result:
    """Poll `condition` until it returns something true or `timeout` seconds passed; what it returned last, true
    where it became so (the tests' await_condition gives that result, or fails naming what it waited for)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(interval)
    return condition()


def stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat from its state on ("pid (command) state ppid ..."): the command may hold spaces, so the
    fields are split after its ")". Raises OSError for a process that is gone."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def parents() -> dict[int, int]:
    """pid -> parent pid of every process readable now."""
    found = {}
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        try:
            found[pid] = int(stat_fields(pid)[1])
        except OSError:  # gone meanwhile
            continue
    return found


def descendants(root: int, parent_of: dict[int, int] | None = None) -> set[int]:
    """The pids of every process below `root` (children, their children, ...), as /proc shows them now."""
    children: dict[int, list[int]] = {}
    for pid, parent in (parent_of if parent_of is not None else parents()).items():
        children.setdefault(parent, []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def log_tail(paths: Iterable[Path], folder: Path, lines: int = 40) -> str:
    """The last lines of each log that exists, for an error message."""
    parts = [f"--- last lines of {path} ---\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
             for path in paths if path.exists()]
    return "\n".join(parts) or f"(no log written under {folder})"


class BackgroundProcess:
    """A process started with `start_new_session=True`, so its process group id is its pid.

    Subclasses are dataclasses holding `pid`, and `process`: the Popen in the Python process that
    started it, None in one that found it through a state file. They name their `log_file` and give
    the `state()` (JSON data) a later command line rebuilds them from.
    """

    pid: int
    process: subprocess.Popen | None
    log_file: Path
    stops_whole_group = False  # True: signals go to the process group, children included

    def is_running(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        try:
            os.kill(self.pid, 0)
        except OSError:
            return False
        return True

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM (a clean stop), SIGKILL if it is still running after `timeout` seconds."""
        if self.is_running():
            self._send(signal.SIGTERM)
            if not wait(lambda: not self.is_running(), timeout):
                self._send(signal.SIGKILL)
                wait(lambda: not self.is_running(), 10)
        if self.stops_whole_group:
            self._send(signal.SIGKILL)  # children the leader left behind, if any
        if self.process is not None:
            self.process.wait()

    def await_ready(self, ready: Callable[[], bool], timeout: float, what: str, address: str,
                    log: Callable[[], str], error: type[Exception], interval: float = 0.2) -> None:
        """Wait (bounded) until `ready()`; if the process exits first or time runs out, stop it and raise
        `error` naming `what` with the tail of its log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.is_running():
                raise error(f"{what} exited during start-up.\n{log()}")
            if ready():
                return
            time.sleep(interval)
        self.stop()
        raise error(f"{what} did not answer on {address} within {timeout:.0f} s.\n{log()}")

    def state(self) -> dict:
        raise NotImplementedError

    def _send(self, sig: int) -> None:
        try:
            if self.stops_whole_group:
                os.killpg(self.pid, sig)
            else:
                os.kill(self.pid, sig)
        except (ProcessLookupError, PermissionError):  # gone already
            pass


@dataclass
class LocalServer(BackgroundProcess):
    """A server on a loopback port that keeps its log (and any data) in a folder of its own; a subclass names the
    log (`log_name`) and what its clients connect to."""

    port: int
    pid: int
    folder: Path
    process: subprocess.Popen | None = None
    log_name: ClassVar[str] = "server.log"

    @property
    def log_file(self) -> Path:
        return self.folder / self.log_name

    def recent_log(self) -> str:
        return log_tail([self.log_file], self.folder)

    def state(self) -> dict:
        return {"port": self.port, "pid": self.pid, "folder": str(self.folder)}

    @classmethod
    def from_state(cls, state: dict) -> LocalServer:
        return cls(state["port"], state["pid"], Path(state["folder"]))


class StateFile:
    """What `python -m dev.<script> start` leaves for a later `status` or `stop`: a JSON file in .cache/."""

    def __init__(self, script: str):
        self.path = CACHE_DIR / f"{script}.json"

    def load(self) -> dict | None:
        return json.loads(self.path.read_text()) if self.path.exists() else None

    def save(self, state: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(state))

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def start_status_stop(command: str, script: str, noun: str, title: str, *, start: Callable[[], BackgroundProcess],
                      load: Callable[[dict], BackgroundProcess], address: Callable[[BackgroundProcess], str],
                      stopped: Callable[[BackgroundProcess], None] | None = None,
                      commands: dict[str, Callable[[BackgroundProcess], None]] | None = None) -> int:
    """Run `command` of `python -m dev.<script>`: `start`, `status`, `stop`, or one of `commands` on the running
    process; return the exit code. The process is a `noun` ("broker") whose `state()` `load` turns back into it;
    `stopped` cleans up after `stop`."""
    state_file = StateFile(script)
    saved = state_file.load()
    running = load(saved) if saved is not None else None
    if command == "start":
        if running is not None and running.is_running():
            print(f"already running: {address(running)} (pid {running.pid})")
            return 0
        begun = time.monotonic()
        process = start()
        state_file.save(process.state())
        print(f"{title} up on {address(process)} in {time.monotonic() - begun:.1f} s "
              f"(pid {process.pid}, log {process.log_file})")
        return 0
    if running is None or not running.is_running():
        print(f"no {noun} started with `python -m dev.{script} start` is running", file=sys.stderr)
        return 1
    if command == "status":
        print(address(running))
    elif command == "stop":
        running.stop()
        state_file.remove()
        if stopped is not None:
            stopped(running)
        print("stopped")
    else:
        (commands or {})[command](running)
    return 0
