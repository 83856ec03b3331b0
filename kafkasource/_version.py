"""The release's version: setup.py reads it for the wheel and sdist, native/Cargo.toml carries the same for the
extension (tests/repo/test_packaging.py checks that they agree)."""

__version__ = "0.2.0"
