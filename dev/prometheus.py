"""A real Prometheus server for tests and by hand: built once from its Go module, started on loopback.

`build()` runs `go install github.com/prometheus/prometheus/cmd/prometheus@VERSION` with GOBIN in the
git-ignored .cache/ (the binary, 147 MB); Go's module and build caches stay where Go keeps them
(`go env GOMODCACHE GOCACHE`, outside the checkout), so a later build of the same version is quick and a
present binary is not built again. `start(targets)` runs it on a free 127.0.0.1 port, with a tsdb
directory of its own and a scrape config whose one job scrapes `targets` (host:port, path /metrics)
every second; `query(promql)` asks its HTTP API.

By hand:
    python -m dev.prometheus build
    python -m dev.prometheus start --target 127.0.0.1:9108   # prints the URL, runs in background
    python -m dev.prometheus status
    python -m dev.prometheus stop
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from dev.process import CACHE_DIR, LocalServer, free_port, start_status_stop

VERSION = "v0.316.0"
MODULE = "github.com/prometheus/prometheus/cmd/prometheus"
BIN_DIR = CACHE_DIR / f"prometheus-{VERSION}"
BINARY = BIN_DIR / "prometheus"


class PrometheusError(RuntimeError):
    """Prometheus could not be built, started or asked."""


def build() -> Path:
    """The server's binary, built with the Go toolchain if it is not there yet."""
    if BINARY.exists():
        return BINARY
    if shutil.which("go") is None:
        raise PrometheusError("building Prometheus needs the Go toolchain (go on PATH): https://go.dev/dl/")
    BIN_DIR.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    print(f"building Prometheus {VERSION} with go install into {BIN_DIR} (a cold build takes minutes)",
          file=sys.stderr)
    done = subprocess.run(["nice", "-n", "10", "go", "install", f"{MODULE}@{VERSION}"], cwd=tempfile.gettempdir(),
                          env={**os.environ, "GOBIN": str(BIN_DIR)}, capture_output=True, text=True)
    if done.returncode != 0 or not BINARY.exists():
        raise PrometheusError(f"go install {MODULE}@{VERSION} failed:\n{done.stderr[-3000:]}")
    print(f"built Prometheus in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return BINARY


def scrape_config(targets: list[str], interval: str = "1s") -> str:
    """prometheus.yml with one job scraping `targets` (JSON is YAML)."""
    return json.dumps({"global": {"scrape_interval": interval, "evaluation_interval": interval},
                       "scrape_configs": [{"job_name": "kafkasource", "metrics_path": "/metrics",
                                           "static_configs": [{"targets": targets}]}]}, indent=2)


class Prometheus(LocalServer):
    """One running Prometheus server; its folder holds its configuration, its log and its data."""

    log_name = "prometheus.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(self, path: str, **params: str) -> dict:
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = json.loads(answer.read())
        if body.get("status") != "success":
            raise PrometheusError(f"{url}: {body}")
        return body["data"]

    def query(self, promql: str) -> list[dict]:
        """An instant query's result: [{"metric": {labels}, "value": [time, "value"]}, ...]."""
        return self.api("query", query=promql)["result"]

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False


def start(targets: list[str], data_dir: Path | None = None, port: int | None = None,
          timeout: float = 60) -> Prometheus:
    """Build if needed, then start Prometheus on 127.0.0.1 scraping `targets`; wait (bounded) until it is ready."""
    binary = build()
    port = port or free_port()
    data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafkasource-prometheus-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    config = data_dir / "prometheus.yml"
    config.write_text(scrape_config(targets))
    with open(data_dir / Prometheus.log_name, "ab") as log:
        process = subprocess.Popen([str(binary), f"--config.file={config}", f"--storage.tsdb.path={data_dir / 'tsdb'}",
                                    f"--web.listen-address=127.0.0.1:{port}"],
                                   stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    server = Prometheus(port, process.pid, data_dir, process)
    server.await_ready(server.ready, timeout, "Prometheus", f"127.0.0.1:{port}", server.recent_log, PrometheusError)
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dev.prometheus", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help=f"build Prometheus {VERSION} into {BIN_DIR} if it is not there")
    start_cmd = sub.add_parser("start", help="start Prometheus in the background")
    start_cmd.add_argument("--target", action="append", required=True, help="host:port of an exporter to scrape")
    start_cmd.add_argument("--port", type=int, default=9090)
    sub.add_parser("stop", help="stop the server started with `start`")
    sub.add_parser("status", help="print the URL of the running server")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(build())
            return 0
        return start_status_stop(
            args.command, "prometheus", "server", "Prometheus",
            start=lambda: start(args.target, data_dir=CACHE_DIR / "prometheus-data" / str(args.port), port=args.port),
            load=Prometheus.from_state, address=lambda server: server.url)
    except PrometheusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
