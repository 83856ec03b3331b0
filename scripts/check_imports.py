"""Check that every import kafkasource makes at run time is of a distribution its declared requirements bring:

    python3 -m scripts.check_imports   # exit 1 naming each import nothing declared for its module

Users install only what the docs name: `pip install pyspark kafkasource` (or `kafkasource[spark]`), plus the
extra of a feature they use (`registry`, `metrics`, `aws`, `azure`, `gcp`). The tests run with the `test` extra,
which brings all of those and more (pandas, hence numpy; pyspark's Connect client), so an import that only the
test extra satisfies passes every test and fails on the user's machine. This check reads the package's source
(`ast`, nothing imported) and the installed metadata (what pip gives users for each extra, followed through the
requirements of what it brings), so such a gap fails in seconds.

Each module may rely on install_requires and the `spark` extra (pyspark is a peer requirement: every user has
one, but not the extras of pyspark's own, such as `pyspark[connect]`'s pandas), plus the extras EXTRAS gives its
path. The environment must have every extra installed (scripts/test.sh installs `.[test]` first): an import of
a module that no installed distribution holds is reported too, as it could not be checked.

A method call that needs a package (`table.to_numpy()` needs numpy) is no import and is not seen here.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

# pytest (the test extra) requires packaging, so it is installed wherever this check runs
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "kafkasource"
DISTRIBUTION = "kafkasource"

# What every module may rely on besides install_requires: pyspark (the `spark` extra) is there wherever the
# package runs; setup.py leaves it out of install_requires only so as not to add a second one to a Spark runtime.
ALWAYS = ("spark",)

# The extras a module may rely on besides ALWAYS, by path prefix (relative to the repository). Only the modules
# that a feature's option or call reaches, and that the rest of the package imports lazily (inside the function
# that serves that feature), belong here: the rest of the package imports without these extras.
EXTRAS = {
    # valueFormat/keyFormat avro, protobuf, json-schema (docs/schema-registry.md): the registry client, fastavro,
    # google.protobuf, jsonschema and its referencing, all from confluent-kafka[schemaregistry,avro,json,protobuf]
    "kafkasource/formats/": ("registry",),
    # kafkasource.metrics.serve (docs/monitoring.md): collector.py writes the exposition with prometheus_client;
    # exporter.py probes for it in serve() to name the extra when it is missing
    "kafkasource/metrics/collector.py": ("metrics",),
    "kafkasource/metrics/exporter.py": ("metrics",),
    # oauthProvider's token providers (docs/cloud/): each imports its cloud's library when it makes a token
    "kafkasource/cluster/sign_in/aws.py": ("aws",),
    "kafkasource/cluster/sign_in/azure.py": ("azure",),
    "kafkasource/cluster/sign_in/gcp.py": ("gcp",),
}


@dataclass(frozen=True)
class Import:
    path: str  # relative to the package root's parent: kafkasource/writing/digest.py
    line: int
    module: str  # as written: pyarrow.compute, google.auth.transport.requests
    in_function: bool


@dataclass(frozen=True)
class Metadata:
    """What the check knows of the environment: the requirement lines of each installed distribution (by
    normalized name, the package's own included) and the distributions that hold each top-level module (and, for
    a namespace shared by several distributions such as google or azure, each `namespace.module` too)."""

    requires: dict[str, list[str]]
    owners: dict[str, list[str]]


@dataclass(frozen=True)
class Problem:
    imported: Import
    distributions: tuple[str, ...]  # empty: no installed distribution holds the module
    extras: tuple[str, ...]

    def __str__(self) -> str:
        where = f"{self.imported.path}:{self.imported.line}: imports {self.imported.module}"
        if not self.distributions:
            return (
                f"{where}, which no installed distribution holds, so it cannot be checked; install the package with "
                f"the extra that should bring it (scripts/test.sh installs .[test]), or declare it in setup.py"
            )
        return (
            f"{where} (distribution {', '.join(self.distributions)}), which neither install_requires nor the "
            f"extra(s) {', '.join(self.extras)} bring; declare it in setup.py or import it only in a module that "
            f"EXTRAS in scripts/check_imports.py gives an extra bringing it"
        )


class _ImportCollector(ast.NodeVisitor):
    """Every absolute import of one file, at any depth (module level, functions, classes, try blocks), except
    those under `if TYPE_CHECKING:`, which never run (its else branch does, and is visited)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.depth = 0  # of function bodies
        self.found: list[Import] = []

    def _add(self, node: ast.stmt, module: str) -> None:
        self.found.append(Import(self.path, node.lineno, module, self.depth > 0))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:  # relative imports are the package's own
            self._add(node, node.module)

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for statement in node.orelse:
                self.visit(statement)
        else:
            self.generic_visit(node)

    def _visit_function(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_function


def _is_type_checking(test: ast.expr) -> bool:
    """`TYPE_CHECKING` or `typing.TYPE_CHECKING`."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def collect_imports(package_root: Path) -> list[Import]:
    """Every import of every .py file under package_root, the package's own and the standard library's included."""
    found: list[Import] = []
    for file in sorted(package_root.rglob("*.py")):
        collector = _ImportCollector(file.relative_to(package_root.parent).as_posix())
        collector.visit(ast.parse(file.read_text(encoding="utf-8"), filename=str(file)))
        found.extend(collector.found)
    return found


def is_external(module: str, package: str) -> bool:
    """False for the package's own modules (its compiled kafkasource._native too), the standard library's and
    __future__."""
    top = module.partition(".")[0]
    return top != package and top != "__future__" and top not in sys.stdlib_module_names


def installed_metadata() -> Metadata:
    """The metadata of the current environment, as pip would give it to users."""
    requires: dict[str, list[str]] = {}
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"] or "")
        requires.setdefault(name, list(dist.requires or []))
    owners = {module: sorted(set(names)) for module, names in metadata.packages_distributions().items()}
    for namespace in [module for module, names in owners.items() if len(names) > 1]:
        for name in owners[namespace]:
            for module in _submodules(metadata.distribution(name), namespace):
                owners.setdefault(module, [])
                owners[module] = sorted({*owners[module], name})
    return Metadata(requires, owners)


def _submodules(dist: metadata.Distribution, namespace: str) -> set[str]:
    """`namespace.x` for each module or package x that dist's files put under the folder namespace/."""
    found = set()
    for file in dist.files or []:
        parts = file.parts
        if len(parts) >= 2 and parts[0] == namespace and (len(parts) > 2 or parts[1].endswith((".py", ".so"))):
            found.add(f"{namespace}.{parts[1].partition('.')[0]}")
    return found


def distributions_of(module: str, meta: Metadata) -> tuple[str, ...]:
    """The distributions that hold module: those of `namespace.x` where a namespace is shared, else those of its
    top-level module; empty where none is installed."""
    parts = module.split(".")
    for prefix in (".".join(parts[:2]), parts[0]):
        if prefix in meta.owners:
            return tuple(canonicalize_name(name) for name in meta.owners[prefix])
    return ()


def _applies(requirement: Requirement, extras: Iterable[str]) -> bool:
    """Whether pip installs requirement when its distribution is asked for with extras (python_version and the
    platform's markers are those of this environment)."""
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in ("", *extras))


