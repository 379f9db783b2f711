"""A speed verdict's measure (``cpu_timed_call_within``): the CPU time the kernel's processes used
during a student's call, read by the grader from /proc. Waiting uses none, computing counts, and
nothing the student's code does in the kernel changes the figure: not ``time.process_time``
replaced, not the clock. Through a real kernel."""
import tempfile
import time
from pathlib import Path

import pytest

from autograder.course_interface import cpu_timed_call_within
from autograder.grading.check import StudentFunction
from autograder.kernel.session import KernelSession, Limits

STUDENT = '''
import time

def sleeps(seconds):
    time.sleep(seconds)
    return seconds

def works(n):
    return sum(range(n))  # a fixed piece of work

def forges_the_clocks():
    time.process_time = time.thread_time = lambda: 0.0

def clocks():
    return time.process_time() + time.thread_time()
'''


@pytest.fixture(scope="module")
def kernel():
    with tempfile.TemporaryDirectory(prefix="bpe-grade-") as folder:
        with KernelSession(
            Path(folder) / "work", Limits(cell_seconds=30, call_seconds=60)
        ) as session:
            session.run_cell(STUDENT)
            yield session


def student(session, name):
    return StudentFunction(session, name, deadline=time.monotonic() + 300)


def test_waiting_costs_no_cpu_time(kernel):
    result, seconds, _ = cpu_timed_call_within(student(kernel, "sleeps"), 10, 0.5)
    assert result == 0.5 and seconds < 0.2


WORK = 2 * 10**7


def the_work_here() -> float:
    """The work's CPU time in this process, the best of three."""
    best = float("inf")
    for _ in range(3):
        started = time.thread_time()
        sum(range(WORK))
        best = min(best, time.thread_time() - started)
    return best


def test_computing_costs_its_cpu_time_however_busy_the_machine(kernel):
    result, seconds, _ = cpu_timed_call_within(student(kernel, "works"), 30, WORK)
    here = the_work_here()
    # the same work in two processes: alike within a factor of three (ticks of 10 ms, the call's
    # messages, and a busy machine's sibling hyperthreads, which slow an instruction by up to two),
    # where their clocks differ by each process's share of the cores
    assert result == sum(range(WORK)) and here / 3 <= seconds <= 3 * here + 0.05


def test_the_kernels_own_clocks_do_not_make_the_figure(kernel):
    student(kernel, "forges_the_clocks")()
    assert student(kernel, "clocks")() == 0.0
    _, seconds, _ = cpu_timed_call_within(student(kernel, "works"), 30, WORK)
    assert seconds >= the_work_here() / 3


def test_outside_the_grader_it_is_the_calls_process_time():
    started = time.perf_counter()
    result, seconds, round_trips = cpu_timed_call_within(time.sleep, 5, 0.3)
    assert result is None and seconds < 0.1 and round_trips == []
    assert time.perf_counter() - started >= 0.3
