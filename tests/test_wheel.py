"""The project as a wheel: built offline from a copy of this checkout, installed into a folder of
its own (``pip install --target``), and used from a folder outside the checkout with the checkout
nowhere on the Python path: this environment's Python and dependencies, with the install first on
``PYTHONPATH``, so that ``bpe_labs`` and ``autograder`` come from the wheel alone.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from bpe_labs import ROOT as REPO_ROOT
from bpe_labs.examples import load_cases

# Left out of the copy the wheel is built from: what is not the project's source.
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv*", "out", "out-*", "build", "dist", "*.egg-info",
                                    "__pycache__",
                                    ".pytest_cache", ".hypothesis", ".ipynb_checkpoints")
GRADED = ["toy-correct", "toy-untouched", "toy-merge-overlaps"]


def clean_environment() -> dict[str, str]:
    """This process's environment without anything that points at the checkout or the course."""
    return {key: value for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "AUTOGRADER_COURSE", "BPE_LABS_DATA", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source") / "bpe-labs"
    shutil.copytree(REPO_ROOT, source, ignore=NOT_SOURCE, symlinks=True)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--quiet", "-w", str(out),
                    str(source)], check=True, capture_output=True, text=True, timeout=300)
    (built,) = out.glob("bpe_labs-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The wheel installed into a folder of its own (its packages and its ``bpe-labs`` script)."""
    target = tmp_path_factory.mktemp("installed") / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet",
                    "--target", str(target),
                    str(wheel)], check=True, capture_output=True, text=True, timeout=300)
    return target


def run(
    installed: Path, *args: str, cwd: Path, timeout: float = 600
) -> subprocess.CompletedProcess:
    """``args`` with this environment's Python and packages,
    and the wheel's install first on the path."""
    env = clean_environment()
    env["PYTHONPATH"] = str(installed)
    env["PATH"] = (
        f"{installed / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
        f"{env.get('PATH', '')}"
    )
    args = [sys.executable if arg == "python" else arg for arg in args]
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def test_the_wheel_carries_both_packages_and_the_course_files(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(name).decode() for name in names
                            if name.endswith(".dist-info/entry_points.txt"))
    labs = sorted(path.name for path in (REPO_ROOT / "solutions").glob("*.ipynb"))
    expected = {
        "autograder/grading/grade.py",
        "autograder/course.py",
        "autograder/kernel/sandbox_launcher.py",
        "autograder/gradescope_files/run_autograder",
        "autograder/gradescope_files/setup.sh",
        "autograder/service/app.py",
        "autograder/release/submit_helper.py",
        "autograder/service/templates/base.html",
        "autograder/service/migrations/env.py",
        "autograder/service/migrations/script.py.mako",
        "autograder/service/migrations/versions/0001_initial.py",
        "autograder/service/routes/api.py",
        "autograder/service/migrations/versions/0002_lti.py",
        "autograder/service/lti/adapter.py",
        "autograder/service/lti/routes.py",
        "autograder/service/templates/lti_choose.html",
        "bpe_labs/course.py",
        "bpe_labs/hidden.py",
        "bpe_labs/reference/char_bpe.py",
        "bpe_labs/standins/ny_constitution.py",
        *[
            f"bpe_labs/files/{folder}/{lab}"
            for folder in ("solutions", "notebooks")
            for lab in labs
        ],
        *[
            f"bpe_labs/files/data/{path.relative_to(REPO_ROOT / 'data').as_posix()}"
            for path in (REPO_ROOT / "data").rglob("*")
            if path.is_file()
        ],
        *[
            f"bpe_labs/files/examples/{path.relative_to(REPO_ROOT / 'examples').as_posix()}"
            for path in (REPO_ROOT / "examples").rglob("*")
            if path.is_file()
        ],
    }
    assert expected <= names, sorted(expected - names)
    assert not [name for name in names if name.startswith(("tests/", "benchmarks/", "docs/"))
                or "__pycache__" in name]
    assert "bpe_labs = bpe_labs.course:COURSE" in entry_points.split("[autograder.courses]", 1)[1]
    assert "bpe-labs = bpe_labs.cli:script" in entry_points.split("[console_scripts]", 1)[1]


