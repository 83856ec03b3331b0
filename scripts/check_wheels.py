"""Prove a built x86_64 wheel where users install it, outside the checkout (scripts/wheels.py builds it):

    python3 -m scripts.check_wheels [dist/kafkasource-<version>-cp311-abi3-manylinux2014_x86_64.whl]

Each check runs in a fresh virtualenv without the system's site-packages, from a directory outside the
checkout, with no Rust toolchain on PATH (only the venv's bin, /usr/bin and /bin):

1. no pyspark anywhere: the wheel installs without bringing one, and `import kafkasource` says what to install;
2. a Spark runtime's pyspark that pip did not install (a folder on sys.path, as SPARK_HOME/python is): the
   wheel installs without adding a pyspark distribution, and kafkasource imports that runtime's pyspark;
3. a pip-installed pyspark (constraints.txt's version): installing the wheel leaves its version as it was;
   then the read tests run with readPath=native against the wheel's extension (tests/integration/test_stream_read.py
   and test_fetch.py of tests/unit/ and tests/integration/, `-k native`, from a copy of tests/ and dev/ so
   kafkasource comes from the venv).
Needs pip's cache or PyPI for pyarrow, confluent-kafka, pyspark and pytest; takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONSTRAINTS = REPO / "constraints.txt"
READ_TESTS = ["tests/integration/test_stream_read.py", "tests/unit/test_fetch.py", "tests/integration/test_fetch.py"]


def venv(folder: Path) -> tuple[Path, dict[str, str]]:
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    env = {"PATH": f"{folder / 'bin'}:/usr/bin:/bin", "HOME": os.environ["HOME"], "LANG": "C.UTF-8"}
    env.update({name: os.environ[name] for name in ("JAVA_HOME", "TMPDIR") if name in os.environ})
    return folder / "bin" / "python", env


def pip(python: Path, env: dict[str, str], *args: str) -> str:
    return subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
                          env=env, check=True, capture_output=True, text=True).stdout


def distributions(python: Path, env: dict[str, str]) -> dict[str, str]:
    out = subprocess.run([str(python), "-m", "pip", "list", "--format", "json", "--disable-pip-version-check"],
                         env=env, check=True, capture_output=True, text=True).stdout
    return {d["name"].lower(): d["version"] for d in json.loads(out)}


def python_says(python: Path, env: dict[str, str], code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "-c", code], env=env, cwd=cwd, capture_output=True, text=True)


def check(condition: bool, what: str) -> None:
    print(("ok    " if condition else "FAIL  ") + what, flush=True)
    if not condition:
        sys.exit(1)


def without_pyspark(wheel: Path, tmp: Path) -> None:
    python, env = venv(tmp / "no-pyspark")
    pip(python, env, "-c", str(CONSTRAINTS), str(wheel))
    installed = distributions(python, env)
    result = python_says(python, env, "import kafkasource", cwd=tmp)
    print(result.stderr.strip().splitlines()[-1])
    check("kafkasource" in installed and "pyspark" not in installed,
          f"1. no pyspark: the wheel installed ({', '.join(sorted(installed))}) and brought no pyspark")
    check(result.returncode == 1 and "ImportError: kafkasource needs PySpark 4.0 or newer" in result.stderr
          and "pip install 'kafkasource[spark]'" in result.stderr, "1. import kafkasource says what to install")


def beside_a_runtime_pyspark(wheel: Path, tmp: Path) -> None:
    """A Spark runtime's python/ folder on sys.path: here the tests' pyspark and py4j, linked into a folder that
    a .pth file adds, as spark-submit adds SPARK_HOME/python; pip sees no pyspark distribution there."""
    import py4j
    import pyspark

    runtime = tmp / "spark-runtime-python"
    runtime.mkdir()
    for module in (pyspark, py4j):
        (runtime / module.__name__).symlink_to(Path(module.__file__).parent)
    python, env = venv(tmp / "runtime-pyspark")
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          env=env, check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "spark-runtime.pth").write_text(f"{runtime}\n")
    pip(python, env, "-c", str(CONSTRAINTS), str(wheel))
    installed = distributions(python, env)
    result = python_says(python, env, "import kafkasource, pyspark; print(pyspark.__file__, pyspark.__version__)",
                         cwd=tmp)
    check("kafkasource" in installed and "pyspark" not in installed,
          "2. beside a runtime's pyspark (not pip's): the wheel installed and added no pyspark distribution")
    check(result.returncode == 0 and result.stdout.startswith(str(runtime / "pyspark")),
          f"2. kafkasource imports the runtime's pyspark: {result.stdout.strip() or result.stderr[-500:]}")


def read_tests_with_the_wheel(wheel: Path, tmp: Path) -> None:
    python, env = venv(tmp / "pip-pyspark")
    wanted = re.search(r"^pyspark==(\S+)$", CONSTRAINTS.read_text(), re.MULTILINE).group(1)
    # pytest.ini's options need pytest-rerunfailures
    pip(python, env, "-c", str(CONSTRAINTS), f"pyspark=={wanted}", "pytest>=8", "pytest-rerunfailures>=14",
        "hypothesis>=6", "pandas>=2,<3")
    before = distributions(python, env)["pyspark"]
    pip(python, env, "-c", str(CONSTRAINTS), str(wheel))
    after = distributions(python, env)
    check(before == wanted and after["pyspark"] == before and "kafkasource" in after,
          f"3. beside a pip-installed pyspark {before}: after installing the wheel it is {after['pyspark']}")

    suite = tmp / "suite"
    suite.mkdir()
    for folder in ("tests", "dev"):
        shutil.copytree(REPO / folder, suite / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pytest.ini", suite)
    (suite / ".cache").symlink_to(REPO / ".cache")  # the Kafka jars the broker fixture starts
    probe = python_says(python, env, "import shutil, kafkasource, kafkasource.reading.native as n, "
                        "kafkasource._native as e; "
                        "print(kafkasource.__file__, n.available(), e.__version__, shutil.which('cargo'))", cwd=suite)
    print(probe.stdout.strip() or probe.stderr)
    site = str(tmp / "pip-pyspark")
    check(probe.stdout.startswith(site) and probe.stdout.split()[1:] == ["True", wheel.name.split("-")[1], "None"],
          "3. kafkasource and its native extension load from the venv; no cargo on PATH")
    command = [str(python), "-m", "pytest", *READ_TESTS, "-k", "native", "-q", "-p", "no:cacheprovider"]
    print("$ cd", suite, "&&", " ".join(command), flush=True)
    started = time.monotonic()
    result = subprocess.run(command, cwd=suite, env=env, capture_output=True, text=True)
    summary = (result.stdout.strip().splitlines() or result.stderr.strip().splitlines() or ["no output"])[-1]
    print(f"{summary} ({time.monotonic() - started:.0f} s)")
    if result.returncode:
        print(result.stdout[-6000:])
    check(result.returncode == 0 and " passed" in summary and "skipped" not in summary,
          "3. the native read tests pass against the wheel")


def chosen_wheel(argv: list[str] | None, description: str, pattern: str) -> Path:
    """The wheel the command line names, else the newest in dist/ whose name matches `pattern`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("wheel", type=Path, nargs="?")
    args = parser.parse_args(argv)
    wheel = (args.wheel or max((REPO / "dist").glob(pattern), key=lambda path: path.stat().st_mtime)).resolve()
    print(f"checking {wheel.name}", flush=True)
    return wheel


def main(argv: list[str] | None = None) -> int:
    wheel = chosen_wheel(argv, __doc__.splitlines()[0], "kafkasource-*-manylinux2014_x86_64.whl")
    with tempfile.TemporaryDirectory(prefix="kafkasource-wheel-check-") as tmp:
        without_pyspark(wheel, Path(tmp))
        beside_a_runtime_pyspark(wheel, Path(tmp))
        read_tests_with_the_wheel(wheel, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
