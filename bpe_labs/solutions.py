"""Run the solution notebooks in place, so their stored outputs (which nbval compares) are fresh."""
from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from autograder.labs import all_labs
from bpe_labs import PACKAGE_DIR, ROOT

STANDINS = ROOT / "data" / "standins"


def solution_environment() -> dict[str, str]:
    """What a solution notebook runs with: the course importable (hidden tests import the
    reference; already so once the project is installed) and the stand-in corpora."""
    path = os.pathsep.join(filter(None,
                                  [str(PACKAGE_DIR.parent), os.environ.get("PYTHONPATH", "")]))
    return {"PYTHONPATH": path, "BPE_LABS_DATA": os.environ.get("BPE_LABS_DATA", str(STANDINS)),
            "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}


def execute_solutions(lab_ids: list[str] | None = None) -> list[Path]:
    os.environ.update(solution_environment())
    done = []
    for lab in all_labs().values():
        if lab_ids and lab.lab_id not in lab_ids:
            continue
        nb = lab.solution_notebook()
        NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": str(lab.solution_path.parent)}}).execute()
        nbformat.write(nb, lab.solution_path)
        done.append(lab.solution_path)
    return done
