"""Each step of the grading pipeline on its own: codec, intake, repair, check, kernel limits."""
import collections
import time
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, strategies as st

from autograder.kernel import codec
from autograder.grading import intake
from autograder.grading.check import free_names
from bpe_labs.examples import load_cases, make_submission
from autograder.grading.intake import (
    find_submissions, read_submission, recognise_lab, student_id_from_flat_name,
)
from autograder.kernel.session import CallTimeout, KernelSession, Limits
from autograder.labs import get_lab
from autograder.grading.repair import repair

plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary(),
    lambda inner: (
        st.lists(inner)
        | st.lists(inner).map(tuple)
        | st.dictionaries(st.text(), inner)
        | st.dictionaries(st.text(), st.integers()).map(collections.Counter)
    ), max_leaves=20,
)


@given(plain)
def test_codec_round_trip_keeps_values_and_exact_types(value):
    back = codec.decode(codec.encode(value))
    assert back == value
    assert type(back) is type(value)


def test_codec_refuses_subclasses_and_custom_equality():
    class AlwaysEqual:
        def __eq__(self, other):
            return True

    class Sneaky(tuple):
        def __eq__(self, other):
            return True

    for value in (AlwaysEqual(), Sneaky(), [Sneaky()], {"k": AlwaysEqual()}):
        decoded = codec.decode(codec.encode(value))
        assert decoded != value and not (decoded == [])


@given(plain)
def test_arguments_packed_for_the_kernel_come_back_equal_with_exact_types(value):
    back = codec.unpack(codec.pack(value))
    assert back == value and type(back) is type(value)
    assert codec.unpack(codec.pack([value])) == [value]


def test_packing_refuses_what_the_kernel_could_not_rebuild_from_the_standard_library():
    class Sneaky(tuple):
        pass

    for value in (Sneaky(), [len], {"f": lambda: 1}, collections.defaultdict(lambda: 0),
                  [codec.Unsupported("x", "y")]):
        with pytest.raises(TypeError, match="only plain values"):
            codec.pack(value)
    counts = collections.defaultdict(int, a=1)
    assert (
        codec.unpack(codec.pack(counts)) == counts
        and codec.unpack(codec.pack(counts)).default_factory is int
    )


def test_free_names_are_what_a_cell_uses_but_never_binds():
    source = ("import random as r\nfrom x import y\nz = f(a, r.random())\n"
              "for i in g(): print(i, y, z)\ndef h(k): return k + w\n")
    assert free_names(source) == ["f", "a", "g", "w"]


@pytest.mark.parametrize("name, student",
                         [("jdoe_1234_5678_toy_bpe.ipynb", "jdoe"),
                          ("toy-correct.ipynb", "toy-correct"),
                                           ("jdoe_LATE_1234_5678_toy_bpe-1.ipynb", "jdoe"),
                                           ("jdoe_toy_bpe.ipynb", "jdoe"),
                                           ("bob_zzz_toy_bpe.ipynb", "bob_zzz"),
                                           ("ann_lee.ipynb", "ann_lee"),
                                           ("Ada Lovelace_99_assignsubmission_file_lab.ipynb",
                                            "Ada Lovelace")])
def test_student_id_from_a_flat_folder_is_the_prefix_the_export_wrote(name, student):
    assert student_id_from_flat_name(Path(name)) == student


def test_nbgrader_tree_and_flat_folder_are_both_found(tmp_path):
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "amy_1_2_toy.ipynb").write_text("{}")
    (tmp_path / "tree" / "bob" / "toy_bpe").mkdir(parents=True)
    (tmp_path / "tree" / "bob" / "toy_bpe" / "toy_bpe.ipynb").write_text("{}")
    assert [s.student_id for _, s in find_submissions(tmp_path / "flat")] == ["amy"]
    assert [s.student_id for _, s in find_submissions(tmp_path / "tree")] == ["bob"]


def test_lab_is_recognised_by_content_when_metadata_is_gone():
    case = next(c for c in load_cases() if c["id"] == "toy-correct")
    nb = make_submission(case)
    del nb.metadata["bpe_labs"]
    for cell in nb.cells:
        cell.metadata = {}
    assert recognise_lab(nb) == "toy_bpe"
    nb.cells = nb.cells[:3]
    assert recognise_lab(nb) is None


@pytest.mark.parametrize("case", [c for c in load_cases() if c["lab"] == "toy_bpe"],
                         ids=lambda c: c["id"])
def test_repair_of_an_honest_submission_reports_nothing(case):
    repaired = repair(make_submission(case), get_lab("toy_bpe"))
    assert repaired.integrity == []
    assert [step.kind for step in repaired.program].count("answer") == 5


