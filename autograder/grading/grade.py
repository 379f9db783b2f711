"""Grade one submission: intake -> repair -> execute -> check -> a ``GradeResult`` (``result.py``).

``grade_file`` is what every worker runs (a local process, a Dask worker): it takes a path and
settings, returns a ``GradeResult``, and never raises for a bad notebook.

No hidden input may reach the feedback in any form (printed reversed, joined with dots,
remembered and raised later), so everything a student is shown of their own code's output is
taken before the first hidden input exists in a kernel: one kernel runs the notebook with its
visible checks, then runs each part's hidden tests, which yield only scores. Hidden tests belong
at their test cell's place (a later cell may redefine a function or change a global it reads):
just before each test cell, the kernel notes what that part's tests can reach (names, objects,
the bytes of plain values; ``codec.snapshot``), and if any of it has changed by the end, the parts
are graded at their places in a second kernel whose output is never shown (one notebook in many).

One file's grading is a row of small steps, as nbgrader's ``autograde`` is a row of preprocessors:
each step takes the file's :class:`Grading` (the file, the settings, the kernel, what was found so
far) and fills its typed fields; :func:`_grade` runs :func:`steps` in order until one of them
writes the row (docs/ENGINE.md, "One file's grading").
"""
from __future__ import annotations

import ast
import contextlib
import functools
import re
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, TypeVar

from autograder.kernel import tempdirs
from autograder.grading.check import hidden_test_names, run_part
from autograder.course import current
from autograder.grading.intake import Submission, read_submission
from autograder.kernel.session import (
    CallTimeout, CellStatus, KernelDied, KernelSession, imported_modules)
from autograder.kernel.boundary import CoursePaths
from autograder.kernel.process import Clock
from autograder.labs import Lab, Part, get_lab, release_cells
from autograder.grading.repair import Repaired, Step, repair
from autograder.grading.result import (
    GRADED,
    GRADER_ERROR,
    CellEvent,
    CellKind,
    GradeResult,
    IntegrityEvent,
    PartScore,
    Status,
    Verdict,
)
from autograder.grading.settings import Settings  # (also imported from here by older code)


@functools.lru_cache(maxsize=None)
def public_text(lab_id: str) -> str:
    """Everything a student can read in the released notebook."""
    return "\n".join(cell.source for cell in release_cells(lab_id))


def _canonical(value) -> str:
    """One spelling per value: ``["ba", "c"]`` and ``['ba','c']`` are the same list."""
    return repr(value)


# Code a student can read outside code cells: `inline code` and fenced blocks of the task texts.
_CODE_SPANS = re.compile(r"```(?:python)?\n(.*?)```|`([^`\n]+)`", re.S)


@functools.lru_cache(maxsize=None)
def public_values(lab_id: str) -> frozenset[str]:
    """Every literal value the released notebook shows (code cells, and code in its texts),
    canonical."""
    values: set[str] = set()
    pieces = []
    for cell in release_cells(lab_id):
        if cell.cell_type == "code":
            pieces.append(cell.source)
        else:
            pieces += [a or b for a, b in _CODE_SPANS.findall(cell.source)]
    for piece in pieces:
        try:
            tree = ast.parse(piece)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict)):
                try:
                    values.add(_canonical(ast.literal_eval(node)))
                except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                    continue
    return frozenset(values)


