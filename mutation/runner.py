"""Each mutant of a lab through its part's visible check and its hidden tests, without a kernel.

The lab's solution notebook runs in this process, cell after cell, in one namespace, as
``tests/contracts.py`` runs it. Just before a solution cell runs, one child process is forked per
mutant of that cell: the child has the namespace as the notebook left it there (the earlier parts'
answers, the given cells' data), runs the mutated cell, the cells after it up to its part's check,
the check (what it printed), then the part's hidden tests (whether they failed), and reports both
through a pipe. A child that takes too long (a mutant that loops forever) is killed, and so is one
that asks for too much memory. The notebook runs once beforehand, hidden tests included, so that
the hidden tests' large reference answers (``bpe_labs.hidden.reference_answer``) are computed once
in this process, not once per child.
"""
from __future__ import annotations

import contextlib
import ctypes
import io
import json
import os
import resource
import select
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from IPython.core.inputtransformer2 import TransformerManager

from autograder.labs import HIDDEN_TESTS, Lab, nbgrader_meta
from bpe_labs.examples import answer_code
from mutation.generate import Mutant

# corpus-sized runs and timings (as tests/contracts.py)
SKIPPED_TAGS = {"nbval-ignore-output", "grading-skip"}
# A child's processor seconds (not wall-clock: a busy machine must not turn a slow mutant
# into a hang) up to the end of its checks: at least 1 s, or 20 times the unmutated
# cell's; then for the hidden tests: at least 2 s, or 4 times the unmutated cell's. A
# child that waits without computing is stopped after WALL times as many seconds.
CHECK_LIMIT = (1.0, 20)
HIDDEN_LIMIT = (2.0, 4)
WALL = 30
EXTRA_MEMORY = 2 << 30  # what a child may allocate beyond what this process holds


@dataclass
class Cell:
    index: int
    grade_id: str
    kind: str  # "solution", "graded" or "given"
    answer: str = ""  # a solution cell's answer code
    code: object = None  # compiled: the cell (a graded cell: its visible part)
    hidden: object = None  # a graded cell's hidden tests, compiled


@dataclass
class Outcome:
    """What one run of a solution cell (mutated or not) did to its parts."""

    # part -> what its check printed (or why it printed nothing)
    checks: dict[str, str] = field(default_factory=dict)
    # part -> "" when its hidden tests passed, else the failure
    hidden: dict[str, str] = field(default_factory=dict)
    check_seconds: float = 0.0
    hidden_seconds: float = 0.0
    stopped: str = ""  # "hang in the checks", "hang in the hidden tests", "died: ..."

    @property
    def check_killed(self) -> bool:
        return bool(self.stopped and not self.checks) or any(
            not check_passed(text) for text in self.checks.values()
        )

    @property
    def hidden_killed(self) -> bool:
        # A mutant that hangs before its hidden tests run
        # costs the grade too (the grader's time limit).
        return bool(self.stopped) or any(self.hidden.values())


def check_passed(printed: str) -> bool:
    return "✅" in printed and "❌" not in printed


def _compile(source: str, name: str):
    return compile(TransformerManager().transform_cell(source), f"<cell {name}>", "exec")


def lab_cells(lab: Lab) -> list[Cell]:
    cells = []
    for index, cell in enumerate(lab.solution_notebook().cells):
        if cell.cell_type != "code" or SKIPPED_TAGS & set(cell.metadata.get("tags", [])):
            continue
        meta = nbgrader_meta(cell)
        grade_id = meta.get("grade_id") or f"cell-{index}"
        if meta.get("solution"):
            answer = answer_code(cell.source)
            cells.append(Cell(index, grade_id, "solution", answer, _compile(answer, grade_id)))
        elif meta.get("grade"):
            match = HIDDEN_TESTS.search(cell.source)
            cells.append(
                Cell(
                    index,
                    grade_id,
                    "graded",
                    code=_compile(HIDDEN_TESTS.sub("", cell.source), grade_id),
                    hidden=_compile(match.group(1) if match else "", f"hidden tests: {grade_id}"),
                )
            )
        else:
            cells.append(Cell(index, grade_id, "given", code=_compile(cell.source, grade_id)))
    return cells


def parts_of_cell(cells: list[Cell], position: int) -> list[str]:
    found: list[str] = []
    for cell in cells[position + 1:]:
        if cell.kind == "solution" and found:
            break
        if cell.kind == "graded":
            found.append(cell.grade_id)
    return found


