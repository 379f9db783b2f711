"""Grade one submission: intake -> repair -> execute -> check -> a :class:`~autograder.result.GradeResult`.

``grade_file`` is what every worker runs (a local process, a Dask worker): it takes a path and
settings, returns a ``GradeResult``, and never raises for a bad notebook.

No hidden input may reach the feedback in any form (printed reversed, joined with dots,
remembered and raised later), so everything a student is shown of their own code's output is
taken before the first hidden input exists in a kernel: one kernel runs the notebook with its
visible checks, then runs each part's hidden tests, which yield only scores. Hidden tests belong at
their test cell's place (a later cell may redefine a function or change a global it reads): just
before each test cell, the kernel notes what that part's tests can reach (names, objects, the
bytes of plain values; ``codec.snapshot``), and if any of it has changed by the end, the parts are
graded at their places in a second kernel whose output is never shown (one notebook in many).
"""
from __future__ import annotations

import ast
import functools
import re
import time
import traceback
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from autograder import tempdirs
from autograder.check import ALL_PASSED, hidden_test_names, run_part
from autograder.course import current
from autograder.intake import read_submission
from autograder.kernel import CallTimeout, KernelDied, KernelSession, Limits, imported_modules
from autograder.labs import get_lab, release_cells
from autograder.repair import Step, repair
from autograder.result import GRADER_ERROR, GradeResult, MalformedResult



@dataclass(frozen=True)
class Settings:
    limits: Limits = field(default_factory=Limits)
    data_dir: Path | None = None  # None: the course's default corpora
    part_seconds: float = 60.0
    denied: tuple[Path, ...] = ()
    # Address-space cap of each local grading worker process (0: none); see autograder.workers.
    worker_memory_bytes: int = 6 * 1024**3
    # A second kernel shows the notebook's own checks with no hidden input in reach (about 0.7 s a
    # notebook). Without it, feedback shows only what the notebook printed before the first hidden input.
    feedback_kernel: bool = True


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
    """Every literal value the released notebook shows (code cells, and code in its texts), canonical."""
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
    ``abcab`` but not the public ``</w>``, and ``['ba', 'c']`` stays when the notebook has ``["ba", "c"]``.
    """

    # Messages that are the grader's own words, with nothing of an input in them.
    FIXED = frozenset({"", ALL_PASSED})

    def __init__(self, arguments: list, public: str, shortest: int = 3, shown: frozenset[str] = frozenset()):
        self._arguments, self._public, self._shortest, self._shown = arguments, public, shortest, shown

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

    def __call__(self, text: str) -> str:
        if text in self.FIXED:
            return text
        for fragment in self.fragments:
            if fragment in text:
                text = text.replace(fragment, "[hidden input]")
        return text


def grade_file(path: Path, student_id: str, settings: Settings = Settings(), attempts: int = 2) -> GradeResult:
    """Grade one file, within ``--notebook-timeout`` for everything (both kernels, restarts and
    replays, a retry included). A grader failure (say, a kernel that would not start on an
    overloaded machine) is retried once if time is left, before it becomes a ``grader_error`` row."""
    started = time.monotonic()
    for _ in range(attempts):
        result = _guarded(path, student_id, settings, started)
        if result.status != GRADER_ERROR or time.monotonic() - started > settings.limits.notebook_seconds / 2:
            break
    return replace(result, seconds=round(time.monotonic() - started, 3))


def _empty_result(path: Path, student_id: str) -> dict:
    """What ``_grade`` fills in: the JSON data of a result with nothing found yet."""
    return GradeResult(student_id, str(path)).to_json()


def error_result(path: Path, student_id: str, status: str, message: str) -> GradeResult:
    """The row of a file that could not be graded, for reasons outside the file's own grading."""
    return GradeResult(student_id, str(path), status=status, message=message)


def _guarded(path: Path, student_id: str, settings: Settings, started: float) -> GradeResult:
    """Every step for one file; whatever it raises (RecursionError, MemoryError, a bug of ours)
    costs this file's row only."""
    found, exposed = _empty_result(path, student_id), [False]
    try:
        _grade(Path(path), student_id, settings, started, found, exposed)
        return GradeResult.from_json(found)
    except Exception as error:
        # After a hidden input reached a kernel, an error's text may carry what that kernel said
        # (a log, a reply): the row names the class of error only. The traceback is the instructor's.
        said = "" if exposed[0] else f": {str(error)[:300]}"
        message = f"this file could not be graded ({type(error).__name__}{said})"
        try:
            trace = traceback.format_exc(limit=20)[-5000:]
        except Exception:
            trace = None
    try:  # what was found before the failure stays: the lab, the file's hash, the integrity report, the cells that ran
        partial = GradeResult.from_json({**found, "status": GRADER_ERROR})
    except MalformedResult:  # what _grade filled in is itself what failed
        partial = GradeResult(student_id, str(path))
    return replace(partial, status=GRADER_ERROR, message=message, parts={}, score=None, traceback=trace)