def test_repair_puts_moved_answers_back_and_reports_them():
    nb = make_submission(next(c for c in load_cases() if c["id"] == "toy-correct"))
    answers = [i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("solution")]
    nb.cells[answers[0]], nb.cells[answers[-1]] = nb.cells[answers[-1]], nb.cells[answers[0]]
    repaired = repair(nb, get_lab("toy_bpe"))
    assert [s.part_of for s in repaired.program if s.kind == "answer"] == [
        "initialize_solution", "pair_frequencies_solution", "merge_solution", "learn_solution",
        "tokenize_solution"]
    assert {e.event for e in repaired.integrity} == {"moved"}


def test_intake_reports_bad_files_clearly(tmp_path):
    (tmp_path / "empty.ipynb").write_bytes(b"")
    (tmp_path / "broken.ipynb").write_text('{"cells": [')
    (tmp_path / "list.ipynb").write_text("[1, 2]")
    assert read_submission(tmp_path / "empty.ipynb", "a").status == "empty_file"
    assert read_submission(tmp_path / "broken.ipynb", "a").status == "invalid_json"
    assert read_submission(tmp_path / "list.ipynb", "a").status == "not_a_notebook"


def test_intake_lets_running_out_of_memory_through(tmp_path, monkeypatch):
    """A grader out of room has learnt nothing about the file: no "not a notebook" row for it
    (grade_file turns the MemoryError into a grader_error row that names it)."""
    nbformat.write(make_submission(next(c for c in load_cases() if c["id"] == "toy-correct")),
                   tmp_path / "fine.ipynb")

    def out_of_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(intake.nbformat, "reads", out_of_memory)
    with pytest.raises(MemoryError):
        read_submission(tmp_path / "fine.ipynb", "a")


def test_a_builtin_error_that_takes_more_than_a_message_is_still_named():
    """UnicodeDecodeError(message) itself raises TypeError: the
    student's error is named, never 'could not be checked'."""
    from autograder.course_interface import StudentError, student_error
    from autograder.kernel.calls import CallOutcome

    for class_name in ("UnicodeDecodeError", "UnicodeEncodeError", "KeyError"):
        error = CallOutcome.decode(["raised", class_name, True, "bad byte"]).error("decode")
        assert student_error(error) == StudentError("decode", class_name)
        # the hidden test may read it; verdicts.raised never shows it
        assert "bad byte" in str(error)
    assert type(error) is KeyError


def test_kernel_limits_timeouts_deaths_and_fences(tmp_path):
    with KernelSession(
        tmp_path / "work", Limits(cell_seconds=2, call_seconds=2, memory_bytes=2 * 1024**3)
    ) as session:
        assert session.run_cell("def f(x):\n    return [x, (x, 'a')]\ndef spin():\n    while True: "
                                "pass").status == "ok"
        assert session.call("f", 3) == [3, (3, "a")]
        with pytest.raises(CallTimeout):
            session.call("spin")
        assert session.call("f", 4) == [4, (4, "a")]
        assert session.run_cell("while True: pass").status == "timeout"
        assert session.run_cell("import os; os._exit(3)").status == "died"
        assert session.call("f", 5) == [5, (5, "a")], "a restart must replay the cells that had run"
        assert session.run_cell("x = bytearray(8 * 1024**3)").error.startswith("MemoryError")
        denied = session.run_cell(f"open({str(get_lab('toy_bpe').solution_path)!r}).read()")
        assert denied.status == "error" and "PermissionError" in denied.error
        assert (
            "PermissionError"
            in session.run_cell("import subprocess; subprocess.run(['true'])").error
        )
        assert (
            session.run_cell(
                "import os; print(os.environ.get('NBGRADER_EXECUTION'))", capture=True
            ).stdout.strip()
            == "None"
        )


def test_call_each_is_the_loop_in_one_round_trip(tmp_path):
    from autograder.grading.check import StudentFunction
    from bpe_labs.hidden import call_each

    with KernelSession(tmp_path / "work", Limits(call_seconds=5)) as session:
        session.run_cell("def halve(n):\n    if n == 3:\n        raise ValueError('three')\n    "
                         "return (n // 2, [n])")
        proxy = StudentFunction(session, "halve", deadline=float("inf"))
        assert call_each(proxy, [(4,), (7,)]) == [proxy(4), proxy(7)] == [(2, [4]), (3, [7])]
        with pytest.raises(ValueError, match="three"):
            list(call_each(proxy, [(4,), (3,), (8,)]))
        session.run_cell("def scaled(n, by=1, *, sign=1):\n    return sign * n * by")
        scaled = StudentFunction(session, "scaled", deadline=float("inf"))
        assert (
            call_each(scaled, [(2,), (5,)], by=10, sign=-1)
            == [scaled(2, by=10, sign=-1), scaled(5, sign=-1, by=10)]
            == [-20, -50]
        ), "keywords go to every call, keyword-only parameters too"
        assert call_each(scaled, [(2, 3)]) == [6]
        session.run_cell("def grab(items, seen=[]):\n    items.append(len(items))\n    return "
                         "list(items)")
        grab = StudentFunction(session, "grab", deadline=float("inf"))
        shared = [7]
        assert call_each(grab, [(shared,), (shared,)]) == [[7, 1], [7, 1]], (
            "each call gets arguments of its own, as each call did one at a time"
        )
        assert shared == [7], "the grader's own value is never changed"
    assert call_each(abs, [(-2,), (3,)]) == [2, 3], "outside the grader it is a plain loop"
    assert call_each(sorted, [([2, 1],)], reverse=True) == [[2, 1]]