class Redactor:
    """Removes from text shown to a student every hidden-test input the grader sent into the kernel.

    Only grader-side text needs it (a hidden test's own message may quote its input): what the
    student's code printed or raised comes from the feedback kernel, which never saw a hidden
    input. A fragment is any string argument (or nested string), or the spelling of an argument,
    whose *value* the released notebook does not already show: ``['abcab', '</w>']`` hides
    ``abcab`` but not the public ``</w>``, and ``['ba', 'c']`` stays when the notebook has
    ``["ba", "c"]``.
    """

    def __init__(self, arguments: list, public: str, shortest: int = 3,
                 shown: frozenset[str] = frozenset()):
        self._arguments, self._public, self._shortest, self._shown = (
            arguments, public, shortest, shown)

    @functools.cached_property
    def fragments(self) -> list[str]:
        """Longest first. Found when first needed: a correct notebook's messages need none (a large
        hidden case makes tens of thousands)."""
        fragments: set[str] = set()
        public, shown = self._public, self._shown

        def hidden(value) -> bool:
            try:
                canonical = _canonical(value)
            except Exception:
                return True
            if canonical in shown:
                return False
            return not (isinstance(value, str) and value in public)

        def walk(value, depth=0):
            if depth > 50 or not hidden(value):
                return
            if isinstance(value, str):
                fragments.add(value)
            elif isinstance(value, (list, tuple, set, frozenset, dict)):
                spelled = repr(value)
                fragments.update((spelled, spelled.replace("'", '"')))
                for item in (value.items() if isinstance(value, dict) else value):
                    walk(item, depth + 1)

        for argument in self._arguments:
            walk(argument)
        return sorted((f for f in fragments if len(f) >= self._shortest), key=len, reverse=True)

    def part(self, score: PartScore) -> str:
        """A part's message as the student may read it: a passed part's is the grader's own words
        (with the names of the lab's functions) and is kept; any other's may quote the hidden
        tests."""
        return score.message if score.verdict is Verdict.PASSED else self(score.message)

    def __call__(self, text: str) -> str:
        if not text:
            return text
        for fragment in self.fragments:
            if fragment in text:
                text = text.replace(fragment, "[hidden input]")
        return text


def grade_file(path: Path, student_id: str, settings: Settings = Settings(),
               attempts: int = 2) -> GradeResult:
    """Grade one file, within ``--notebook-timeout`` for everything (both kernels, restarts and
    replays, a retry included). A grader failure (say, a kernel that would not start on an
    overloaded machine) is retried once if time is left, before it becomes a ``grader_error``
    row."""
    started = time.monotonic()
    for _ in range(attempts):
        result = _guarded(path, student_id, settings, started)
        if (result.status != GRADER_ERROR
                or time.monotonic() - started > settings.limits.notebook_seconds / 2):
            break
    return replace(result, seconds=round(time.monotonic() - started, 3))


@dataclass
class Progress:
    """What grading one file has found so far: kept in the row if a later step fails
    (``grader_error``)."""

    student_id: str
    file: str
    status: Status = GRADER_ERROR
    message: str = ""
    lab: str | None = None
    sha256: str | None = None
    max_score: float | None = None
    integrity: list[IntegrityEvent] = field(default_factory=list)
    cells: list[CellEvent] = field(default_factory=list)
    isolation: str | None = None
    kernels: int = 0
    exposed: bool = False  # a hidden input may have reached a kernel

    def result(self, **graded) -> GradeResult:
        """The row: what was found, and ``graded`` (parts, score, restarts; or a grader error's
        fields)."""
        return GradeResult(self.student_id, self.file, status=self.status, message=self.message,
                           lab=self.lab, sha256=self.sha256, max_score=self.max_score,
                           integrity=list(self.integrity), cells=list(self.cells),
                           isolation=self.isolation, kernels=self.kernels, **graded)


def error_result(path: Path, student_id: str, status: Status, message: str) -> GradeResult:
    """The row of a file that could not be graded, for reasons outside the file's own grading."""
    return GradeResult(student_id, str(path), status=status, message=message)


def _guarded(path: Path, student_id: str, settings: Settings, started: float) -> GradeResult:
    """Every step for one file; whatever it raises (RecursionError, MemoryError, a bug of ours)
    costs this file's row only."""
    grading = Grading(Path(path), settings, started, Progress(student_id, str(path)))
    found = grading.found
    try:
        return _grade(grading)
    except Exception as error:
        # After a hidden input reached a kernel, an error's text may carry what that kernel said
        # (a log, a reply): the row names the class of error only. The traceback is the
        # instructor's.
        said = "" if found.exposed else f": {str(error)[:300]}"
        message = f"this file could not be graded ({type(error).__name__}{said})"
        try:
            trace = traceback.format_exc(limit=20)[-5000:]
        except Exception:
            trace = None
    # What was found before the failure stays: the lab, the file's hash, the integrity report, the
    # cells that ran.
    found.status, found.message = GRADER_ERROR, message
    return found.result(traceback=trace)


