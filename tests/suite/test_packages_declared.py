"""Every top-level package is declared everywhere a package must be: installed (setuptools'
include, or the `groupspec` script cannot import it from a fresh clone), type-checked (mypy) and
layered (import-linter). A package missing from one of them worked in the tests (pytest puts the
checkout on sys.path) and failed for users."""
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_PRODUCT = {"tests", "benchmarks", "scripts", "engine", "build"}


def packages() -> set[str]:
    return {p.parent.name for p in ROOT.glob("*/__init__.py") if p.parent.name not in NOT_PRODUCT}


def declared(doc: dict[str, object]) -> dict[str, set[str]]:
    tool = doc["tool"]
    assert isinstance(tool, dict)
    include = {p.rstrip("*") for p in tool["setuptools"]["packages"]["find"]["include"]}
    return {"setuptools include": include,
            "mypy packages": set(tool["mypy"]["packages"]),
            "import-linter root_packages": set(tool["importlinter"]["root_packages"])}


def missing(doc: dict[str, object], found: set[str]) -> list[str]:
    return [f"{name} not in {where}" for where, names in declared(doc).items() for name in sorted(found - names)]


def test_every_package_is_installed_checked_and_layered() -> None:
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "model" in packages() and "render" in packages()
    assert missing(doc, packages()) == []


def test_negative_control_a_package_left_out_is_named() -> None:
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    doc["tool"]["setuptools"]["packages"]["find"]["include"].remove("render*")
    assert missing(doc, packages()) == ["render not in setuptools include"]
