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
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from dev.process import CACHE_DIR, REPO_ROOT, LocalServer, free_port, port_answers, start_status_stop

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class ConnectServerError(RuntimeError):
    """The local Spark Connect server could not be started or stopped."""


def spark_submit() -> Path:
    """pyspark's own spark-submit (the pip package ships the launcher and every jar the server needs)."""
    import pyspark

    launcher = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    if not launcher.exists():
        raise ConnectServerError(f"{launcher} is missing: install pyspark from PyPI (pip install pyspark)")
    return launcher


class ConnectServer(LocalServer):
    """One running Connect server process and where it logs."""

    log_name = "server.log"
    stops_whole_group = True  # spark-submit, the JVM and its Python workers

    @property
    def remote(self) -> str:
        """The URL a client passes to `SparkSession.builder.remote(...)`."""
        return f"sc://127.0.0.1:{self.port}"


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
    with open(log_dir / ConnectServer.log_name, "ab") as console:
        process = subprocess.Popen(server_command(port, conf), stdout=console, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=env, cwd=REPO_ROOT, start_new_session=True)
    server = ConnectServer(port, process.pid, log_dir, process)
    server.await_ready(lambda: port_answers(port), timeout, "the Spark Connect server", f"127.0.0.1:{port}",
                       server.recent_log, ConnectServerError)
    return server


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
        return start_status_stop(
            args.command, "connect", "server", "Spark Connect",
            start=lambda: start(port=args.port, log_dir=CACHE_DIR / "connect" / str(args.port)),
            load=ConnectServer.from_state, address=lambda server: server.remote)
    except ConnectServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