@functools.lru_cache(maxsize=None)
def release_imports(lab_id: str) -> tuple[str, ...]:
    """What the released notebook imports: kernels start with it loaded (see kernel.Zygote)."""
    return imported_modules(cell.source for cell in release_cells(lab_id) if cell.cell_type == "code")


def _session(workdir: str, name: str, settings: Settings, started: float, lab_id: str) -> KernelSession:
    session = KernelSession(Path(workdir) / name, settings.limits, Path(settings.data_dir or current().default_data).resolve(), settings.denied,
                            preload=release_imports(lab_id))
    session._started_at = started  # one clock for everything done for this file
    return session


def _grade(path: Path, student_id: str, settings: Settings, started: float, result: dict, exposed: list) -> None:
    """Fills ``result`` in; sets ``exposed[0]`` once a hidden input may have reached a kernel."""
    sub = read_submission(path, student_id)
    result.update(sha256=sub.sha256, lab=sub.lab_id, status=sub.status, message=sub.message,
                  integrity=[{"event": "converted", "cell": "-", "detail": n} for n in sub.notes])
    if sub.status != "ok":
        return
    lab = get_lab(sub.lab_id)
    result["max_score"] = lab.max_score
    repaired = repair(sub.notebook, lab)
    result["integrity"] += repaired.integrity
    parts = {part.part_id: part for part in lab.parts}
    program = needed_steps(repaired.program)
    # the cells a student added after the last check run too (for the feedback): their errors are shown
    shown = program + [step for step in repaired.program[len(program):] if step.kind != "given"]
    graded: dict[str, dict] = {}
    visible: dict[str, str] = {}
    with tempdirs.folder("grade") as workdir:
        result["kernels"] = 1
        if not settings.feedback_kernel:  # --one-kernel: shown is only what ran before the first hidden input
            exposed[0] = True
            graded, sent, restarts, result["isolation"] = _graded_at_place(
                workdir, shown, parts, lab, settings, started, visible, result["cells"], then_at_end=True)
        else:
            # 1. One kernel runs the notebook with its visible checks: all the student is shown, before
            # any hidden input exists in it. Then the hidden tests, after the whole notebook ran.
            with _session(workdir, "grading", settings, started, lab.lab_id) as session:
                result["isolation"] = session.isolation
                order = _visible_run(session, shown, parts, visible, result["cells"])
                try:
                    moved = session.changed_since(order)
                except (CallTimeout, KernelDied):
                    moved = order
                exposed[0] = True
                for part_id in order:
                    graded[part_id] = _hidden_tests(session, parts[part_id], settings)
                _grade_the_rest(session, lab, graded, settings)
                sent = list(session.sent_arguments)
                restarts = session.restarts
            if moved:
                # 2. Something a part relies on changed after its test cell (a later cell redefined a
                # function, changed a global it reads, defined a helper it calls...): hidden tests at
                # each test cell's place, in a second kernel. Nothing of that kernel's output is shown.
                # A moved part keeps the better of its two grades (see at_end_if_better).
                result["kernels"] = 2
                try:
                    at_place, more_sent, more, _ = _graded_at_place(workdir, program, parts, lab, settings, started)
                    restarts += more
                except CallTimeout as failed:  # the notebook's time was used up before it could start
                    more_sent, at_place = [], {part.part_id: {"part_id": part.part_id, "score": 0, "max_score": part.points,
                                                "message": f"not graded: {failed}"} for part in lab.parts}
                sent += more_sent
                graded = {part_id: at_end_if_better(at_place[part_id], entry) if part_id in moved else at_place[part_id]
                          for part_id, entry in graded.items()}
    redact = Redactor(sent, public_text(lab.lab_id), shown=public_values(lab.lab_id))
    for part_id, entry in graded.items():
        entry["message"] = redact(entry["message"])
        entry["visible_check"] = visible.get(part_id, "")
    result["parts"] = {part.part_id: graded[part.part_id] for part in lab.parts}
    result["restarts"] = restarts
    result["score"] = sum(p["score"] for p in result["parts"].values())
    result["status"] = "graded"


def needed_steps(program: list) -> list:
    """The program up to its last check: what runs after it (closing plots, comparisons, a cell
    the student added at the end) cannot change any part's points, so it is not run.

    >>> [step.kind for step in needed_steps([Step("given", "", "a"), Step("check", "", "b"), Step("given", "", "c")])]
    ['given', 'check']
    """
    checks = [index for index, step in enumerate(program) if step.kind == "check"]
    return program[: checks[-1] + 1] if checks else program


