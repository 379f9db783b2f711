"""Any Python environment an instructor has: packages reached through PYTHONPATH (``pip install
--target``) or the user site (``pip install --user``), not only under the interpreter's prefix.

From a day-one run: with the packages on PYTHONPATH, every notebook got ``grader_error: the kernel
did not start``, 48 of 48, while the isolation probe (which never started a real kernel) reported
the full boundary, and the kernel's own last words were dropped. Now kernels read (never write)
every folder the grader imports from, the probe starts a real kernel, and a kernel that dies at
start says why in the row.
"""
from __future__ import annotations

import csv
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from bpe_labs import ROOT as REPO_ROOT

SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])  # the full environment's (this one's)
BASE_PYTHON = (
    Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
)
CORRECT = REPO_ROOT / "examples" / "submissions" / "toy-correct.ipynb"
pytestmark = pytest.mark.skipif(not BASE_PYTHON.exists() or sys.prefix == sys.base_prefix,
                                reason="needs this virtual environment's base Python")


def grade(tmp_path: Path, python: Path, env: dict) -> dict:
    """``python -m autograder grade`` on one correct toy notebook; its row of grades.csv."""
    (tmp_path / "sub").mkdir(exist_ok=True)
    (tmp_path / "sub" / "amy_toy_bpe.ipynb").write_bytes(CORRECT.read_bytes())
    base = {key: value for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "PYTHONUSERBASE", "BPE_LABS_DATA", "VIRTUAL_ENV")}
    run = subprocess.run([str(python), "-m", "autograder", "grade", str(tmp_path / "sub"), "--out",
                          str(tmp_path / "out"),
                          "--workers", "1", "--quiet"], cwd=tmp_path, env={**base, **env},
                         capture_output=True, text=True, timeout=400)
    assert run.returncode == 0, run.stderr[-3000:]
    with open(tmp_path / "out" / "grades.csv", encoding="utf-8") as handle:
        (row,) = list(csv.DictReader(handle))
    return row


def test_packages_on_pythonpath_as_with_a_bare_venv(tmp_path):
    """A bare venv, everything else on PYTHONPATH: the
    full environment's site-packages and the kit."""
    subprocess.run([str(BASE_PYTHON), "-m", "venv", "--without-pip", str(tmp_path / "bare")],
                   check=True)
    row = grade(tmp_path, tmp_path / "bare" / "bin" / "python",
                {"PYTHONPATH": os.pathsep.join([str(SITE_PACKAGES), str(REPO_ROOT)])})
    assert (row["status"], row["score"]) == ("graded", "11"), row["error"]
    assert not row["isolation"].startswith("fence (the boundary could not be built"), row[
        "isolation"
    ]


def test_packages_in_the_user_site(tmp_path):
    """``pip install --user``'s layout: the packages are found through the user site (here a
    ``.pth`` file in it names the full environment's site-packages), which the kernel's
    interpreter reads too."""
    user_base = tmp_path / "user"
    user_site = (
        user_base
        / "lib"
        / f"python{sys.version_info.major}.{sys.version_info.minor}"
        / "site-packages"
    )
    user_site.mkdir(parents=True)
    (user_site / "everything.pth").write_text(f"{SITE_PACKAGES}\n{REPO_ROOT}\n")
    row = grade(tmp_path, BASE_PYTHON, {"PYTHONUSERBASE": str(user_base)})
    assert (row["status"], row["score"]) == ("graded", "11"), row["error"]
    assert not row["isolation"].startswith("fence (the boundary could not be built"), row[
        "isolation"
    ]


def test_a_kernel_that_dies_at_start_says_why_in_the_row(tmp_path):
    """An ipykernel that cannot be imported (here a broken one first on PYTHONPATH): the probe's
    real kernel dies, the row's isolation and error say why, in the kernel's own words."""
    broken = tmp_path / "broken"
    (broken / "ipykernel").mkdir(parents=True)
    (broken / "ipykernel" / "__init__.py").write_text("raise ImportError('this ipykernel is broken "
                                                      "on purpose')\n")
    for path in (tmp_path, broken, broken / "ipykernel"):
        path.chmod(0o755)  # readable by a kernel's own uid, as an instructor's folder would be
    (broken / "ipykernel" / "__init__.py").chmod(0o644)
    env = {"PYTHONPATH": os.pathsep.join([str(broken), str(REPO_ROOT)])}
    row = grade(tmp_path, Path(sys.executable), env)
    assert row["status"] == "grader_error"
    assert "this ipykernel is broken on purpose" in row["error"], row["error"]
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "from autograder.kernel.session import isolation_status; print(isolation_status())",
        ],
        cwd=tmp_path,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert probe.stdout.startswith("fence (") and "broken on purpose" in probe.stdout, (
        probe.stdout + probe.stderr[-2000:]
    )
