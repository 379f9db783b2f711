"""Record results in nbgrader's gradebook (the embedded SQLite database by default).

Scores go where ``nbgrader autograde`` would put them, so ``nbgrader export``, formgrader and
the rest of nbgrader's tooling see them. Only the main process writes: workers return results.

nbgrader is imported only inside the functions that use it: importing it (with SQLAlchemy,
alembic, setuptools) and creating a gradebook cost about 2 CPU-seconds, as much as grading a
small notebook. ``Recorder`` does that work in a process of its own, started before the
first notebook is graded, so that it is done by the time the first result comes back.
"""
from __future__ import annotations

import warnings
from pathlib import Path

from autograder.reports.background import Background, BackgroundLost
from autograder.labs import all_labs, get_lab
from autograder.grading.result import GradeResult


def _alembic_head() -> str:
    """nbgrader's current schema revision: the revision of its migration scripts that no other
    revises.

    nbgrader asks a new ``alembic heads`` process for it when it creates a gradebook (3 CPU-s,
    and the venv's bin/ on PATH); importing alembic to ask it here still costs 0.4 CPU-s. The
    scripts are plain Python files with ``revision = "..."`` and ``down_revision = "..."``.
    """
    import ast
    import importlib.util

    spec = importlib.util.find_spec("nbgrader")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("nbgrader is not installed", name="nbgrader")
    versions = Path(spec.submodule_search_locations[0]) / "alembic" / "versions"
    revisions: set[str] = set()
    revised: set[str] = set()
    for script in versions.glob("*.py"):
        for node in ast.parse(script.read_text(encoding="utf-8")).body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                name, value = node.targets[0].id, ast.literal_eval(node.value)
                if name == "revision":
                    revisions.add(value)
                elif name == "down_revision" and value is not None:
                    revised.update([value] if isinstance(value, str) else value)
    heads = revisions - revised
    if len(heads) != 1:  # branches: let alembic decide
        from alembic.config import Config
        from alembic.script import ScriptDirectory
        from nbgrader.dbutil import _temp_alembic_ini

        with _temp_alembic_ini("sqlite://") as ini:
            head = ScriptDirectory.from_config(Config(ini)).get_current_head()
        if head is None:
            raise RuntimeError("nbgrader's gradebook migrations have no head")
        return head
    return heads.pop()


def _registered(gradebook, lab) -> bool:
    """Is the lab in the gradebook with exactly these graded parts and points?"""
    from nbgrader.api import MissingEntry

    try:
        notebook = gradebook.find_notebook(lab.lab_id, lab.lab_id)
    except MissingEntry:
        return False
    return {(c.name, c.max_score) for c in notebook.grade_cells} == {
        (p.part_id, p.points) for p in lab.parts
    }


def prepare(db_path: Path, lab_ids: list[str] | None = None) -> None:
    """Create the gradebook if needed and register the labs' graded cells (only those missing)."""
    from nbgrader import api as nbgrader_api

    from autograder.release.student_notebooks import db_url_for, register_labs

    nbgrader_api.get_alembic_version = _alembic_head
    labs = (
        [get_lab(lab_id) for lab_id in lab_ids]
        if lab_ids is not None
        else list(all_labs().values())
    )
    with nbgrader_api.Gradebook(db_url_for(db_path)) as gradebook:
        missing = [lab for lab in labs if not _registered(gradebook, lab)]
    if missing:
        register_labs(db_path, missing)


def record(db_path: Path, result: GradeResult) -> None:
    """Write one graded result: the student, the submission, and each part's auto score."""
    if not result.graded or result.lab is None:  # a graded result always has its lab
        return
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning

    from autograder.release.student_notebooks import db_url_for

    lab = get_lab(result.lab)
    with Gradebook(db_url_for(db_path)) as gradebook, warnings.catch_warnings():
        # nbgrader's own submission code trips SQLAlchemy's autoflush warning; the rows are right.
        warnings.simplefilter("ignore", SAWarning)
        gradebook.update_or_create_student(result.student_id)
        gradebook.update_or_create_submission(lab.lab_id, result.student_id)
        for part_id, part in result.parts.items():
            grade = gradebook.find_grade(part_id, lab.lab_id, lab.lab_id, result.student_id)
            grade.auto_score = part.score
            grade.needs_manual_grade = False
        gradebook.db.commit()