def test_the_installed_packages_come_from_the_wheel_not_the_checkout(installed, tmp_path):
    code = ("import json, sys, autograder, bpe_labs; from autograder.course import current; "
            "print(json.dumps([autograder.__file__, bpe_labs.__file__, str(current().root), "
            "sys.path]))")
    engine, course, root, path = json.loads(
        run(installed, "python", "-c", code, cwd=tmp_path).stdout
    )
    checkout = str(REPO_ROOT.resolve())
    # "" is the cwd; the environment's own site-packages may sit inside the checkout (.venv), its
    # code may not
    inside = [entry for entry in path if str((tmp_path / entry).resolve()).startswith(checkout)
              and Path(entry).resolve().relative_to(checkout).parts[:1] not in ((".venv",),)]
    assert not inside, path
    # the course found through its entry point, its files in the package
    for where in (engine, course, root):
        assert Path(where).resolve().is_relative_to(installed.resolve()), where
    assert Path(root).name == "files"


def test_bpe_labs_grades_the_bundled_examples_from_any_folder(installed, tmp_path):
    examples = Path(run(installed, "python", "-c",
                        "import bpe_labs; print(bpe_labs.ROOT / 'examples' / 'submissions')",
                        cwd=tmp_path).stdout.strip())
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    for name in GRADED:
        shutil.copy(examples / f"{name}.ipynb", submissions)
    run(installed, str(installed / "bin" / "bpe-labs"), "grade", "submissions", "--out", "out",
        "--workers", "2", "--quiet", cwd=tmp_path)
    with open(tmp_path / "out" / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    cases = {case["id"]: case for case in load_cases()}
    for name in GRADED:
        assert rows[name]["status"] == "graded", rows[name]
        got = {part: float(rows[name][part]) for part in cases[name]["expected"]}
        assert got == {part: float(points) for part, points in cases[name]["expected"].items()}, (
            name
        )


def test_a_solution_notebook_runs_with_nbconvert_from_any_folder(installed, tmp_path):
    solutions = run(
        installed, "python", "-c", "import bpe_labs; print(bpe_labs.ROOT / 'solutions')",
        cwd=tmp_path,
    ).stdout.strip()
    shutil.copy(Path(solutions) / "toy_bpe.ipynb", tmp_path / "toy_bpe.ipynb")
    run(installed, "python", "-m", "nbconvert", "--to", "notebook", "--execute", "toy_bpe.ipynb",
        "--output", "executed.ipynb", cwd=tmp_path)
    executed = nbformat.read(tmp_path / "executed.ipynb", as_version=4)
    code = [cell for cell in executed.cells if cell.cell_type == "code"]
    # every cell ran, hidden tests included
    assert code and all(cell.execution_count for cell in code)
    assert not [output for cell in code for output in cell.outputs if output.output_type == "error"]
    assert any("bpe_labs.reference" in cell.source for cell in code)


KERNEL_PROBE = """
import json, sys, tempfile
from pathlib import Path
from autograder.kernel.session import KernelSession, Limits
installed = Path(sys.argv[1])
targets = {"solution": installed / "bpe_labs" / "files" / "solutions" / "toy_bpe.ipynb",
           "reference": installed / "bpe_labs" / "reference" / "char_bpe.py",
           "document": next((installed / "bpe_labs" / "files" / "data" / "documents").glob("*.md"))}
assert all(path.is_file() for path in targets.values())
probe = "import ctypes, \
json; libc = ctypes.CDLL(None); print(json.dumps({name: libc.open(path.encode(), 0) >= 0 for name, \
path in %r.items()}))"
with tempfile.TemporaryDirectory() as folder:
    with KernelSession(Path(folder) / "work", Limits(cell_seconds=30)) as session:
        run = session.run_cell(probe % {name: str(path) for name, path in targets.items()}, \
capture=True)
        print(json.dumps([session.isolation, json.loads(run.stdout.strip().splitlines()[-1])]))
"""


@pytest.mark.parametrize("copies", ["installed", "checkout-first"])
def test_a_kernel_cannot_read_the_installed_course(installed, tmp_path, copies):
    """The installed course's files and reference answers lie where a kernel may read (next to its
    Python's packages): the course's package is carved out, its data folder only is not; also when
    another copy of the course (this checkout) is the one imported."""
    command = ["python", "-c", KERNEL_PROBE, str(installed)]
    if copies == "checkout-first":
        command[2] = f"import sys; sys.path.insert(0, {str(REPO_ROOT)!r})\n" + KERNEL_PROBE
    isolation, readable = json.loads(
        run(installed, *command, cwd=tmp_path).stdout.strip().splitlines()[-1]
    )
    if not isolation.startswith("landlock"):
        pytest.skip(f"no kernel boundary here: {isolation}")
    # the data folder a kernel reads is the graded course's: the other copy's stays closed too
    assert readable == {"solution": False, "reference": False, "document": copies == "installed"}
