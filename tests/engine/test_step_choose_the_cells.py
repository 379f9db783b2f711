"""grade.choose_the_cells: the program up to its last check, and for the feedback the cells a
student added after it too."""
from __future__ import annotations

from autograder.grading import grade
from autograder.grading.repair import Repaired
from grading_steps import added, answer, check, given, new_grading


def test_the_cells_after_the_last_check_are_not_graded_but_added_ones_are_shown():
    program = [given("import math"), answer("double"), check("double", "print(double(2))"),
               added("print('mine')", 4), given("plot()", "closing plot"), added("1 / 0", 6)]
    grading = new_grading()
    grading.repaired = Repaired(program, {"double": "print(double(2))"})
    grade.choose_the_cells(grading)
    assert grading.program == program[:3]
    assert grading.shown == program[:3] + [program[3], program[5]]


def test_a_program_without_checks_is_run_whole():
    program = [given("x = 1"), added("y = 2", 2)]
    grading = new_grading()
    grading.repaired = Repaired(program, {})
    grade.choose_the_cells(grading)
    assert grading.program == program and grading.shown == program
