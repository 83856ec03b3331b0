"""Jars from Maven Central into a git-ignored cache folder, by Apache Maven (`mvn dependency:copy`), once: the folder
holds a `.complete` stamp when every artifact arrived."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def fetch(artifacts: list[str], folder: Path, purpose: str) -> list[Path]:
    """The jars of `artifacts` (group:artifact:version, without their dependencies) in `folder`, fetched on the first
    call; `purpose` says in an error what they were for."""
    marker = folder / ".complete"
    if not marker.exists():
        mvn = shutil.which("mvn")
        if mvn is None:
            raise RuntimeError(f"`mvn` is not on PATH: Apache Maven fetches {purpose}")
        folder.mkdir(parents=True, exist_ok=True)
        for artifact in artifacts:
            result = subprocess.run([mvn, "-q", "-B", "dependency:copy", f"-Dartifact={artifact}",
                                     f"-DoutputDirectory={folder}"], capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(f"Maven could not fetch {artifact} ({purpose}):\n"
                                   + (result.stdout + result.stderr)[-3000:])
        marker.touch()
    return sorted(folder.glob("*.jar"))