def _visible_run(session: KernelSession, program: list, parts: dict, visible: dict[str, str],
                 cells: list[dict]) -> list[str]:
    """Run the program with the visible checks; their output and the cells' errors are what the
    student is shown. Just before each part's test cell, the kernel notes what that part's hidden
    tests can reach. Returns the parts in the order their test cells ran."""
    order = []
    for step in program:
        if step.kind == "check":
            if step.cell_id in parts and step.cell_id not in visible:
                try:
                    session.snapshot(step.cell_id, hidden_test_names(parts[step.cell_id].hidden_tests))
                except (CallTimeout, KernelDied):
                    pass  # never taken: this notebook's parts are graded at their places
                run = session.run_cell(step.source, replay=False, capture=True)
                visible[step.cell_id] = run.stdout.strip() or run.error
                order.append(step.cell_id)
            continue
        run = session.run_cell(step.source)
        if run.status != "ok":
            cells.append({"cell": step.cell_id, "kind": step.kind, "status": run.status, "error": run.error})
    return order


def at_end_if_better(at_place: dict, at_end: dict) -> dict:
    """A part graded at its test cell's place and after the whole notebook ran: the grade at its place,
    unless only the whole notebook earns the points (a helper defined in a cell added below the test),
    which then count, with a note to move that cell up. The student guide promises this."""
    if at_place["score"] >= at_end["score"]:
        return at_place
    return {**at_end, "message": f"{MOVE_IT_UP}; {at_end['message']}"}


MOVE_IT_UP = ("earned once the whole notebook had run: this part uses something that a cell below its test defines "
              "or changes (the part's own check, where it stands, did not see it); move that cell above the test")


def _graded_at_place(workdir: str, program: list, parts: dict, lab, settings: Settings, started: float,
                     visible: dict[str, str] | None = None, cells: list[dict] | None = None,
                     then_at_end: bool = False) -> tuple:
    """Each part's hidden tests at its test cell's place, in a kernel of its own; with ``visible``
    and ``cells``, what the notebook showed before the first hidden input reached the kernel. With
    ``then_at_end``, a part that failed at its place and has a cell added below it is graded once
    more after the whole program ran, and keeps the better grade (``at_end_if_better``).
    Returns (part results, arguments sent, restarts, isolation)."""
    graded: dict[str, dict] = {}
    added_below: set[str] = set()
    with _session(workdir, "at-place", settings, started, lab.lab_id) as session:
        for step in program:
            if step.kind == "added":
                added_below.update(graded)
            untouched = not session.sent_arguments  # no hidden input has reached this kernel yet
            if step.kind != "check":
                run = session.run_cell(step.source)
                if run.status != "ok" and untouched and cells is not None:
                    cells.append({"cell": step.cell_id, "kind": step.kind, "status": run.status, "error": run.error})
            elif step.cell_id in parts and step.cell_id not in graded:
                if untouched and visible is not None:
                    run = session.run_cell(step.source, replay=False, capture=True)
                    visible[step.cell_id] = run.stdout.strip() or run.error
                graded[step.cell_id] = _hidden_tests(session, parts[step.cell_id], settings)
        _grade_the_rest(session, lab, graded, settings)
        if then_at_end:
            for part_id in added_below:
                if graded[part_id]["score"] < graded[part_id]["max_score"]:
                    graded[part_id] = at_end_if_better(graded[part_id], _hidden_tests(session, parts[part_id], settings))
        return graded, session.sent_arguments, session.restarts, session.isolation


def _grade_the_rest(session: KernelSession, lab, graded: dict[str, dict], settings: Settings) -> None:
    """The parts whose test cell never ran (never, for a built lab), after the others."""
    for part in lab.parts:
        if part.part_id not in graded:  # not setdefault: its argument would grade every part again
            graded[part.part_id] = _hidden_tests(session, part, settings)


def _hidden_tests(session: KernelSession, part, settings: Settings) -> dict:
    """The part's hidden tests, in the grader's process, against the student's functions."""
    if session.seconds_left <= 0:
        return {"part_id": part.part_id, "score": 0, "max_score": part.points,
                "message": "not graded: the notebook's time limit was used up before this part"}
    try:  # the message is the grader's own, never text a kernel made (verdicts.py)
        return asdict(run_part(session, part, min(settings.part_seconds, session.seconds_left)))
    except Exception as error:  # the kernel could not be brought back: this part only
        return {"part_id": part.part_id, "score": 0, "max_score": part.points,
                "message": f"this part could not be graded ({type(error).__name__})"}
