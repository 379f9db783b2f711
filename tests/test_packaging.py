"""The install files agree with each other and with the README, and `make` refuses a Python it does
not support before installing anything.

Reference: the supported range is written in five places (README.md's "Two commands",
pyproject.toml's ``requires-python``, environment.yml, the header of requirements.txt, the
Makefile's ``PYTHON_VERSIONS``); each is read as the set of Python 3 minor versions it allows.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest itself depends on tomli there
    import tomli as tomllib

from bpe_labs import ROOT as REPO_ROOT

MINORS = range(0, 40)  # Python 3.0 ... 3.39: any range written in the files falls inside

# A pip extra that conda-forge ships as a package of its own. psycopg[binary] (psycopg with a
# bundled libpq) is conda-forge's psycopg, which depends on libpq itself.
CONDA_PACKAGES_OF_EXTRA = {("dask", "distributed"): "distributed", ("psycopg", "binary"): "psycopg"}


# Packages conda-forge does not ship: environment.yml installs them with pip (its pip: section).
PYPI_ONLY = {"pylti1p3next", "lti1p3platform"}


def pip_requirements() -> dict[str, SpecifierSet]:
    """requirements.txt as {conda-comparable package name: version bounds}."""
    packages = {}
    for line in (REPO_ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        packages[name] = requirement.specifier
        for extra in requirement.extras:
            packages[CONDA_PACKAGES_OF_EXTRA[(name, extra)]] = requirement.specifier
    return packages


def conda_dependencies() -> dict[str, SpecifierSet]:
    """environment.yml's dependencies (``name>=a,<b``) as {package name: version bounds}."""
    spec = yaml.safe_load((REPO_ROOT / "environment.yml").read_text(encoding="utf-8"))
    packages = {}
    for entry in spec["dependencies"]:
        # the project itself, installed by pip once its dependencies are there
        if isinstance(entry, dict):
            assert list(entry) == ["pip"] and entry["pip"][-1] == "--editable .", (
                f"environment.yml: {entry!r}"
            )
            # and the packages conda-forge does not ship, by pip before it
            for line in entry["pip"][:-1]:
                requirement = Requirement(line)
                assert canonicalize_name(requirement.name) in PYPI_ONLY, (
                    f"environment.yml: {line!r} is in the pip: section, but not one of the "
                    "packages only PyPI ships"
                )
                packages[canonicalize_name(requirement.name)] = requirement.specifier
            continue
        if entry == "pip":
            continue
        assert isinstance(entry, str), (
            f"environment.yml: {entry!r} (a pip: section) is not in requirements.txt's form"
        )
        name, bounds = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(.*)", entry.strip()).groups()
        packages[canonicalize_name(name)] = SpecifierSet(bounds.replace(" ", ""))
    return packages


def minors_allowed(specifier: SpecifierSet) -> set[str]:
    return {f"3.{minor}" for minor in MINORS if specifier.contains(f"3.{minor}")}


def minors_between(low: str, high: str) -> set[str]:
    return minors_allowed(SpecifierSet(f">={low},<={high}"))


