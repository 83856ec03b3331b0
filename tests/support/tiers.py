"""Which tier a test is in (the folder under tests/) and the markers that say what it costs, from where it is and
the fixtures it asks for: conftest.py adds them at collection, so `-m` selects by cost without a module marking
itself (pytest.ini lists the markers)."""

from __future__ import annotations

from pathlib import Path

TIERS = ("unit", "repo", "integration", "system")
# the session fixtures that start a server: the local broker, the schema registry, the secured brokers
BROKERS = frozenset({"kafka_broker", "schema_registry", "sasl", "ssl"})
SPARK = frozenset({"spark"})
# what a unit or repo test must not ask for: they start nothing
STARTS_SOMETHING = BROKERS | SPARK


def tier(path: Path, tests_root: Path) -> str | None:
    """The tier folder a test module lies in, or None outside them. Both paths resolved: the plain-install run reaches
    tests/ through a link."""
    parts = path.resolve().relative_to(tests_root.resolve()).parts
    return parts[0] if len(parts) > 1 and parts[0] in TIERS else None


def cost_markers(tier_name: str | None, fixtures: set[str]) -> list[str]:
    """`broker` for a test that uses a broker or the registry the session starts, `spark` for one that uses the
    session's Spark, `system` for every test of tests/system/ (which start processes of their own)."""
    found = []
    if fixtures & BROKERS:
        found.append("broker")
    if fixtures & SPARK:
        found.append("spark")
    if tier_name == "system":
        found.append("system")
    return found


def misplaced(tier_name: str | None, fixtures: set[str]) -> str | None:
    """Why a test is in the wrong tier, or None: unit and repo tests start no broker, registry or Spark."""
    started = sorted(fixtures & STARTS_SOMETHING)
    if tier_name in ("unit", "repo") and started:
        return (f"asks for {', '.join(started)}, which start a server or Spark, and tests/{tier_name}/ starts nothing "
                "(move it to tests/integration/ or tests/system/)")
    return None