@functools.lru_cache(maxsize=None)
def release_imports(lab_id: str) -> tuple[str, ...]:
    """What the released notebook imports: kernels start with it loaded (see kernel.Zygote)."""
    return imported_modules(cell.source for cell in release_cells(lab_id)
                            if cell.cell_type == "code")


# ---------------------------------------------------------------------------------------------
# One file's grading: the state its steps share, the steps, and the runner.

Known = TypeVar("Known")


def known(value: Known | None) -> Known:
    """A field an earlier step filled: a step run before the one it needs fails here, at once."""
    if value is None:
        raise RuntimeError("a grading step ran before the step that fills what it needs")
    return value


@dataclass
class Grading:
    """One file's grading as its steps build it.

    Given: the file, the settings, when its grading started (one clock for everything done for
    it). ``found``: what the row will say, kept in a ``grader_error`` row if a later step fails.
    The rest is what a step hands on to the next ones. ``row`` is set by the step that finishes
    the file; the two exit stacks close the kernel and the workdir, at their steps or, if a step
    fails, in the runner."""

    path: Path
    settings: Settings
    started: float  # time.monotonic() when this file's grading began
    found: Progress
    submission: Submission | None = None
    lab: Lab | None = None
    repaired: Repaired | None = None
    program: list[Step] = field(default_factory=list)  # what is graded: up to the last check
    shown: list[Step] = field(default_factory=list)  # and the cells added after it (feedback)
    workdir: Path | None = None
    session: KernelSession | None = None
    order: list[str] = field(default_factory=list)  # parts, as their test cells ran
    moved: list[str] = field(default_factory=list)  # parts whose names changed after their cell
    visible: dict[str, str] = field(default_factory=dict)  # part id -> its visible check's output
    graded: dict[str, PartScore] = field(default_factory=dict)
    sent: list[Any] = field(default_factory=list)  # every hidden-test argument sent to a kernel
    restarts: int = 0
    # functions that ran out of time, and their verdict: shared by the file's kernels, so that a
    # hang costs the notebook one time limit (kernel/calls.py)
    hung: dict[str, tuple[str, str]] = field(default_factory=dict)
    row: GradeResult | None = None
    workdir_exit: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    kernel_exit: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    @property
    def parts(self) -> dict[str, Part]:
        """The lab's parts by id."""
        return {part.part_id: part for part in known(self.lab).parts}


GradingStep = Callable[[Grading], None]


def read_the_file(grading: Grading) -> None:
    """Intake (``intake.py``): the file's hash, its lab, what was converted; and the row, with
    intake's reason, if the file is no notebook of a known lab."""
    found = grading.found
    sub = grading.submission = read_submission(grading.path, found.student_id)
    found.sha256, found.lab, found.status, found.message = (
        sub.sha256, sub.lab_id, sub.status, sub.message)
    found.integrity = [IntegrityEvent("converted", "-", note) for note in sub.notes]
    if sub.status != Status.OK:
        grading.row = found.result()


def repair_the_notebook(grading: Grading) -> None:
    """The lab, its points, and the notebook in the release's shape with the student's answers
    put back (``repair.py``); what repair did joins the integrity report."""
    sub = known(grading.submission)
    grading.lab = get_lab(known(sub.lab_id))
    grading.found.max_score = grading.lab.max_score
    grading.repaired = repair(known(sub.notebook), grading.lab)
    grading.found.integrity += grading.repaired.integrity


def choose_the_cells(grading: Grading) -> None:
    """The cells to run: ``program``, up to the last check (:func:`needed_steps`), and ``shown``,
    with the cells a student added after it too (their errors are shown)."""
    everything = known(grading.repaired).program
    grading.program = needed_steps(everything)
    grading.shown = grading.program + [step for step in everything[len(grading.program):]
                                       if step.kind != CellKind.GIVEN]


