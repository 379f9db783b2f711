"""Work done in a background process while notebooks grade: the gradebook.

``Background`` runs calls in a forked process; the gradebook ``Recorder`` prepares nbgrader's
gradebook there and records into it, falling back to this process when it is gone. Every test
uses a real gradebook (nbgrader, SQLite).
"""
from __future__ import annotations

import pytest

from autograder.reports import gradebook
from autograder.reports.background import Background, BackgroundLost
from autograder.labs import get_lab
from autograder.grading.result import GradeResult, PartScore


def _fail(kind: str):
    if kind == "value":
        raise ValueError("bad value")
    if kind == "unpicklable":
        error = RuntimeError("has a lock")
        error.lock = __import__("threading").Lock()
        raise error
    raise KeyboardInterrupt  # not an Exception: it must still arrive as itself


def in_a_fresh_interpreter(body, *args):
    """Run ``body(*args)`` in a new Python (multiprocessing's spawn): a ``Background`` refuses to
    fork while other threads run, and earlier tests in this pytest worker leave some (kernels that
    are shutting down), so the forking tests need a process of their own to test the fork."""
    import multiprocessing

    process = multiprocessing.get_context("spawn").Process(target=body, args=args)
    process.start()
    process.join(300)
    assert process.exitcode == 0, (
        f"{body.__name__} failed in its own interpreter (exit {process.exitcode}; traceback above)"
    )



def test_background_answers_in_order_and_raises_what_the_call_raised():
    in_a_fresh_interpreter(_background_answers_in_order_and_raises_what_the_call_raised)


def _background_answers_in_order_and_raises_what_the_call_raised():
    helper = Background("test", preload=["json"])
    try:
        helper.submit(divmod, 17, 5)
        helper.submit(sorted, "cab")
        assert helper.result() == (3, 2)
        assert helper.result() == ["a", "b", "c"]
        with pytest.raises(ValueError, match="bad value"):
            helper.call(_fail, "value")
        with pytest.raises(KeyboardInterrupt):
            helper.call(_fail, "interrupt")
        with pytest.raises(RuntimeError, match="has a lock"):  # sent back as text
            helper.call(_fail, "unpicklable")
        assert helper.call(len, "four") == 4  # still serving
    finally:
        helper.close()
    assert not helper.alive


def test_a_dead_background_process_is_reported_not_waited_for():
    in_a_fresh_interpreter(_a_dead_background_process_is_reported_not_waited_for)


def _a_dead_background_process_is_reported_not_waited_for():
    helper = Background("test")
    helper.process.kill()
    helper.process.join()
    with pytest.raises(BackgroundLost):
        helper.call(len, "x")
    assert not helper.alive
    with pytest.raises(BackgroundLost):
        helper.submit(len, "x")
    helper.close()  # nothing left to close: no error


def test_a_background_dropped_unclosed_ends_its_process():
    in_a_fresh_interpreter(_a_background_dropped_unclosed_ends_its_process)


def _a_background_dropped_unclosed_ends_its_process():
    helper = Background("test")
    process = helper.process
    assert process.is_alive()
    del helper  # as when a batch stops with an exception before closing it
    process.join(10)
    assert not process.is_alive()


def test_no_fork_while_threads_run(tmp_path):
    """A forked child would inherit locks held by the
    other threads: the caller works alone instead."""
    import threading

    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    try:
        helper = Background("test")
        assert not helper.alive
        with pytest.raises(BackgroundLost):
            helper.call(len, "x")
        recorder = gradebook.Recorder(tmp_path / "gradebook.db")  # records in this process
        recorder.prepare(["toy_bpe"])
        recorder.record(graded_result("toy_bpe", "ada", [2, 2, 2, 3, 2]))
        recorder.close()
        assert gradebook.total_scores(tmp_path / "gradebook.db") == {("ada", "toy_bpe"): 11.0}
    finally:
        release.set()
        thread.join()


def graded_result(lab_id: str, student: str, scores: list[float]) -> GradeResult:
    parts = {part.part_id: PartScore(part.part_id, score, part.points,
                                     "" if score >= part.points else "not yet")
             for part, score in zip(get_lab(lab_id).parts, scores)}
    return GradeResult(student, f"{student}.ipynb", status="graded", lab=lab_id, parts=parts,
                       score=sum(scores), max_score=get_lab(lab_id).max_score)


def test_recorder_writes_what_record_writes(tmp_path):
    """The same results, recorded through the background process
    and in this process, give the same gradebook scores."""
    results = [graded_result("toy_bpe", "ada", [2, 1, 0, 3, 2]),
               graded_result("toy_bpe", "bob", [0, 0, 0, 0, 1]),
               GradeResult("cy", "cy.ipynb", status="empty_file")]
    recorder = gradebook.Recorder(tmp_path / "background.db")
    recorder.prepare(["toy_bpe"])
    for result in results:
        recorder.record(result)
    recorder.close()
    gradebook.prepare(tmp_path / "here.db", ["toy_bpe"])
    for result in results:
        gradebook.record(tmp_path / "here.db", result)
    expected = {("ada", "toy_bpe"): 8.0, ("bob", "toy_bpe"): 1.0}
    assert gradebook.total_scores(tmp_path / "background.db") == expected
    assert gradebook.total_scores(tmp_path / "here.db") == expected
    # the background process imports nbgrader without its package __init__: the registered cells are
    # the same
    cells = registered_cells(tmp_path / "background.db")
    assert (
        cells == registered_cells(tmp_path / "here.db")
        and len(cells["grade"]) == 5
        and cells["source"]
    )


def registered_cells(db_path) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db_path}") as book:
        notebook = book.find_notebook("toy_bpe", "toy_bpe")
        return {"grade": sorted((c.name, c.max_score, c.cell_type) for c in notebook.grade_cells),
                "solution": sorted(c.name for c in notebook.solution_cells),
                "source": sorted((c.name, c.cell_type, c.locked, c.source, c.checksum)
                                 for c in notebook.source_cells)}


def test_recorder_carries_on_in_this_process_when_its_process_dies(tmp_path):
    in_a_fresh_interpreter(_recorder_carries_on_in_this_process_when_its_process_dies, tmp_path)


def _recorder_carries_on_in_this_process_when_its_process_dies(tmp_path):
    recorder = gradebook.Recorder(tmp_path / "gradebook.db")
    recorder.prepare(["toy_bpe"])
    recorder.record(graded_result("toy_bpe", "ada", [2, 2, 2, 3, 2]))
    recorder.helper.process.kill()
    recorder.record(graded_result("toy_bpe", "bob", [1, 0, 0, 0, 0]))
    recorder.close()
    assert gradebook.total_scores(tmp_path / "gradebook.db") == {("ada", "toy_bpe"): 11.0,
                                                                 ("bob", "toy_bpe"): 1.0}


def test_recorder_raises_for_every_result_when_the_gradebook_cannot_be_prepared(tmp_path):
    (tmp_path / "a-folder.db").mkdir()  # SQLite cannot open a folder
    recorder = gradebook.Recorder(tmp_path / "a-folder.db")
    recorder.prepare(["toy_bpe"])
    try:
        for student in ("ada", "bob"):
            with pytest.raises(Exception) as raised:
                recorder.record(graded_result("toy_bpe", student, [2, 2, 2, 3, 2]))
            assert not isinstance(raised.value, BackgroundLost)
    finally:
        recorder.close()


def test_alembic_head_read_from_the_scripts_is_alembics():
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite://") as ini:
        assert (
            gradebook._alembic_head() == ScriptDirectory.from_config(Config(ini)).get_current_head()
        )
