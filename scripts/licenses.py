"""Collect the licence texts of everything the portable native extension links in, into licenses/:

    python3 -m scripts.licenses

The portable build (scripts/wheels.py, cargo feature `portable`) links into kafkasource/_native: the Rust crates
below (those `cargo tree` lists as normal, non-proc-macro dependencies, which end up in the binary), the Rust
standard library, and the C libraries the -sys crates compile from the sources they carry (librdkafka with
what it bundles, OpenSSL, zlib, zstd, curl). The texts are copied from the crates' own sources in cargo's
registry (fetched by `cargo metadata`), so rerun this after changing native/Cargo.toml or Cargo.lock and commit
the result. licenses/README.md lists each component, its version, its licence and its files.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "native" / "Cargo.toml"
OUT = REPO / "licenses"
FEATURES = "portable"
TARGETS = ("x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu")
LICENSE_FILE = re.compile(r"^(LICEN[CS]E|COPYING|COPYRIGHT)", re.IGNORECASE)

# C libraries compiled from the sources a crate carries: (name, crate, licence, files inside the crate)
C_LIBRARIES = [
    ("librdkafka (with the code it bundles: lz4, crc32c, cJSON, nanopb, OpenTelemetry protos, ...)",
     "rdkafka-sys", "BSD-2-Clause (bundled code: see the file)", ["librdkafka/LICENSES.txt"]),
    ("OpenSSL", "openssl-src", "Apache-2.0", ["openssl/LICENSE.txt"]),
    ("zlib", "libz-sys", "Zlib", ["src/zlib/LICENSE"]),
    ("zstd", "zstd-sys", "BSD-3-Clause OR GPL-2.0 (used under BSD-3-Clause)", ["zstd/LICENSE"]),
    ("curl", "curl-sys", "curl", ["curl/COPYING"]),
]


def cargo(*args: str) -> str:
    return subprocess.run(["cargo", *args, "--manifest-path", str(MANIFEST)], check=True, capture_output=True,
                          text=True).stdout


def linked_crates() -> set[tuple[str, str]]:
    """(name, version) of the crates compiled into the extension on either target, our own excepted."""
    crates = set()
    for target in TARGETS:
        out = cargo("tree", "-e", "normal,no-proc-macro", "--features", FEATURES, "--target", target,
                    "--prefix", "none", "--format", "{p}")
        for line in out.splitlines():
            name, version = line.split()[:2]
            crates.add((name, version.lstrip("v")))
    return {crate for crate in crates if crate[0] != "kafkasource-native"}


def packages() -> dict[tuple[str, str], dict]:
    metadata = json.loads(cargo("metadata", "--format-version", "1", "--features", FEATURES))
    return {(package["name"], package["version"]): package for package in metadata["packages"]}


def rust_std_licenses() -> tuple[str, list[Path]]:
    sysroot = Path(subprocess.run(["rustc", "--print", "sysroot"], check=True, capture_output=True,
                                  text=True).stdout.strip())
    version = subprocess.run(["rustc", "--version"], check=True, capture_output=True, text=True).stdout.split()[1]
    texts = sysroot / "share" / "doc" / "rust" / "licenses"
    return version, [texts / "Apache-2.0.txt", texts / "MIT.txt"]


def main() -> int:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir()
    found = packages()
    rows = []

    for title, crate, licence, files in C_LIBRARIES:
        (name, version), = [key for key in found if key[0] == crate]
        root = Path(found[name, version]["manifest_path"]).parent
        slug = crate.removesuffix("-sys").removesuffix("-src")
        written = []
        for file in files:
            target = OUT / f"{slug}-{Path(file).name}"
            shutil.copyfile(root / file, target)
            written.append(target.name)
        rows.append((title, f"as carried by {crate} {version}", licence, written))

    version, texts = rust_std_licenses()
    (OUT / "rust-std").mkdir()
    for text in texts:
        shutil.copyfile(text, OUT / "rust-std" / text.name)
    rows.append(("Rust standard library", f"rustc {version}", "MIT OR Apache-2.0",
                 [f"rust-std/{text.name}" for text in texts]))

    for name, version in sorted(linked_crates()):
        package = found[name, version]
        root = Path(package["manifest_path"]).parent
        folder = OUT / "crates" / f"{name}-{version}"
        folder.mkdir(parents=True)
        written = []
        for file in sorted(root.iterdir()):
            if file.is_file() and LICENSE_FILE.match(file.name):
                shutil.copyfile(file, folder / file.name)
                written.append(f"crates/{folder.name}/{file.name}")
        if not written:  # a crate that ships no licence file: say what it declares and who wrote it
            (folder / "LICENSE-DECLARED").write_text(
                f"{name} {version} ships no licence file. Its Cargo.toml declares the licence "
                f"{package['license']} and the authors {', '.join(package['authors']) or '(none listed)'}.\n"
                f"Repository: {package.get('repository') or '(none listed)'}\n", encoding="utf-8")
            written.append(f"crates/{folder.name}/LICENSE-DECLARED")
        rows.append((f"{name} (Rust crate)", version, package["license"], written))

    lines = ["# Third-party licences of the native extension", "",
             "What the portable build of `kafkasource/_native` (the wheels for manylinux2014) links in, with the",
             "licence texts as each component ships them. Written by `python3 -m scripts.licenses`.", "",
             "| component | version | licence | files |", "| --- | --- | --- | --- |"]
    lines += [f"| {title} | {version} | {licence} | {', '.join(files)} |" for title, version, licence, files in rows]
    (OUT / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(rows)} components, licence texts in {OUT.relative_to(REPO)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
