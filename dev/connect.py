"""A real Spark Connect server for tests and examples, from pyspark's own launcher.

It runs as its own process (`spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer`,
the server jar ships in pyspark's `jars/`), master local[2], listening on 127.0.0.1 only. Its Python
workers run this interpreter, so they import the kafkasource installed here, as a Connect server's
workers would import it from wherever the package is installed. Clients connect with
`SparkSession.builder.remote(server.remote)`; they need pyspark's Connect client packages
(grpcio, grpcio-status, googleapis-common-protos, zstandard), the server needs none of them.

By hand:
    python -m dev.connect start [--port 15002]   # prints sc://127.0.0.1:15002, runs in background
    python -m dev.connect status
    python -m dev.connect stop
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from dev.broker import CACHE_DIR, REPO_ROOT, free_port

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
STATE_FILE = CACHE_DIR / "connect.json"  # the server started by hand, for `status` / `stop`


class ConnectServerError(RuntimeError):
    """The local Spark Connect server could not be started or stopped."""


def spark_submit() -> Path:
    """pyspark's own spark-submit (the pip package ships the launcher and every jar the server needs)."""
    import pyspark

    launcher = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    if not launcher.exists():
        raise ConnectServerError(f"{launcher} is missing: install pyspark from PyPI (pip install pyspark)")
    return launcher


@dataclass
class ConnectServer:
    """One running Connect server process and where it logs."""

    port: int
    pid: int
    log_dir: Path
    process: subprocess.Popen | None = None

    @property
    def remote(self) -> str:
        """The URL a client passes to `SparkSession.builder.remote(...)`."""
        return f"sc://127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.log_dir / "server.log"

    def is_running(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        try:
            os.kill(self.pid, 0)
        except OSError:
            return False
        return True

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM to the whole process group (spark-submit, the JVM, its Python workers), SIGKILL if it hangs."""
        if self.is_running():
            _signal_group(self.pid, signal.SIGTERM)
            if not _wait(lambda: not self.is_running(), timeout):
                _signal_group(self.pid, signal.SIGKILL)
                _wait(lambda: not self.is_running(), 10)
        _signal_group(self.pid, signal.SIGKILL)  # Python workers the JVM left behind, if any
        if self.process is not None:
            self.process.wait()


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # the server was started in a session of its own: its group id is its pid
    except (ProcessLookupError, PermissionError):
        pass


def _wait(condition, timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return condition()


def _port_answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def server_command(port: int, conf: dict[str, str] | None = None) -> list[str]:
    settings = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.streaming.stopTimeout": "30s",
        **(conf or {}),
    }
    cmd = [str(spark_submit()), "--class", SERVER_CLASS, "--master", "local[2]", "--name", "kafkasource-connect"]
    for key, value in settings.items():
        cmd += ["--conf", f"{key}={value}"]
    # spark-submit wants an application resource; the server class lives in pyspark's jars already
    return cmd + ["spark-internal"]


def _registration_module_dir() -> str | None:
    """The folder holding `pyspark_kafkasource`, the module Spark's data source scan looks for.

    The scan lists the modules on the workers' sys.path, and Connect runs each session's workers in
    a folder of their own. An editable install (`pip install -e .`) makes the module importable
    through an import hook, which that listing does not see; naming its folder on PYTHONPATH makes
    the server find the format as it would after a regular install (where this is site-packages)."""
    spec = importlib.util.find_spec("pyspark_kafkasource")
    return str(Path(spec.origin).parent) if spec is not None and spec.origin else None


def start(port: int | None = None, log_dir: Path | None = None, timeout: float = 180,
          conf: dict[str, str] | None = None) -> ConnectServer:
    """Start a Connect server on 127.0.0.1 and wait (bounded) until its port answers."""
    port = port or free_port()
    log_dir = Path(log_dir or tempfile.mkdtemp(prefix="kafkasource-connect-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ,
           # the server's Python workers run this interpreter, and everything binds to loopback
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)  # would turn the server's own session into a client
    env.pop("SPARK_REMOTE", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_registration_module_dir(), env.get("PYTHONPATH")]))
    with open(log_dir / "server.log", "ab") as console:
        process = subprocess.Popen(server_command(port, conf), stdout=console, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=env, cwd=REPO_ROOT, start_new_session=True)
    server = ConnectServer(port, process.pid, log_dir, process)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not server.is_running():
            raise ConnectServerError(f"the Spark Connect server exited during start-up.\n{_log_tail(server)}")
        if _port_answers(port):
            return server
        time.sleep(0.2)
    server.stop()
    raise ConnectServerError(f"the Spark Connect server did not answer on 127.0.0.1:{port} within {timeout:.0f} s."
                             f"\n{_log_tail(server)}")


def _log_tail(server: ConnectServer, lines: int = 40) -> str:
    if not server.log_file.exists():
        return f"(no log written under {server.log_dir})"
    tail = server.log_file.read_text(errors="replace").splitlines()[-lines:]
    return f"--- last lines of {server.log_file} ---\n" + "\n".join(tail)


def _load_state() -> ConnectServer | None:
    if not STATE_FILE.exists():
        return None
    state = json.loads(STATE_FILE.read_text())
    return ConnectServer(state["port"], state["pid"], Path(state["log_dir"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dev.connect", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    start_cmd = sub.add_parser("start", help="start a Connect server in the background")
    start_cmd.add_argument("--port", type=int, default=15002)
    sub.add_parser("stop", help="stop the server started with `start`")
    sub.add_parser("status", help="print the sc:// URL of the running server")
    args = parser.parse_args(argv)

    try:
        running = _load_state()
        if args.command == "start":
            if running and running.is_running():
                print(f"already running: {running.remote} (pid {running.pid})")
                return 0
            started = time.monotonic()
            server = start(port=args.port, log_dir=CACHE_DIR / "connect" / str(args.port))
            STATE_FILE.write_text(json.dumps({"port": server.port, "pid": server.pid,
                                              "log_dir": str(server.log_dir)}))
            print(f"Spark Connect up on {server.remote} in {time.monotonic() - started:.1f} s "
                  f"(pid {server.pid}, log {server.log_file})")
            return 0
        if running is None or not running.is_running():
            print("no server started with `python -m dev.connect start` is running", file=sys.stderr)
            return 1
        if args.command == "status":
            print(running.remote)
        elif args.command == "stop":
            running.stop()
            STATE_FILE.unlink(missing_ok=True)
            print("stopped")
        return 0
    except ConnectServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
