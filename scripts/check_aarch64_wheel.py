"""Load the aarch64 wheel and read with it where no arm64 machine is at hand, under qemu's user-mode emulation
(scripts/wheels.py builds the wheel):

    python3 -m scripts.check_aarch64_wheel [dist/kafkasource-<version>-cp311-abi3-manylinux_2_17_aarch64.whl]

1. An arm64 Debian 12 root (glibc 2.36, CPython 3.11) unpacked from Debian's packages, and qemu-aarch64-static
   from Debian's amd64 package, into .cache/aarch64/ (dpkg -x; apt keeps package lists of its own there, so the
   machine's own apt state is neither needed nor changed).
2. The wheel, with the aarch64 wheels of pyarrow, confluent-kafka, fastavro and xxhash from PyPI (pip --target for that
   platform); pyspark and py4j, pure Python, come from this machine's install (`import kafkasource` wants one).
3. A local broker (dev.broker) holds records of every shape: keys, null keys and values, headers, 3 partitions.
   The emulated Python runs scripts/arch_probe.py: it reads them through the wheel's native extension and
   through the Python path, and decodes Avro records with the native and the Python decoder. Everything must
   equal what the same probe gives on this machine.
Needs Debian's package mirrors and PyPI (or their caches) the first time; the probe takes a few minutes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from dev import broker as local_broker
from scripts import arch_probe
from scripts.check_wheels import check, chosen_wheel

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache" / "aarch64"
ROOT = CACHE / "root"
QEMU = CACHE / "qemu" / "usr" / "bin" / "qemu-aarch64-static"
# CPython 3.11 and what it links, as Debian 12 packages it for arm64
PACKAGES = ("libc6", "libgcc-s1", "libstdc++6", "libpython3.11-minimal", "python3.11-minimal", "libpython3.11-stdlib",
            "zlib1g", "libexpat1", "libffi8", "libssl3", "libbz2-1.0", "liblzma5", "libsqlite3-0", "libuuid1",
            "libcrypt1", "libtinfo6", "libncursesw6", "libreadline8", "libnsl2", "libtirpc3", "libdb5.3")
SOURCES = """deb [arch=amd64,arm64] http://deb.debian.org/debian bookworm main
deb [arch=amd64,arm64] http://deb.debian.org/debian bookworm-updates main
deb [arch=amd64,arm64] http://deb.debian.org/debian-security bookworm-security main
"""
PLATFORMS = ("manylinux_2_28_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64")
RECORDS_PER_PARTITION = 200


def apt(*args: str) -> None:
    """apt-get with package lists of its own (amd64 and arm64) and its downloads in .cache/aarch64/apt: the
    machine's apt state is neither read nor changed."""
    state = CACHE / "apt"
    options = [f"Dir::State={state / 'state'}", f"Dir::Cache={state / 'cache'}",
               f"Dir::Etc::SourceList={state / 'sources.list'}", "Dir::Etc::SourceParts=/dev/null",
               "APT::Architecture=amd64", "APT::Architectures::=arm64", "Debug::NoLocking=1",
               "APT::Sandbox::User=root"]
    subprocess.run(["apt-get", "-q", *(f"-o{o}" for o in options), *args], check=True, cwd=state / "debs",
                   stdout=subprocess.DEVNULL)


def arm64_root() -> None:
    """The arm64 Python and qemu, unpacked once into .cache/aarch64/."""
    if (ROOT / "usr" / "bin" / "python3.11").exists() and QEMU.exists():
        return
    state = CACHE / "apt"
    for folder in (state / "state" / "lists" / "partial", state / "cache" / "archives" / "partial", state / "debs"):
        folder.mkdir(parents=True, exist_ok=True)
    (state / "sources.list").write_text(SOURCES)
    (state / "state" / "status").touch()
    apt("update")
    apt("download", *(f"{package}:arm64" for package in PACKAGES), "qemu-user-static:amd64")
    for deb in sorted((state / "debs").glob("*_arm64.deb")):
        subprocess.run(["dpkg", "-x", str(deb), str(ROOT)], check=True)
    qemu, = (state / "debs").glob("qemu-user-static_*_amd64.deb")
    subprocess.run(["dpkg", "-x", str(qemu), str(CACHE / "qemu")], check=True)