def make_a_workdir(grading: Grading) -> None:
    """A temporary folder for the file's kernels, removed by :func:`remove_the_workdir` (or by the
    runner, if a step fails); from here on the file takes a kernel."""
    grading.workdir = grading.workdir_exit.enter_context(tempdirs.folder("grade"))
    grading.found.kernels = 1


def start_the_kernel(grading: Grading) -> None:
    """The kernel that runs the notebook: all the student is shown comes from it, before any
    hidden input exists in it. Shut down by :func:`shut_the_kernel` (or by the runner)."""
    grading.session = grading.kernel_exit.enter_context(_session(grading, "grading"))
    grading.found.isolation = grading.session.isolation


def run_the_visible_checks(grading: Grading) -> None:
    """Run ``shown`` with the visible checks: their output (``visible``) and the cells' errors
    (``found.cells``) are what the student is shown. Just before each part's test cell, the kernel
    notes what that part's hidden tests can reach. ``order``: the parts as their test cells ran."""
    session, parts = known(grading.session), grading.parts
    for step in grading.shown:
        if step.kind != CellKind.CHECK:
            run = session.run_cell(step.source)
            if run.status != CellStatus.OK:
                grading.found.cells.append(CellEvent(step.cell_id, step.kind, run.status,
                                                     run.error))
        elif step.cell_id in parts and step.cell_id not in grading.visible:
            try:
                session.snapshot(step.cell_id, hidden_test_names(parts[step.cell_id].hidden_tests))
            except (CallTimeout, KernelDied):
                pass  # never taken: this notebook's parts are graded at their places
            run = session.run_cell(step.source, replay=False, capture=True)
            grading.visible[step.cell_id] = run.stdout.strip() or run.error
            grading.order.append(step.cell_id)


def note_what_moved(grading: Grading) -> None:
    """``moved``: the parts whose hidden tests can reach something that changed after their test
    cell (a later cell redefined a function, changed a global it reads, defined a helper it
    calls...); every part, if the kernel cannot say."""
    try:
        grading.moved = known(grading.session).changed_since(grading.order)
    except (CallTimeout, KernelDied):
        grading.moved = grading.order


def run_the_hidden_tests(grading: Grading) -> None:
    """Each part's hidden tests after the whole notebook ran (``check.py``): the parts in the order
    their test cells ran, then those whose test cell never ran (never, for a built lab). From here
    on a hidden input may have reached the kernel."""
    session = known(grading.session)
    grading.found.exposed = True
    for part_id in grading.order:
        grading.graded[part_id] = _hidden_tests(session, grading.parts[part_id], grading.settings)
    for part in _not_graded(known(grading.lab), grading.graded):
        grading.graded[part.part_id] = _hidden_tests(session, part, grading.settings)


def shut_the_kernel(grading: Grading) -> None:
    """The arguments the kernel was sent and its restarts, kept; then it is shut down."""
    session = known(grading.session)
    grading.sent, grading.restarts = list(session.sent_arguments), session.restarts
    grading.kernel_exit.close()
    grading.session = None


def grade_moved_parts_at_their_places(grading: Grading) -> None:
    """If a part moved: every part's hidden tests at its test cell's place, in a second kernel
    whose output is never shown. A moved part keeps the better of its two grades
    (:func:`at_end_if_better`); if the notebook's time was used up before that kernel could start,
    every part is out of time."""
    if not grading.moved:
        return
    grading.found.kernels = 2
    try:
        second = _graded_at_place(grading, grading.program)
        at_place, more_sent = second.parts, second.sent
        grading.restarts += second.restarts
    except CallTimeout as failed:
        more_sent = []
        at_place = {part.part_id: PartScore(part.part_id, 0, part.points, f"not graded: {failed}",
                                            verdict=Verdict.OUT_OF_TIME)
                    for part in known(grading.lab).parts}
    grading.sent += more_sent
    grading.graded = {
        part_id: at_end_if_better(at_place[part_id], at_end) if part_id in grading.moved
        else at_place[part_id]
        for part_id, at_end in grading.graded.items()}