def brought_by(extras: Iterable[str], meta: Metadata, package: str = DISTRIBUTION) -> set[str]:
    """The distributions (normalized names) that `pip install "package[extras]"` brings: its install_requires,
    those extras' requirements, and theirs in turn with the extras each asks for (confluent-kafka[avro] brings
    fastavro). Distributions not installed here are followed no further."""
    brought: set[str] = set()
    seen: set[tuple[str, str]] = set()
    pending = [(canonicalize_name(package), tuple(extras))]
    while pending:
        name, wanted = pending.pop()
        for line in meta.requires.get(name, []):
            requirement = Requirement(line)
            if not _applies(requirement, wanted):
                continue
            dependency = canonicalize_name(requirement.name)
            brought.add(dependency)
            asked = tuple(sorted(requirement.extras))
            for key in [(dependency, extra) for extra in ("", *asked)]:
                if key not in seen:
                    seen.add(key)
                    pending.append((dependency, asked))
    return brought


def extras_for(path: str) -> tuple[str, ...]:
    """The extras the module at path (relative to the repository) may rely on: ALWAYS and what EXTRAS gives it."""
    extras = list(ALWAYS)
    for prefix, given in EXTRAS.items():
        if path.startswith(prefix):
            extras.extend(extra for extra in given if extra not in extras)
    return tuple(extras)


def find_problems(package_root: Path, meta: Metadata) -> list[Problem]:
    """Each external import under package_root whose distribution neither install_requires nor its module's
    extras bring (or that no installed distribution holds)."""
    problems = []
    brought: dict[tuple[str, ...], set[str]] = {}
    for imported in collect_imports(package_root):
        if not is_external(imported.module, package_root.name):
            continue
        extras = extras_for(imported.path)
        if extras not in brought:
            brought[extras] = brought_by(extras, meta)
        distributions = distributions_of(imported.module, meta)
        # a namespace module several distributions hold: any one of them brought is enough
        if not distributions or not brought[extras].intersection(distributions):
            problems.append(Problem(imported, distributions, extras))
    return problems


def main() -> int:
    problems = find_problems(PACKAGE, installed_metadata())
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} import(s) not brought by what users install", file=sys.stderr)
        return 1
    external = [i for i in collect_imports(PACKAGE) if is_external(i.module, PACKAGE.name)]
    print(f"{len(external)} imports of other distributions, each brought by what its module's users install")
    return 0


if __name__ == "__main__":
    sys.exit(main())
