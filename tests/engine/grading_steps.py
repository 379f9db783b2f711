"""What the tests of grade.py's steps share (one test module per step, ``test_step_*.py``):
the toy course (toy_course.py), a :class:`~autograder.grading.grade.Grading` of its lab on
synthetic cells, as if the steps before had run, and a workdir for its kernels.

A test module imports the ``course`` fixture from here (``--noconftest`` runs them without
tests/conftest.py, where ``bpe_labs`` cannot be imported)."""
from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Iterator

import pytest

from autograder.grading import grade
from autograder.grading.grade import Grading, Progress, Settings
from autograder.kernel.session import Limits
from autograder.labs import get_lab
from autograder.grading.repair import Step
from toy_course import LAB, RIGHT, toy_course

SETTINGS = Settings(limits=Limits(notebook_seconds=120), part_seconds=30)
# A total that is wrong for every hidden input: [5, 6] gives 2, not 22.
WRONG_TOTAL = "def total(numbers):\n    return len(numbers)"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The toy course, written once per test process and graded within each module."""
    with toy_course(tmp_path_factory.getbasetemp() / "toy-course-for-steps") as course:
        yield course


def new_grading(path: Path = Path("synthetic.ipynb"), settings: Settings = SETTINGS,
                started: float | None = None) -> Grading:
    """A file's grading before its first step."""
    return Grading(path, settings, time.monotonic() if started is None else started,
                   Progress("ada", str(path)))


def on_cells(*program: Step, settings: Settings = SETTINGS, started: float | None = None
             ) -> Grading:
    """The grading of a toy-lab file whose repaired program is ``program``, as if intake, repair
    and the choice of cells had run (``shown`` is ``program``)."""
    grading = new_grading(settings=settings, started=started)
    grading.lab = get_lab(LAB)
    grading.found.lab, grading.found.max_score = LAB, grading.lab.max_score
    grading.program = list(program)
    grading.shown = list(program)
    return grading


@contextlib.contextmanager
def in_a_workdir(grading: Grading) -> Iterator[Grading]:
    """``grading`` with its workdir made; the kernel shut and the workdir removed at the end, as
    the runner does."""
    with grading.workdir_exit, grading.kernel_exit:
        grade.make_a_workdir(grading)
        yield grading


def answer(part_id: str, source: str | None = None) -> Step:
    """The answer cell of part ``part_id`` (the right answer unless ``source`` is given)."""
    cell_id = f"answer_{part_id}"
    return Step("answer", RIGHT[cell_id] if source is None else source, cell_id, part_of=cell_id)


def check(part_id: str, source: str) -> Step:
    """The test cell of part ``part_id``, with ``source`` as its visible check."""
    return Step("check", source, part_id)


def given(source: str, cell_id: str = "given") -> Step:
    return Step("given", source, cell_id)


def added(source: str, number: int) -> Step:
    return Step("added", source, f"added cell {number}")
