"""grade.shut_the_kernel: what the kernel was sent and its restarts are kept; the kernel is shut
down."""
from __future__ import annotations

import time

from autograder.grading import grade
from autograder.kernel.process import Ending
from grading_steps import course, in_a_workdir, on_cells  # noqa: F401  (course: a fixture)


def test_the_kernel_s_arguments_and_restarts_are_kept_and_it_is_shut(course):  # noqa: F811
    grading = on_cells()
    with in_a_workdir(grading):
        grade.start_the_kernel(grading)
        session = grading.session
        assert session is not None
        session.run_cell("def echo(x):\n    return x")
        assert session.call("echo", "a hidden input") == "a hidden input"
        assert session.run_cell("import os\nos._exit(1)").status == "died"  # restarted
        grade.shut_the_kernel(grading)
        assert grading.session is None
        assert (
            grading.sent == [[["a hidden input"], {}]]
            and grading.sent is not session.sent_arguments
        )
        assert grading.restarts == session.restarts == 1
        deadline = time.monotonic() + 30  # shut down in a thread (kernel.py)
        while Ending.SHUT_DOWN not in session.kernel.endings and time.monotonic() < deadline:
            time.sleep(0.1)
        assert session.kernel.endings[-1] is Ending.SHUT_DOWN  # at the step, before the block ends
