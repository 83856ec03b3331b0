"""A real schema registry for tests and examples: Apicurio Registry, which speaks the Confluent-compatible
API confluent-kafka's SchemaRegistryClient and its serializers use.

No registry server installs from PyPI and Confluent's is not on Maven Central; Apicurio's is, as a
library jar that Quarkus must turn into an application. dev/apicurio/ holds that Maven build (see its
pom.xml for what Maven Central lacks and how the build makes up for it); `build()` runs it once into a
git-ignored cache, with a Maven repository of its own. The server keeps its schemas in memory, listens on
127.0.0.1 only (Quarkus would bind 0.0.0.0:8080 unless told) and is stopped by pid.

By hand:
    python -m dev.registry build                  # once: the runnable registry into .cache/
    python -m dev.registry start [--port 8081]    # prints the URL, runs in the background
    python -m dev.registry status
    python -m dev.registry stop
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from dev.process import CACHE_DIR, REPO_ROOT, LocalServer, free_port, start_status_stop

APICURIO_VERSION = "2.4.2.Final"
MAVEN_PROJECT = REPO_ROOT / "dev" / "apicurio"
BUILD_DIR = CACHE_DIR / f"apicurio-registry-{APICURIO_VERSION}"
MAVEN_REPO = BUILD_DIR / "m2"  # its own: the stand-in build-step module never reaches ~/.m2
APP_DIR = BUILD_DIR / "app"
RUNNER_JAR = APP_DIR / "local-apicurio-registry-1-runner.jar"


class RegistryError(RuntimeError):
    """The local schema registry could not be built, started or stopped."""


def _tool(name: str, what_for: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RegistryError(f"`{name}` is not on PATH; it is needed to {what_for}. Install OpenJDK 17 (java) and "
                            "Apache Maven (mvn), e.g. `apt-get install openjdk-17-jdk-headless maven`.")
    return path


def _maven(pom: Path, build_dir: Path, goal: str) -> None:
    mvn = _tool("mvn", "build the schema registry from Maven Central")
    cmd = [mvn, "-B", "-q", f"-Dmaven.repo.local={MAVEN_REPO}", f"-Dbuild.dir={build_dir}", "-DskipTests",
           "-f", str(pom), goal]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RegistryError(f"Maven could not build {pom.parent.name}:\n" + (result.stdout + result.stderr)[-3000:])


def build() -> Path:
    """Build the runnable registry into the cache (once); return its runner jar."""
    marker = APP_DIR / ".complete"
    if marker.exists():
        return RUNNER_JAR
    # the stand-in build-step module first: the app's build resolves it from the local repository
    _maven(MAVEN_PROJECT / "config-index-deployment" / "pom.xml", BUILD_DIR / "config-index-deployment", "install")
    _maven(MAVEN_PROJECT / "pom.xml", APP_DIR, "package")
    if not RUNNER_JAR.exists():
        raise RegistryError(f"the registry build finished without {RUNNER_JAR}")
    marker.touch()
    return RUNNER_JAR


class Registry(LocalServer):
    """One running registry process and where it logs."""

    log_name = "registry.log"

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """What `schema.registry.url` takes: Apicurio serves the Confluent-compatible API under this path."""
        return f"{self.address}/apis/ccompat/v7"


def is_ready(address: str) -> bool:
    """True once the registry's health endpoint says it is ready to serve."""
    try:
        with urllib.request.urlopen(f"{address}/health/ready", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start(port: int | None = None, log_dir: Path | None = None, timeout: float = 90) -> Registry:
    """Start a registry on 127.0.0.1 (building it first if the cache has none) and wait, bounded, until it is
    ready."""
    jar = build()
    java = _tool("java", "run the schema registry")
    port = port or free_port()
    log_dir = Path(log_dir or tempfile.mkdtemp(prefix="kafkasource-registry-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    cmd = [java, "-Xmx256m", "-Djava.awt.headless=true",
           "-Dquarkus.http.host=127.0.0.1", f"-Dquarkus.http.port={port}", "-jar", str(jar)]
    with open(log_dir / Registry.log_name, "ab") as console:
        process = subprocess.Popen(cmd, stdout=console, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   cwd=log_dir, start_new_session=True)
    registry = Registry(port, process.pid, log_dir, process)
    registry.await_ready(lambda: is_ready(registry.address), timeout, "the schema registry", registry.url,
                         registry.recent_log, RegistryError)
    return registry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dev.registry", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    start_cmd = sub.add_parser("start", help="start a registry in the background")
    start_cmd.add_argument("--port", type=int, default=8081)
    sub.add_parser("stop", help="stop the registry started with `start`")
    sub.add_parser("status", help="print the URL of the running registry")
    sub.add_parser("build", help="only build the registry into .cache/")
    args = parser.parse_args(argv)

    try:
        if args.command == "build":
            print(build())
            return 0
        return start_status_stop(
            args.command, "registry", "registry", f"Apicurio Registry {APICURIO_VERSION}",
            start=lambda: start(port=args.port, log_dir=CACHE_DIR / "registry" / str(args.port)),
            load=Registry.from_state, address=lambda registry: registry.url)
    except RegistryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