def stated_python_ranges() -> dict[str, set[str]]:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    two_commands = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    requirements_header = (
        (REPO_ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()[0]
    )
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    ranges = {
        "README.md (Two commands)": re.search(
            r"Python (3\.\d+)[–-](3\.\d+)", two_commands
        ).groups(),
        "requirements.txt (first line)": re.search(
            r"Python (3\.\d+)[–-](3\.\d+)", requirements_header
        ).groups(),
    }
    ranges = {where: minors_between(*bounds) for where, bounds in ranges.items()}
    ranges["pyproject.toml requires-python"] = minors_allowed(
        SpecifierSet(pyproject["project"]["requires-python"])
    )
    ranges["environment.yml python"] = minors_allowed(conda_dependencies()["python"])
    ranges["Makefile PYTHON_VERSIONS"] = set(
        re.search(r"^PYTHON_VERSIONS := (.+)$", makefile, re.M).group(1).split()
    )
    return ranges


def supported() -> set[str]:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return minors_allowed(SpecifierSet(pyproject["project"]["requires-python"]))


def interpreter(version: str) -> str | None:
    """A real interpreter of that minor version on this machine (pyenv's, else on PATH), or None."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    installed = sorted(pyenv_root.glob(f"versions/{version}.*/bin/python{version}"))
    if installed:
        return str(installed[-1])
    found = shutil.which(f"python{version}")
    if found and subprocess.run([found, "-c", "pass"], capture_output=True).returncode == 0:
        return found  # a pyenv shim exists for versions that are not installed: it fails when run
    return None


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPO_ROOT), *args],
                          capture_output=True, text=True, timeout=120)


def test_requirements_and_environment_list_the_same_packages_and_bounds():
    pip, conda = pip_requirements(), conda_dependencies()
    conda.pop("python")
    assert sorted(pip) == sorted(conda), (
        "requirements.txt and environment.yml must list the same packages"
    )
    differing = {name: (str(pip[name]), str(conda[name])) for name in pip
                 if pip[name] != conda[name]}
    assert not differing, f"version bounds differ (requirements.txt, environment.yml): {differing}"


def test_readme_pyproject_environment_and_makefile_state_the_same_python_range():
    ranges = stated_python_ranges()
    assert all(ranges.values()), ranges
    assert len({frozenset(r) for r in ranges.values()}) == 1, (
        f"the stated Python ranges differ: {ranges}"
    )


def test_files_cite_only_tests_that_exist():
    cited = set()
    for name in ("README.md", "requirements.txt", "environment.yml", "Makefile", "pyproject.toml",
                 ".ci/run"):
        cited |= set(re.findall(r"tests/[\w/]+\.py",
                                (REPO_ROOT / name).read_text(encoding="utf-8")))
    assert "tests/test_packaging.py" in cited
    missing = {path for path in cited if not (REPO_ROOT / path).is_file()}
    assert not missing, f"cited but missing: {sorted(missing)}"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_accepts_each_supported_python_found_here():
    found = {version: interpreter(version) for version in sorted(supported())}
    found = {version: path for version, path in found.items() if path}
    # the one running the tests
    found[f"{sys.version_info.major}.{sys.version_info.minor}"] = sys.executable
    for version, path in found.items():
        result = make("check-python", f"PYTHON={path}")
        assert result.returncode == 0, f"Python {version} ({path}): {result.stderr}"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("version", ["2.7", "3.9"])
def test_make_stops_on_an_unsupported_python_with_one_sentence_before_installing(version, tmp_path):
    path = interpreter(version)
    if path is None:
        pytest.skip(f"no Python {version} on this machine")
    assert version not in supported()
    low, high = (pick(supported(), key=lambda v: tuple(map(int, v.split("."))))
                 for pick in (min, max))
    venv = tmp_path / "venv"
    for goal in ("test", "demo"):
        result = make(goal, f"PYTHON={path}", f"VENV={venv}")
        assert result.returncode != 0
        assert result.stderr.startswith(
            f"BPE Labs needs Python {low} to {high}, but {path} is Python {version}: "
            f"run make again with a supported one, e.g. make {goal} PYTHON=python3.12.\n")
        assert "-m venv" not in result.stdout and not venv.exists(), (
            "the check must come before the venv and pip"
        )


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_says_so_when_the_python_is_missing(tmp_path):
    missing = tmp_path / "no-such-python"
    result = make("setup", f"PYTHON={missing}", f"VENV={tmp_path / 'venv'}")
    assert result.returncode != 0
    assert f"but there is no {missing} on this machine" in result.stderr
    assert not (tmp_path / "venv").exists()


def test_the_project_installs_requirements_txt_and_declares_its_course_and_command():
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["build-system"]["build-backend"] == "setuptools.build_meta"
    assert pyproject["project"]["dynamic"] == ["dependencies"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["dependencies"] == {
        "file": ["requirements.txt"]
    }
    assert pyproject["project"]["entry-points"]["autograder.courses"] == {
        "bpe_labs": "bpe_labs.course:COURSE"
    }
    assert pyproject["project"]["scripts"] == {"bpe-labs": "bpe_labs.cli:script"}
    # make's set-up installs the project after its requirements (then notebooks run from any folder)
    recipe = (
        (REPO_ROOT / "Makefile")
        .read_text(encoding="utf-8")
        .split("$(VENV)/.installed:", 1)[1]
        .split("\n\n", 1)[0]
    )
    assert recipe.index("-r requirements.txt") < recipe.index("--editable .")