def install(wheel: Path, site: Path) -> None:
    """The wheel and the aarch64 builds of the versions of its compiled dependencies installed here."""
    from importlib.metadata import version

    platforms = [f"--platform={p}" for p in PLATFORMS]
    pinned = [f"{name}=={version(name)}" for name in ("pyarrow", "confluent-kafka", "fastavro", "xxhash")]
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--target", str(site),
                    *platforms, "--only-binary=:all:", "--python-version=3.11", "--implementation=cp", "--no-deps",
                    *pinned, str(wheel)], check=True)
    import py4j
    import pyspark

    for package in (pyspark, py4j):  # pure Python: linked, not copied
        (site / package.__name__).symlink_to(Path(package.__file__).parent)


def produce(bootstrap: str, topic: str) -> dict[int, int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(60)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(3 * RECORDS_PER_PARTITION):
        headers = [("h", f"{i}".encode()), ("empty", None)] if i % 4 == 0 else None
        producer.produce(topic, partition=i % 3, key=None if i % 5 == 0 else f"k{i}".encode(),
                         value=None if i % 7 == 0 else bytes(range(i % 256)) * 3, headers=headers,
                         timestamp=1_700_000_000_000 + i)
    check(producer.flush(60) == 0, f"{3 * RECORDS_PER_PARTITION} records produced to {topic}")
    return {p: RECORDS_PER_PARTITION for p in range(3)}


def emulated_probe(site: Path, bootstrap: str, topic: str, ends: dict[int, int]) -> dict:
    command = [str(QEMU), "-L", str(ROOT), str(ROOT / "usr" / "bin" / "python3.11"), "-m", "scripts.arch_probe",
               bootstrap, topic, *(f"{p}:{e}" for p, e in ends.items())]
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as cwd:  # the probe beside the wheel's kafkasource, not the checkout's
        (Path(cwd) / "scripts").symlink_to(REPO / "scripts")
        env = {"PATH": "/usr/bin:/bin", "HOME": os.environ["HOME"], "LANG": "C.UTF-8", "PYTHONPATH": f"{site}:{cwd}"}
        result = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=1800)
    print(f"the emulated probe took {time.monotonic() - started:.0f} s", flush=True)
    if result.returncode:
        print(result.stderr[-4000:])
    check(result.returncode == 0, "the probe ran under qemu-aarch64")
    return json.loads(result.stdout)


def main(argv: list[str] | None = None) -> int:
    wheel = chosen_wheel(argv, __doc__.splitlines()[0], "kafkasource-*-manylinux*_aarch64.whl")
    arm64_root()
    with tempfile.TemporaryDirectory(prefix="kafkasource-aarch64-check-") as tmp:
        site = Path(tmp) / "site"
        install(wheel, site)
        broker = local_broker.start()
        try:
            topic = f"arch-probe-{int(time.time())}"
            ends = produce(broker.bootstrap_servers, topic)
            here = arch_probe.probe(broker.bootstrap_servers, topic, ends)
            there = emulated_probe(site, broker.bootstrap_servers, topic, ends)
        finally:
            broker.stop()
            shutil.rmtree(broker.data_dir, ignore_errors=True)
    check(there["machine"] == "aarch64" and there["package"].startswith(str(site)),
          f"the probe ran on aarch64 with the wheel's kafkasource ({there['package']})")
    check(there["native"] and there["load_error"] is None,
          f"the wheel's native extension loads there (librdkafka {there['librdkafka']})")
    check(here["native"], "this machine's native extension loads (pip install -e . built it)")
    rows = len(here["rows"]["native"])
    check(rows == 3 * RECORDS_PER_PARTITION and here["rows"]["native"] == here["rows"]["python"],
          f"here: both read paths give the same {rows} rows")
    for path in ("native", "python"):
        check(there["rows"][path] == here["rows"]["native"], f"aarch64, {path} path: the same {rows} rows as here")
    for decoder in ("native", "python"):
        same = there["avro"][decoder] == here["avro"][decoder]
        reasons = sum(reason is not None for reason in there["avro"][decoder]["reasons"])
        check(same, f"aarch64, {decoder} Avro decoder: the same values and reasons as here ({reasons} bad records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
