"""A Python for Spark's workers that imports this interpreter's packages (pyspark, pyarrow, confluent-kafka, ...)
but not kafkasource, so a job's executors get kafkasource only from what the job ships them (--py-files,
spark.submit.pyFiles), as on a node where it was never installed.

    python3 -m dev.bare_python        prints the interpreter's path, making it first if needed

A virtualenv without system site-packages, whose only addition is a .pth file listing this interpreter's
site-packages directories. Python puts the directories a .pth lists on sys.path without reading the .pth files
inside them, so the editable install's (`pip install -e .` puts the checkout on sys.path through one) stays
unread, while every installed package imports. Made in a second (nothing is installed) and kept in
.cache/bare-python/ under a hash of the interpreter and those directories.
"""

from __future__ import annotations

import hashlib
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

from dev.process import CACHE_DIR

CACHE = CACHE_DIR / "bare-python"
# what must import there (the executors' read) and what must not
NEEDED = ("pyspark", "pyarrow", "confluent_kafka", "xxhash")
ABSENT = ("kafkasource", "pyspark_kafkasource")


def _site_dirs() -> list[str]:
    return [path for path in [*site.getsitepackages(), site.getusersitepackages()] if Path(path).is_dir()]


def _check(python: Path) -> str | None:
    """What is wrong with the interpreter at `python`, or None. Run from / so the working directory (which a
    Python worker puts on sys.path) holds no kafkasource."""
    probe = ("import importlib.util, sys\n"
             f"missing = [n for n in {NEEDED!r} if importlib.util.find_spec(n) is None]\n"
             f"present = [n for n in {ABSENT!r} if importlib.util.find_spec(n) is not None]\n"
             "print(missing, present)\n")
    found = subprocess.run([str(python), "-c", probe], cwd="/", capture_output=True, text=True, timeout=60)
    if found.returncode or found.stdout.strip() != "[] []":
        return f"{python} -c ...: {found.stdout.strip() or found.stderr[-1000:]} (missing, importable though absent)"
    return None


def interpreter() -> Path:
    """bin/python of the bare environment for this interpreter: cached, or made now. RuntimeError when it cannot
    import what a worker needs, or can import kafkasource (installed other than editable, say)."""
    dirs = _site_dirs()
    digest = hashlib.sha256(f"{sys.executable}\0{sys.version}\0{dirs}".encode()).hexdigest()[:16]
    home = CACHE / digest
    python = home / "bin" / "python"
    if not python.exists():
        work = CACHE / f"{digest}.work"
        shutil.rmtree(work, ignore_errors=True)
        venv.EnvBuilder(system_site_packages=False, with_pip=False, symlinks=True).create(work)
        packages, = (work / "lib").glob("python3*/site-packages")
        (packages / "installed-packages.pth").write_text("".join(f"{path}\n" for path in dirs))
        work.rename(home)
    problem = _check(python)
    if problem:
        raise RuntimeError(f"the bare Python in {home} is not what the tests need: {problem}")
    return python


def main() -> int:
    print(interpreter())
    return 0


if __name__ == "__main__":
    sys.exit(main())
