"""Build the release into dist/: the sdist, the pure-Python wheel and wheels with the native extension for
Linux x86_64 and aarch64 that install on any glibc 2.17 or newer (manylinux2014):

    python3 -m scripts.wheels                    # all of them, about 3 minutes per architecture on 2 cores
    python3 -m scripts.wheels --arch x86_64      # the sdist, the pure-Python wheel and one architecture

Every wheel is built from the sdist, so the sdist is known to build. The native wheels compile the extension
with the cargo feature `portable` (OpenSSL and zlib from source; zstd, curl and librdkafka are always built
from source) and link it with zig (the `ziglang` package) against glibc 2.17's symbols, through cargo-zigbuild
under setuptools-rust: the same setup.py as `pip install -e .`, with KAFKASOURCE_NATIVE=portable. Then
`auditwheel show` must call each one manylinux_2_17, or the build fails.

The build tools go into a virtualenv of their own, .cache/wheel-tools (created on first use, from PyPI), with
cargo's build directory beside it, so a second build is incremental. Needs Rust (cargo, rustup) on PATH;
the aarch64 target's standard library is added with rustup when missing.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DIST = REPO / "dist"
TOOLS = REPO / ".cache" / "wheel-tools"
TOOL_PACKAGES = ["ziglang==0.17.1", "cargo-zigbuild==0.24.0", "auditwheel==6.8.2", "build==1.6.1",
                 "setuptools==84.2.1", "setuptools-rust==1.13.0", "wheel"]
# glibc 2.17 is manylinux2014's floor: CentOS 7, Amazon Linux 2 and everything newer have it
ARCHES = {"x86_64": "x86_64-unknown-linux-gnu", "aarch64": "aarch64-unknown-linux-gnu"}
GLIBC = "2.17"
# setuptools-rust calls $CARGO for `cargo metadata` and `cargo rustc`; only the compile goes through zig
CARGO_WRAPPER = """#!/bin/sh
if [ "$1" = rustc ]; then shift; exec cargo-zigbuild rustc "$@"; fi
exec cargo "$@"
"""


def version() -> str:
    text = (REPO / "kafkasource" / "_version.py").read_text(encoding="utf-8")
    return re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE).group(1)


def tools() -> Path:
    """The build tools' virtualenv, created and filled on first use."""
    python = TOOLS / "bin" / "python"
    marker = TOOLS / "installed.txt"
    if not marker.exists() or marker.read_text() != "\n".join(TOOL_PACKAGES):
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(TOOLS)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *TOOL_PACKAGES], check=True)
        marker.write_text("\n".join(TOOL_PACKAGES))
    wrapper = TOOLS / "bin" / "zigcargo"
    wrapper.write_text(CARGO_WRAPPER)
    wrapper.chmod(0o755)
    return python


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    # nice: the native builds take minutes of both cores, which others may be using
    return subprocess.run(["nice", "-n", "10", *command], check=True, **kwargs)


def wheel(python: Path, sdist: Path, env: dict[str, str], plat_name: str | None = None) -> Path:
    """pip builds the wheel from the sdist in a directory of its own, so no build/ of an earlier one leaks in."""
    before = set(DIST.glob("*.whl"))
    command = [str(python), "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(DIST)]
    if plat_name:
        command.append(f"--config-settings=--build-option=--plat-name={plat_name}")
    run(command + [str(sdist)], env=env)
    built, = set(DIST.glob("*.whl")) - before
    return built


def native_wheel(python: Path, sdist: Path, arch: str) -> tuple[Path, str, float]:
    target = ARCHES[arch]
    installed = subprocess.run(["rustup", "target", "list", "--installed"], capture_output=True, text=True,
                               check=True).stdout.split()
    if target not in installed:
        subprocess.run(["rustup", "target", "add", target], check=True)
    env = dict(os.environ,
               PATH=f"{TOOLS / 'bin'}{os.pathsep}{os.environ['PATH']}",  # zig (python -m ziglang), cargo-zigbuild
               CARGO="zigcargo", CARGO_BUILD_TARGET=f"{target}.{GLIBC}", KAFKASOURCE_NATIVE="portable",
               CARGO_TARGET_DIR=str(TOOLS / f"target-{arch}"))  # one per architecture
    # cargo takes the crate as built when its sources are older than its last build, as a file edited while a
    # build ran is, whatever it holds: the crate is always built afresh (its dependencies stay built)
    subprocess.run(["cargo", "clean", "--quiet", "--release", "--package", "kafkasource-native", "--target", target,
                    "--manifest-path", str(REPO / "native" / "Cargo.toml")], env=env, check=True)
    started = time.monotonic()
    built = wheel(python, sdist, env, plat_name=f"manylinux2014_{arch}")
    seconds = time.monotonic() - started
    verdict = subprocess.run([str(TOOLS / "bin" / "auditwheel"), "show", str(built)], capture_output=True,
                             text=True, check=True).stdout
    tag = re.search(r'consistent\s+with\s+the\s+following\s+platform\s+tag:\s+"([^"]+)"', verdict)
    if not tag or tag.group(1) != f"manylinux_2_17_{arch}":
        sys.exit(f"auditwheel does not call {built.name} manylinux_2_17_{arch}:\n{verdict}")
    return built, verdict, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=sorted(ARCHES), action="append",
                        help="build the native wheel for this architecture only (repeatable; default: all)")
    args = parser.parse_args(argv)
    if shutil.which("cargo") is None or shutil.which("rustup") is None:
        sys.exit("building the native wheels needs Rust: cargo and rustup on PATH (https://rustup.rs)")

    python = tools()
    arches = args.arch or sorted(ARCHES)
    DIST.mkdir(exist_ok=True)
    for old in [DIST / f"kafkasource-{version()}.tar.gz", *DIST.glob(f"kafkasource-{version()}-py3-none-any.whl"),
                *[w for arch in arches for w in DIST.glob(f"kafkasource-{version()}-*_{arch}.whl")]]:
        old.unlink(missing_ok=True)

    run([str(python), "-m", "build", "--sdist", "--no-isolation", "-o", str(DIST), str(REPO)],
        stdout=subprocess.DEVNULL)
    sdist = DIST / f"kafkasource-{version()}.tar.gz"
    pure = wheel(python, sdist, dict(os.environ, KAFKASOURCE_NATIVE="0"))
    lines = [f"{sdist.relative_to(REPO)}  {sdist.stat().st_size / 1e6:.2f} MB",
             f"{pure.relative_to(REPO)}  {pure.stat().st_size / 1e6:.2f} MB  (no native extension)"]
    for arch in arches:
        built, verdict, seconds = native_wheel(python, sdist, arch)
        print(verdict.strip())
        lines.append(f"{built.relative_to(REPO)}  {built.stat().st_size / 1e6:.2f} MB  built in {seconds:.0f} s")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