def grade_in_one_kernel(grading: Grading) -> None:
    """``--one-kernel``: the notebook and each part's hidden tests at its test cell's place, in one
    kernel; the student is shown only what ran before the first hidden input reached it."""
    grading.found.exposed = True
    alone = _graded_at_place(grading, grading.shown, shows=True, then_at_end=True)
    grading.graded, grading.sent, grading.restarts = alone.parts, alone.sent, alone.restarts
    grading.found.isolation = alone.isolation


def remove_the_workdir(grading: Grading) -> None:
    """The kernels' folder, removed once they are shut down."""
    grading.workdir_exit.close()
    grading.workdir = None


def write_the_row(grading: Grading) -> None:
    """The graded row: each part's grade, its message as the student may read it
    (:class:`Redactor`) and what its visible check showed; the score, their sum."""
    lab, graded = known(grading.lab), grading.graded
    redact = Redactor(grading.sent, public_text(lab.lab_id), shown=public_values(lab.lab_id))
    scored = {part.part_id: replace(graded[part.part_id], message=redact.part(graded[part.part_id]),
                                    visible_check=grading.visible.get(part.part_id, ""))
              for part in lab.parts}
    grading.found.status, grading.found.message = GRADED, known(grading.submission).message
    grading.row = grading.found.result(parts=scored, restarts=grading.restarts,
                                       score=sum(p.score for p in scored.values()))


BEFORE_THE_KERNELS: tuple[GradingStep, ...] = (
    read_the_file, repair_the_notebook, choose_the_cells, make_a_workdir)
# The notebook's own output from a kernel no hidden input reaches; the hidden tests after it.
FEEDBACK_KERNEL: tuple[GradingStep, ...] = (
    start_the_kernel, run_the_visible_checks, note_what_moved, run_the_hidden_tests,
    shut_the_kernel, grade_moved_parts_at_their_places)
ONE_KERNEL: tuple[GradingStep, ...] = (grade_in_one_kernel,)
AFTER_THE_KERNELS: tuple[GradingStep, ...] = (remove_the_workdir, write_the_row)


def steps(settings: Settings) -> tuple[GradingStep, ...]:
    """One file's steps, in order: with the feedback kernel, or ``--one-kernel``'s."""
    kernels = FEEDBACK_KERNEL if settings.feedback_kernel else ONE_KERNEL
    return BEFORE_THE_KERNELS + kernels + AFTER_THE_KERNELS


def _grade(grading: Grading) -> GradeResult:
    """The file's row: the steps in order, until one of them writes it. If a step raises, the
    kernel is shut down and then the workdir removed, and the error goes on to ``_guarded``."""
    with grading.workdir_exit, grading.kernel_exit:
        for step in steps(grading.settings):
            step(grading)
            if grading.row is not None:
                return grading.row
    raise RuntimeError("no grading step wrote the file's row")


# ---------------------------------------------------------------------------------------------
# What the steps share.


def _session(grading: Grading, name: str) -> KernelSession:
    """A kernel for this file, in a folder ``name`` of the workdir, on the file's one clock."""
    settings, course = grading.settings, current()
    session = KernelSession(known(grading.workdir) / name, settings.limits,
                            Path(settings.data_dir or course.default_data).resolve(),
                            settings.denied, preload=release_imports(known(grading.lab).lab_id),
                            course=CoursePaths.of(course),
                            clock=Clock(settings.limits.notebook_seconds, grading.started))
    session.calls.hung = grading.hung
    return session


def needed_steps(program: list[Step]) -> list[Step]:
    """The program up to its last check: what runs after it (closing plots, comparisons, a cell
    the student added at the end) cannot change any part's points, so it is not run.

    >>> program = [Step(CellKind.GIVEN, "", "a"), Step(CellKind.CHECK, "", "b"),
    ...            Step(CellKind.GIVEN, "", "c")]
    >>> [str(step.kind) for step in needed_steps(program)]
    ['given', 'check']
    """
    checks = [index for index, step in enumerate(program) if step.kind == CellKind.CHECK]
    return program[: checks[-1] + 1] if checks else program