def test_call_each_keeps_the_loop_s_order_of_failures_and_each_call_s_time_limit(tmp_path):
    """A batch reads like the loop it replaces: the checks of the cases before a failing call run
    first, and a slow-but-fine function is not cut off by the batch's length (each call has
    ``call_seconds`` of its own), while one that never ends times out at its own case."""
    from autograder.grading.check import StudentFunction
    from bpe_labs.hidden import call_each

    with KernelSession(
        tmp_path / "work", Limits(call_seconds=2, interrupt_grace_seconds=2)
    ) as session:
        session.run_cell("import time\ndef slow(n):\n    time.sleep(0.3)\n    return n\n"
                         "def stuck(n):\n    while n == 2:\n        pass\n    return n\n"
                         "def fails(n):\n    if n == 2:\n        raise KeyError(n)\n    return n")
        slow = StudentFunction(session, "slow", deadline=float("inf"))
        # 2.4 s in all (> 2), 0.3 s each
        assert list(call_each(slow, [(n,) for n in range(8)])) == list(range(8))
        seen = []
        with pytest.raises(CallTimeout):
            calls = call_each(StudentFunction(session, "stuck", deadline=float("inf")),
                              [(n,) for n in range(5)])
            for _, got in zip(range(5), calls):
                seen.append(got)
        assert seen == [0, 1]
        seen = []
        with pytest.raises(KeyError):
            calls = call_each(StudentFunction(session, "fails", deadline=float("inf")),
                              [(n,) for n in range(5)])
            for _, got in zip(range(5), calls):
                seen.append(got)
        assert seen == [0, 1]
        assert session.call("slow", 5) == 5, "the kernel answers after a call was cut off"


def test_a_kernel_started_when_the_notebooks_time_is_up_is_shut_down(tmp_path, monkeypatch):
    """The kernel starts, then the first request finds no time left: the session raises and the
    kernel it started does not outlive it (a worker would otherwise keep one per such notebook).
    With no time left at all, no kernel is started."""
    from autograder.kernel.process import Kernel

    session = KernelSession(tmp_path / "work", Limits(notebook_seconds=30))
    install_codec = Kernel._install_codec

    def time_runs_out_once_the_kernel_answers(self):
        self.clock.started = time.monotonic() - 31
        install_codec(self)

    monkeypatch.setattr(Kernel, "_install_codec", time_runs_out_once_the_kernel_answers)
    with pytest.raises(CallTimeout):
        session.__enter__()
    assert session.kernel.km.has_kernel is False or not session.kernel.km.is_alive()
    assert not session.workspace.private.exists()
    monkeypatch.undo()
    late = KernelSession(tmp_path / "late", Limits(notebook_seconds=30))
    late.clock.started = time.monotonic() - 31
    with pytest.raises(CallTimeout):
        late.__enter__()
    assert late.kernel.km is None and not (tmp_path / "late").exists()


def test_waiting_for_a_kernel_to_answer_stops_at_the_notebooks_time(tmp_path, monkeypatch):
    """A kernel that never answers is waited for only while the notebook has time left, not a
    minute past it; the session says the time was used up and the kernel is shut down."""
    from autograder.kernel import process as kernel

    session = KernelSession(tmp_path / "work", Limits(notebook_seconds=4))
    client = kernel.KernelManager.client

    def connect_to_sockets_nobody_listens_on(km, *args, **kwargs):
        # The kernel starts for real; the grader's client knocks where it never answers, as a
        # kernel frozen by a badly overloaded machine would leave it.
        real_ip, km.ip = km.ip, km.ip + "-nobody"
        try:
            return client(km, *args, **kwargs)
        finally:
            km.ip = real_ip

    monkeypatch.setattr(kernel.KernelManager, "client", connect_to_sockets_nobody_listens_on)
    started = time.monotonic()
    with pytest.raises(CallTimeout, match="time limit was used up"):
        session.__enter__()
    assert time.monotonic() - started < 4 + 20, "the grader waited past the notebook's time"
    assert session.kernel.km.has_kernel is False or not session.kernel.km.is_alive()
    assert not session.workspace.private.exists()