def _quietly(code, namespace: dict) -> str:
    """Run a cell, its output thrown away; the error it raised, if any."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, namespace)
    except Exception as error:  # noqa: BLE001 - a given cell broken by a mutant is no matter here
        return f"{type(error).__name__}: {error}"
    return ""


def run_notebook(
    cells: list[Cell], namespace: dict, before: Callable[[int], None] | None = None
) -> dict[str, tuple[str, str]]:
    """Run every cell, hidden tests included: part -> (what its check printed, its hidden
    tests' failure). ``before(position)`` is called before each solution cell runs."""
    results = {}
    for position, cell in enumerate(cells):
        if cell.kind == "solution" and before:
            before(position)
        if cell.kind == "graded":
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                try:
                    exec(cell.code, namespace)
                except Exception as error:  # noqa: BLE001
                    print(f"the check raised {type(error).__name__}: {error}")
            results[cell.grade_id] = (printed.getvalue(), _quietly(cell.hidden, namespace))
        else:
            error = _quietly(cell.code, namespace)
            if error and cell.kind == "solution":
                raise RuntimeError(f"the solution cell {cell.grade_id} raised {error}")
    return results


def _child(
    cells: list[Cell],
    position: int,
    source: str,
    parts: list[str],
    namespace: dict,
    report: Callable[[dict], None],
) -> None:
    """In the forked child: the mutated cell, the cells up to its parts' checks, the checks, then
    the hidden tests. Once one check has failed (or one part's hidden tests), the others of that
    kind are not run: the mutant is caught by the checks (or by the hidden tests) either way."""
    started = time.process_time()
    checks: dict[str, str] = {}
    graded = {}
    error = _quietly(compile(source, f"<mutant of {cells[position].grade_id}>", "exec"), namespace)
    if error:
        checks = {part: f"the solution cell raised {error}" for part in parts}
    else:
        last = max(i for i, cell in enumerate(cells) if cell.grade_id in parts)
        for cell in cells[position + 1:last + 1]:
            if cell.kind != "graded":
                _quietly(cell.code, namespace)
            elif cell.grade_id in parts:
                graded[cell.grade_id] = cell
                if any(not check_passed(text) for text in checks.values()):
                    continue  # already caught by a check
                printed = io.StringIO()
                with contextlib.redirect_stdout(printed):
                    try:
                        exec(cell.code, namespace)
                    except Exception as raised:  # noqa: BLE001
                        print(f"the check raised {type(raised).__name__}: {raised}")
                checks[cell.grade_id] = printed.getvalue()
    report({"checks": checks, "check_seconds": time.process_time() - started})
    started = time.process_time()
    hidden: dict[str, str] = {}
    for part in parts:
        if not any(hidden.values()):
            hidden[part] = (
                _quietly(graded[part].hidden, namespace) if part in graded else checks[part]
            )
    report({"hidden": hidden, "hidden_seconds": time.process_time() - started})


def _memory_now() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


@dataclass
class _Running:
    key: str
    pid: int
    fd: int
    deadline: float  # wall-clock
    cpu_limit: float  # processor seconds the child may have used by the end of this phase
    buffer: bytes = b""
    outcome: Outcome = field(default_factory=Outcome)
    phase: str = "checks"


def _fork(key: str, run: Callable[[Callable[[dict], None]], None], check_limit: float) -> _Running:
    read_end, write_end = os.pipe()
    limit = _memory_now() + EXTRA_MEMORY
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 0
        try:
            os.close(read_end)
            # PR_SET_PDEATHSIG: dies with this process
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

            def report(message: dict) -> None:
                data = (json.dumps(message) + "\n").encode()
                while data:
                    data = data[os.write(write_end, data):]

            run(report)
        except BaseException:  # noqa: BLE001 - whatever happened, the parent hears of it
            with contextlib.suppress(Exception):
                os.write(
                    write_end,
                    (json.dumps({"died": traceback.format_exc(limit=3)[-400:]}) + "\n").encode(),
                )
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    return _Running(key, pid, read_end, time.monotonic() + WALL * check_limit, check_limit)


def _cpu_of(pid: int) -> float:
    """The processor seconds a child has used so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


_TICKS = os.sysconf("SC_CLK_TCK")


def run_children(
    tasks: list[tuple[str, Callable]],
    jobs: int,
    check_limit: float,
    hidden_limit: float,
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Outcome]:
    """Run each task (key, run(report)) in a forked child, ``jobs`` at a time, within the limits."""
    pending = list(tasks)
    started = time.perf_counter()
    running: dict[int, _Running] = {}
    outcomes: dict[str, Outcome] = {}
    while pending or running:
        while pending and len(running) < jobs:
            key, run = pending.pop(0)
            child = _fork(key, run, check_limit)
            running[child.fd] = child
        timeout = min(
            0.25, max(0.0, min(child.deadline for child in running.values()) - time.monotonic())
        )
        ready, _, _ = select.select(list(running), [], [], timeout)
        for fd in ready:
            child = running[fd]
            data = os.read(fd, 1 << 16)
            if data:
                child.buffer += data
                *lines, child.buffer = child.buffer.split(b"\n")
                for line in lines:
                    message = json.loads(line)
                    if "checks" in message:
                        child.outcome.checks = message["checks"]
                        child.outcome.check_seconds = message["check_seconds"]
                        child.phase, child.deadline = (
                            "hidden tests",
                            time.monotonic() + WALL * hidden_limit,
                        )
                        child.cpu_limit = _cpu_of(child.pid) + hidden_limit
                    elif "hidden" in message:
                        child.outcome.hidden = message["hidden"]
                        child.outcome.hidden_seconds = message["hidden_seconds"]
                        child.phase = "done"
                    elif "died" in message:
                        child.outcome.stopped = f"died in the {child.phase}: {message['died']}"
                continue
            _finish(child, running, outcomes)  # end of file: the child is done
            if len(outcomes) % 25 == 0:
                progress(
                    f"  {len(outcomes)} of {len(tasks)} in {time.perf_counter() - started:.0f} s"
                )
        now = time.monotonic()
        for child in [
            child
            for child in running.values()
            if child.deadline <= now or _cpu_of(child.pid) > child.cpu_limit
        ]:
            os.kill(child.pid, signal.SIGKILL)
            child.outcome.stopped = child.outcome.stopped or f"hang in the {child.phase}"
            _finish(child, running, outcomes)
    return outcomes


def _finish(child: _Running, running: dict, outcomes: dict) -> None:
    os.waitpid(child.pid, 0)
    os.close(child.fd)
    del running[child.fd]
    if child.phase != "done" and not child.outcome.stopped:
        child.outcome.stopped = f"died in the {child.phase}"
    outcomes[child.key] = child.outcome


def analyse(
    lab: Lab,
    mutants: dict[str, list[Mutant]],
    jobs: int = 2,
    progress: Callable[[str], None] = lambda line: None,
) -> tuple[dict[str, Outcome], dict[str, list[str]]]:
    """Every mutant of the lab (solution cell -> its mutants) through
    its parts: mutant id -> Outcome, and solution cell -> its parts."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    cells = lab_cells(lab)
    # warms the reference answers of every part
    baseline = run_notebook(cells, {"__name__": "__main__"})
    broken = {
        part: result
        for part, result in baseline.items()
        if not check_passed(result[0]) or result[1]
    }
    if broken:
        raise RuntimeError(f"{lab.lab_id}: the solution itself fails {broken}")
    outcomes: dict[str, Outcome] = {}
    cell_parts: dict[str, list[str]] = {}

    def fork_mutants(position: int) -> None:
        cell = cells[position]
        parts = parts_of_cell(cells, position)
        cell_parts[cell.grade_id] = parts
        if not parts or not mutants.get(cell.grade_id):
            return

        def task(source: str) -> Callable:
            return lambda report: _child(cells, position, source, parts, namespace, report)

        started = time.perf_counter()
        # the unmutated cell passes (a busy moment may make a timed hidden test fail once)
        for _ in range(3):
            unmutated = run_children([("unmutated", task(cell.answer))], 1, 600.0, 600.0)[
                "unmutated"
            ]
            if not (unmutated.check_killed or unmutated.hidden_killed):
                break
        else:
            raise RuntimeError(
                f"{lab.lab_id}: the unmutated {cell.grade_id} fails in a child: {unmutated}"
            )
        check_limit = max(CHECK_LIMIT[0], CHECK_LIMIT[1] * unmutated.check_seconds)
        hidden_limit = max(HIDDEN_LIMIT[0], HIDDEN_LIMIT[1] * unmutated.hidden_seconds)
        tasks = [(mutant.mutant_id, task(mutant.source)) for mutant in mutants[cell.grade_id]]
        done = run_children(
            tasks,
            jobs,
            check_limit,
            hidden_limit,
            progress=lambda line: progress(f"{cell.grade_id}:{line}"),
        )
        # A mutant the hidden tests found too slow while its check passed: measured once
        # more, so that a busy moment of the machine does not make a hidden-only mutant.
        again = [(key, run) for key, run in tasks if _slow_only(done[key])]
        if again:
            for key, outcome in run_children(again, jobs, check_limit, hidden_limit).items():
                if not _slow_only(outcome):
                    done[key] = outcome
        outcomes.update(done)
        progress(
            f"{lab.lab_id}: {cell.grade_id}: {len(tasks)} mutants in "
            f"{time.perf_counter() - started:.1f} s"
        )

    namespace: dict = {"__name__": "__main__"}
    run_notebook(cells, namespace, before=fork_mutants)
    return outcomes, cell_parts


def _slow_only(outcome: Outcome) -> bool:
    if outcome.check_killed or not outcome.hidden_killed:
        return False
    return any(failure.startswith("TooSlow") for failure in outcome.hidden.values() if failure)
