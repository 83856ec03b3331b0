"""The virtualenvs of the test command's runs on other pysparks and pythons (scripts/compat.py,
scripts/plain_install.py): an interpreter of a given Python version, constraints.txt without its pyspark pin, and
a virtualenv kept while a stamp of what it holds matches, so that only a first run downloads."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def find_python(version: str | None) -> str:
    """An interpreter of `version` (PATH, then pyenv's versions), or this one for None."""
    if version is None:
        return sys.executable
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    # pyenv's own builds first: its shim on PATH answers "command not found" unless that version is selected
    candidates = sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}")))
    candidates += [found] if (found := shutil.which(f"python{version}")) else []
    working = [c for c in candidates if subprocess.run([c, "--version"], capture_output=True).returncode == 0]
    found = working[0] if working else None
    if found is None:
        sys.exit(f"no Python {version} (neither python{version} on PATH nor in pyenv's versions); install one "
                 f"(pyenv install {version}) for the test command's run on it")
    return found


def constraints(path: Path) -> Path:
    """constraints.txt without its pyspark pin (each virtualenv has its own pyspark), written to `path`."""
    lines = (REPO / "constraints.txt").read_text().splitlines()
    path.write_text("\n".join(line for line in lines if not line.startswith("pyspark")) + "\n")
    return path


def virtualenv(home: Path, python: str, requirements: list[str]) -> Path:
    """The Python of a virtualenv at `home` made by `python` and holding `requirements` (constraints.txt's versions
    where it pins them), created anew when its stamp differs."""
    stamp = f"{python} {sorted(requirements)} {(REPO / 'constraints.txt').read_text()}"
    venv_python = home / "bin" / "python"
    if (home / "stamp").exists() and (home / "stamp").read_text() == stamp and venv_python.exists():
        return venv_python
    shutil.rmtree(home, ignore_errors=True)
    home.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([python, "-m", "venv", str(home)], check=True)
    pins = constraints(home.parent / "constraints.txt")
    subprocess.run([str(venv_python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", str(pins),
                    *requirements], check=True)
    (home / "stamp").write_text(stamp)
    return venv_python