def at_end_if_better(at_place: PartScore, at_end: PartScore) -> PartScore:
    """A part graded at its test cell's place and after the whole notebook ran: the grade at its
    place, unless only the whole notebook earns the points (a helper defined in a cell added below
    the test), which then count, with a note to move that cell up. The student guide promises
    this."""
    if at_place.score >= at_end.score:
        return at_place
    return replace(at_end, message=f"{MOVE_IT_UP}; {at_end.message}")


MOVE_IT_UP = ("earned once the whole notebook had run: this part uses something that a cell below "
              "its test defines or changes (the part's own check, where it stands, did not see "
              "it); move that cell above the test")


@dataclass(frozen=True)
class AtPlace:
    """What :func:`_graded_at_place` found: each part's grade, the arguments sent, the kernel's
    restarts and isolation."""

    parts: dict[str, PartScore]
    sent: list[Any]
    restarts: int
    isolation: str


def _graded_at_place(grading: Grading, program: list[Step], shows: bool = False,
                     then_at_end: bool = False) -> AtPlace:
    """Each part's hidden tests at its test cell's place, in a kernel of its own. If it ``shows``,
    ``grading.visible`` and ``grading.found.cells`` get what the notebook showed before the first
    hidden input reached the kernel. With ``then_at_end``, a part that failed at its place and
    has a cell added below it is graded once more after the whole program ran, and keeps the
    better grade (:func:`at_end_if_better`)."""
    graded: dict[str, PartScore] = {}
    added_below: set[str] = set()
    parts, settings = grading.parts, grading.settings
    with _session(grading, "at-place") as session:
        for step in program:
            if step.kind == CellKind.ADDED:
                added_below.update(graded)
            untouched = not session.sent_arguments  # no hidden input has reached this kernel yet
            if step.kind != CellKind.CHECK:
                run = session.run_cell(step.source)
                if run.status != CellStatus.OK and untouched and shows:
                    grading.found.cells.append(CellEvent(step.cell_id, step.kind, run.status,
                                                         run.error))
            elif step.cell_id in parts and step.cell_id not in graded:
                if untouched and shows:
                    run = session.run_cell(step.source, replay=False, capture=True)
                    grading.visible[step.cell_id] = run.stdout.strip() or run.error
                graded[step.cell_id] = _hidden_tests(session, parts[step.cell_id], settings)
        for part in _not_graded(known(grading.lab), graded):
            graded[part.part_id] = _hidden_tests(session, part, settings)
        if then_at_end:
            for part_id in added_below:
                if not graded[part_id].passed:
                    at_end = _hidden_tests(session, parts[part_id], settings)
                    graded[part_id] = at_end_if_better(graded[part_id], at_end)
        return AtPlace(graded, session.sent_arguments, session.restarts, session.isolation)


def _not_graded(lab: Lab, graded: dict[str, PartScore]) -> list[Part]:
    """The parts whose test cell never ran (never, for a built lab): graded after the others."""
    return [part for part in lab.parts if part.part_id not in graded]


def _hidden_tests(session: KernelSession, part: Part, settings: Settings) -> PartScore:
    """The part's hidden tests, in the grader's process, against the student's functions."""
    if session.seconds_left <= 0:
        return PartScore(part.part_id, 0, part.points,
                         "not graded: the notebook's time limit was used up before this part",
                         verdict=Verdict.OUT_OF_TIME)
    try:  # the message is the grader's own, never text a kernel made (verdicts.py)
        return run_part(session, part, min(settings.part_seconds, session.seconds_left))
    except Exception as error:  # the kernel could not be brought back: this part only
        return PartScore(part.part_id, 0, part.points,
                         f"this part could not be graded ({type(error).__name__})",
                         verdict=Verdict.NOT_GRADED)
