"""A packed Python environment for Spark's executors: kafkasource with its native extension, pyarrow and
confluent-kafka in a virtualenv, as a .tar.gz for `spark.archives` (pyspark itself left out: every node's
Spark brings its own).

    python3 -m dev.packed_env        prints the archive's path, building it first if needed

Built with pex (maintained; Spark's docs name it beside conda-pack and venv-pack): a .pex of the project and
its dependencies, turned into a virtualenv by pex's own tools, then tarred. conda-pack needs conda, which
this project does not use; venv-pack has not changed since 2018. The virtualenv's bin/python points at this
interpreter's path, so nodes need the same Python at the same place, as with any packed virtualenv
(conda-pack is the way to ship the interpreter too).

Building the wheel runs cargo in native/target, where `pip install -e .` already built the same release
extension, so it only links again; the archive is cached in .cache/packed-env/ under a hash of everything
that goes into it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from dev.process import CACHE_DIR, REPO_ROOT

CACHE = CACHE_DIR / "packed-env"
SOURCES = ("setup.py", "pyproject.toml", "pyspark_kafkasource.py", "kafkasource", "native/Cargo.toml",
           "native/Cargo.lock", "native/src")


def source_hash() -> str:
    """Of every file that goes into the package, the interpreter's version and the pinned dependencies."""
    digest = hashlib.sha256(f"{sys.version_info[:2]} {_pins()}".encode())
    for name in SOURCES:
        path = REPO_ROOT / name
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".py", ".rs", ".toml", ".lock")
                       ) if path.is_dir() else [path]
        for file in files:
            digest.update(str(file.relative_to(REPO_ROOT)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16]


def _pins() -> list[str]:
    """The dependencies at the versions this interpreter has, so executors run what the driver runs."""
    from importlib.metadata import version

    return [f"{name}=={version(name)}" for name in ("pyarrow", "confluent-kafka", "xxhash")]


def build(target: Path) -> Path:
    work = target.parent / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = {**os.environ, "KAFKASOURCE_NATIVE": "1"}  # cargo builds in native/target, as `pip install -e .` did
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(work / "wheels"), str(REPO_ROOT)], check=True, env=env)
    wheel, = (work / "wheels").glob("kafkasource-*.whl")
    # the loose layout (a directory, not a zip): a zipapp would compress pyarrow only for `pex venv` to unpack it
    # again, a third of the build's time; the virtualenv made from either holds the same files
    pex = work / "env.pex"
    subprocess.run([sys.executable, "-m", "pex", str(wheel), *_pins(), "--exclude", "pyspark", "--include-tools",
                    "--python", sys.executable, "--layout", "loose", "-o", str(pex)], check=True, env=env)
    venv = work / "environment"
    subprocess.run([sys.executable, str(pex), "venv", "--compile", str(venv)], check=True,
                   env={**env, "PEX_TOOLS": "1"})
    with tarfile.open(work / "env.tar.gz", "w:gz", compresslevel=1) as archive:
        archive.add(venv, arcname=".")
    venv.rename(target.parent / "environment")  # the archive unpacked, for a client-mode driver (see unpacked())
    (work / "env.tar.gz").rename(target)
    shutil.rmtree(work)
    return target


def archive() -> Path:
    """The packed environment for this source tree: cached, or built now."""
    target = CACHE / source_hash() / "kafkasource-env.tar.gz"
    if not target.exists():
        build(target)
    return target


def unpacked() -> Path:
    """The same environment as a directory. In client mode Spark runs the source's driver-side Python process
    with spark.pyspark.python too, relative to the directory spark-submit runs in, so the driver's machine needs
    ./environment as well: without it the query's load() fails with Cannot run program "./environment/bin/python"."""
    return archive().parent / "environment"


def main() -> int:
    started = time.monotonic()
    path = archive()
    print(f"{path}  ({path.stat().st_size / 1e6:.0f} MB, ready in {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