def total_scores(db_path: Path) -> dict[tuple[str, str], float]:
    """(student, lab) -> score, as nbgrader computes it from the gradebook."""
    from nbgrader.api import Gradebook

    from autograder.release.student_notebooks import db_url_for

    scores = {}
    with Gradebook(db_url_for(db_path)) as gradebook:
        for assignment in gradebook.assignments:
            for submission in assignment.submissions:
                scores[(submission.student_id, assignment.name)] = submission.score
    return scores


def _without_server_extensions() -> None:
    """Make ``import nbgrader.api`` skip nbgrader's package ``__init__`` (in the recorder process
    only).

    That ``__init__`` loads nbgrader's Jupyter server extensions (jupyter_server, tornado's web
    handlers): 0.3 CPU-s that writing a gradebook never uses. The package module is made from
    its spec without running it, so its submodules import as usual.
    """
    import importlib.util
    import sys

    if "nbgrader" in sys.modules:
        return
    spec = importlib.util.find_spec("nbgrader")
    if spec is None:
        raise ModuleNotFoundError("nbgrader is not installed", name="nbgrader")
    package = importlib.util.module_from_spec(spec)
    sys.modules["nbgrader"] = package
    from nbgrader._version import __version__

    # set through __dict__: typeshed's ModuleType knows no __version__ attribute
    package.__dict__["__version__"] = __version__


def _prepare_in_background(db_path: Path, lab_ids: list[str] | None) -> None:
    prepare(db_path, lab_ids)  # looked up when called: a test may have replaced it


def _record_in_background(db_path: Path, result: GradeResult) -> None:
    record(db_path, result)


class Recorder:
    """``record(result)``, with the gradebook prepared in a background process while notebooks
    grade.

    The process starts importing nbgrader at once; ``prepare(lab_ids)`` (as soon as the labs
    are known) has it create the gradebook and register them. ``record`` raises what
    ``record`` raised, or what ``prepare`` raised (for every result). Without the background
    process (no fork here, or it died or hangs) the work is done in this process. ``close()``
    returns when everything recorded is in the gradebook.

        recorder = Recorder(Path("out/gradebook.db"))
        recorder.prepare(["toy_bpe"])
        recorder.record(result)
        recorder.close()
    """

    def __init__(self, db_path: Path):
        self.db_path = Path(db_path)
        self.lab_ids: list[str] | None = None
        self.answered = False  # has the background process said how prepare went?
        self.failed: BaseException | None = None  # what prepare raised there
        self.prepared_here = False
        self.helper = Background(
            "gradebook recorder",
            preload=[
                _without_server_extensions,
                "nbgrader.api",
                "autograder.release.student_notebooks",
            ],
        )

    def prepare(self, lab_ids: list[str] | None = None) -> None:
        """Have the gradebook created and ``lab_ids`` registered (every lab: None); returns at
        once."""
        self.lab_ids = lab_ids
        try:
            self.helper.submit(_prepare_in_background, self.db_path, lab_ids)
        except BackgroundLost:
            pass

    def _prepared_in_background(self) -> None:
        """Return once prepare has succeeded there; raise what it raised, or ``BackgroundLost``."""
        if not self.answered:
            try:
                self.helper.result()
            except BackgroundLost:
                raise
            except BaseException as error:
                self.failed = error
            self.answered = True
        if self.failed is not None:
            raise self.failed

    def record(self, result: GradeResult) -> None:
        try:
            self._prepared_in_background()
            self.helper.call(_record_in_background, self.db_path, result)
        except BackgroundLost:
            self.helper.stop()
            if not self.prepared_here:
                prepare(self.db_path, self.lab_ids)
                self.prepared_here = True
            record(self.db_path, result)

    def close(self) -> None:
        """Wait for the background process to finish, then end it."""
        self.helper.close()
