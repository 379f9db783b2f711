"""Gradescope: build the autograder zip of one lab, and grade one submission inside Gradescope.

Gradescope's autograder format (https://gradescope-autograders.readthedocs.io/en/latest/specs/):
a zip with ``setup.sh`` and ``run_autograder`` at its root is unpacked into ``/autograder/source``;
each student's files arrive in ``/autograder/submission``; ``run_autograder`` must write
``/autograder/results/results.json``.

The zip holds the kit's packages, the lab's solution notebook (its hidden tests) and released
notebook, the data the lab reads and ``requirements.txt``, in the repository's own layout, so that
the kit run from ``source/`` finds them as it does in a clone. Grading is ``grade.grade_file``,
the engine and kernel isolation of ``python -m autograder grade``; this module only translates
its result into Gradescope's ``results.json``: one test per graded part, whose output is the same
feedback text as the HTML feedback (hidden-test inputs already redacted by the engine).

``AUTOGRADER_GRADESCOPE_ROOT`` replaces ``/autograder`` (tests unpack the zip into a temporary
folder).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import stat
import sys
import time
import traceback
import zipfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from autograder.kernel import tempdirs
from autograder.course import Course, current, use
from autograder.kernel.limits import PART_SECONDS, Limits
from autograder.grading.result import (
    GRADED, GRADER_ERROR, NO_NOTEBOOK, CellKind, GradeResult, PartScore)

# The folder that holds this package: in an unpacked zip, Gradescope's /autograder/source.
SOURCE = Path(__file__).resolve().parent.parent
ROOT_VARIABLE = "AUTOGRADER_GRADESCOPE_ROOT"
DEFAULT_ROOT = Path("/autograder")
CONFIG_NAME = "gradescope.json"
TEMPLATES = Path(__file__).with_name("gradescope_files")
# Test visibilities of Gradescope's specification.
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
# A fixed time stamp: the same sources give the same zip, byte for byte.
ZIP_TIME = (2020, 1, 1, 0, 0, 0)
STUDENT_ID = "submission"
# Characters of one test's output: a check that prints thousands of lines must not make results.json
# too large for Gradescope to show.
OUTPUT_LIMIT = 10_000


@dataclass(frozen=True)
class GradescopeConfig:
    """What ``run_autograder`` needs to know besides the files: written into the zip as
    gradescope.json."""

    lab: str
    data_dir: str  # relative to the unpacked source folder
    visibility: str = "visible"
    limits: dict = field(default_factory=dict)  # autograder.kernel.limits.Limits fields
    part_seconds: float = PART_SECONDS
    course: str = ""  # the course object, as module:attr

    @classmethod
    def read(cls, source: Path) -> "GradescopeConfig":
        return cls(**json.loads((Path(source) / CONFIG_NAME).read_text(encoding="utf-8")))


# -- building the zip ---------------------------------------------------------------------------

def kit_packages(course: Course | None = None) -> list[Path]:
    """The packages grading needs: the engine, the course's package and the packages its hidden
    tests import (wherever they are installed)."""
    import importlib.util

    course = course or current()
    found = importlib.util.find_spec(course.spec.partition(":")[0].split(".")[0])
    # find_spec finds nothing (None) for a course that is not an installed package
    locations = (found.submodule_search_locations or []) if found else []
    folders = [Path(__file__).resolve().parent, *course.package_folders(),
               *[Path(p).resolve() for p in locations]]
    return list(dict.fromkeys(folders))


def requirements(course: Course | None = None) -> bytes:
    """What setup.sh installs: the course's requirements.txt in a checkout, else the requirements of
    the installed distribution that holds the engine."""
    from importlib.metadata import PackageNotFoundError, packages_distributions, requires

    course = course or current()
    listed = Path(course.root) / "requirements.txt"
    if listed.is_file():
        return listed.read_bytes()
    for distribution in packages_distributions().get(__package__, []):
        try:
            return "".join(
                f"{line}\n" for line in requires(distribution) or [] if "extra ==" not in line
            ).encode()
        except PackageNotFoundError:
            continue
    raise FileNotFoundError(
        "no requirements.txt beside the course and no installed distribution of the engine"
    )


def _tree(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*")
                  if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc")


def zip_members(lab_id: str, data_dir: Path | None = None) -> tuple[dict[str, Path], str]:
    """Archive name -> file on disk, for every course file the lab's grading needs; and the name
    inside the zip of the folder the notebooks load corpora from.

    The zip's ``source/`` is laid out as a checkout: the packages at its top, the course's files
    where they lie under the course's root (``solutions/``, ``notebooks/``, ``data/``), whether the
    course runs from a checkout or is installed (its files then lie in the package, left out here).
    Data: the course's data folder, which the student's kernel sees as ``./data`` (the lab
    documents, the stand-in corpora); and ``data_dir`` (default: the course's default corpora)
    as ``data/course/`` if it lies outside the course's data folder.
    """
    from autograder.labs import get_lab

    course = current()
    root = Path(course.root).resolve()
    lab = get_lab(lab_id)
    members: dict[str, Path] = {}

    def add(path: Path, name: str | None = None) -> None:
        members[name or path.resolve().relative_to(root).as_posix()] = path

    for package in kit_packages(course):
        # an installed course: its files lie in its package
        holds_course = root.is_relative_to(package)
        for path in _tree(package):
            if not (holds_course and path.resolve().is_relative_to(root)):  # only the lab's, below
                add(path, f"{package.name}/{path.relative_to(package).as_posix()}")
    add(lab.solution_path)
    add(lab.student_path)
    for path in _tree(Path(course.data)):
        add(path)
    data_dir = Path(data_dir or course.default_data).resolve()
    if not data_dir.is_dir():
        raise FileNotFoundError(f"no data folder {data_dir}")
    inside = data_dir.is_relative_to(Path(course.data).resolve())
    shipped_data = data_dir.relative_to(root).as_posix() if inside else "data/course"
    for path in _tree(data_dir):
        add(path, f"{shipped_data}/{path.relative_to(data_dir).as_posix()}")
    return members, shipped_data


def build_zip(lab_id: str, out: Path, data_dir: Path | None = None, visibility: str = "visible",
              limits=None, part_seconds: float = PART_SECONDS) -> Path:
    """Write Gradescope's autograder zip for one lab to ``out``; returns ``out``."""
    if visibility not in VISIBILITIES:
        raise ValueError(f"visibility must be one of {', '.join(VISIBILITIES)}, not {visibility!r}")
    members, shipped_data = zip_members(lab_id, data_dir)
    config = GradescopeConfig(
        lab_id, shipped_data, visibility, asdict(limits or Limits()), part_seconds, current().spec
    )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for script in ("setup.sh", "run_autograder"):
            _write(archive, script, (TEMPLATES / script).read_bytes(), executable=True)
        _write(archive, CONFIG_NAME, (json.dumps(asdict(config), indent=1) + "\n").encode())
        _write(archive, "requirements.txt", requirements())
        for name, path in sorted(members.items()):
            _write(archive, name, path.read_bytes())
    return out


def _write(archive: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    # Gradescope runs the scripts as they are
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    archive.writestr(info, data)


# -- grading inside Gradescope ------------------------------------------------------------------

def find_notebook(submission_dir: Path) -> tuple[Path | None, str]:
    """The one notebook of a submission, or why there is not exactly one. Only a regular file of
    its own inside ``submission_dir`` counts: a symbolic link (say, to ``../source/solutions/...``,
    which a zip can carry), a link inside a linked folder, a FIFO or a device is never followed."""
    submission_dir = Path(submission_dir)
    notebooks: list[Path] = []
    others: list[Path] = []  # notebooks that are links or not regular files
    for folder, folders, files in os.walk(submission_dir, followlinks=False):
        folders[:] = sorted(name for name in folders if name != ".ipynb_checkpoints")
        for name in sorted(files) + [name for name in folders if Path(folder, name).is_symlink()]:
            if name.endswith(".ipynb"):
                path = Path(folder, name)
                (notebooks if _regular_file_of_its_own(path) else others).append(path)
    if not notebooks and others:
        names = ", ".join(path.relative_to(submission_dir).as_posix() for path in others)
        return None, (
            f"Your submission's notebook ({names}) is a link or not an ordinary file, which the "
            "autograder does not follow. Upload the notebook file itself: in Colab, File → "
            "Download → Download .ipynb."
        )
    if not notebooks:
        return None, (
            "No notebook (.ipynb file) was found in your submission. Upload the lab's notebook "
            "itself: in Colab, File → Download → Download .ipynb."
        )
    if len(notebooks) > 1:
        names = ", ".join(path.relative_to(submission_dir).as_posix() for path in notebooks)
        return None, (
            f"Your submission has {len(notebooks)} notebooks ({names}). Upload only the lab's "
            "notebook, so that the autograder knows which one to grade."
        )
    return notebooks[0], ""


def _regular_file_of_its_own(path: Path) -> bool:
    """A regular file (not a link to one), with no other name (a hard link to the solutions would be
    one)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1


def private_copy(notebook: Path, folder: Path) -> Path:
    """The notebook's bytes, read without following a link, in a file of the grader's own: what is
    graded cannot be swapped for another file between the check and the reading."""
    descriptor = os.open(notebook, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ValueError(f"{notebook.name} is not a regular file")
        copy = folder / notebook.name
        copy.write_bytes(handle.read())
    return copy


def protect_root(root: Path, keep_readable: list[Path]) -> None:
    """As root, close the Gradescope root to every other user: the kernel's own uid (in either
    isolation mode) can then read neither the solutions and hidden tests in ``source/`` nor the
    submission, and cannot write ``results/``. The folders of ``keep_readable`` (the lab's data)
    stay readable; the folders above them can only be passed through."""
    if os.geteuid() != 0:
        return
    root = Path(root).resolve()
    keep = [Path(path).resolve() for path in keep_readable]
    passages = {
        parent
        for path in keep
        for parent in path.parents
        if parent == root or parent.is_relative_to(root)
    }

    def close(folder: Path) -> None:
        for entry in os.scandir(folder):
            path = Path(entry.path)
            if any(path == k or path.is_relative_to(k) for k in keep) or entry.is_symlink():
                continue
            if path in passages:
                os.chmod(path, 0o711)
                close(path)
            else:
                os.chmod(path, stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode) & 0o700)

    os.chmod(root, 0o711)
    close(root)


def _points(value: float) -> str:
    return f"{value:g}"


def _shortened(text: str, limit: int = OUTPUT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit:,} more characters not shown)"


def part_output(part: PartScore) -> str:
    """What the HTML feedback says about one part: the hidden tests' message and the notebook's own
    check."""
    text = part.message
    if part.visible_check:
        text += f"\n\nYour notebook's own check on the example said:\n{part.visible_check}"
    return _shortened(text)


def summary(result: GradeResult, lab) -> str:
    """The submission-wide text: the score, or why there is none, and what was done to the
    notebook."""
    if result.status == GRADED and result.score is not None:  # a graded result has its score
        lines = [
            f"{lab.title}: {_points(result.score)} / {_points(lab.max_score)} points.",
            "Each test below is one graded part. The autograder ran your functions on inputs you "
            "have not seen; a part earns its points when every check passes.",
        ]
    elif result.status == GRADER_ERROR:
        lines = [
            "The autograder could not grade this notebook because of a problem of its own, not of "
            "your code. Please tell your instructor; you may also submit again."
        ]
    else:
        lines = [f"This submission could not be graded: {result.message}"]
    problems = [cell for cell in result.cells if cell.kind != CellKind.GIVEN]
    if problems:
        lines += ["", "Cells that did not run:"]
        lines += [f"- {cell.cell} ({cell.kind}): {cell.status} — {cell.error}" for cell in problems]
    if result.integrity:
        lines += [
            "",
            "Changes to the notebook's structure (the autograder put the lab back in shape):",
        ]
        lines += [f"- {event.event} · {event.cell}: {event.detail}" for event in result.integrity]
    return _shortened("\n".join(lines))


def to_results(result: GradeResult, lab, visibility: str = "visible") -> dict:
    """Gradescope's results.json for one graded (or ungradable) submission."""
    tests = []
    for number, part in enumerate(lab.parts, start=1):
        graded = result.parts.get(part.part_id)
        score: float
        if graded is None:
            score, output = 0, "This part was not graded: see the message above the tests."
        else:
            score, output = graded.score, part_output(graded)
        tests.append(
            {
                "name": part.part_id,
                "number": str(number),
                "score": score,
                "max_score": part.points,
                "status": "passed" if score >= part.points else "failed",
                "visibility": visibility,
                "output": output,
                "output_format": "text",
            }
        )
    return {"score": result.score or 0, "output": summary(result, lab), "output_format": "text",
            "visibility": visibility, "stdout_visibility": "hidden", "tests": tests}


def grade_submission(root: Path) -> dict:
    """Grade the notebook in ``root/submission`` with the lab of the unpacked zip; Gradescope's
    results."""
    from autograder.batch.deadline import grade_within_time
    from autograder.grading.settings import Settings
    from autograder.labs import get_lab

    config = GradescopeConfig.read(SOURCE)
    course = use(config.course)
    lab = get_lab(config.lab)
    data_dir = Path(course.root) / config.data_dir
    protect_root(root, [Path(course.data), data_dir])
    notebook, problem = find_notebook(root / "submission")
    if notebook is None:
        result = GradeResult(
            STUDENT_ID, str(root / "submission"), status=NO_NOTEBOOK, message=problem
        )
    else:
        # The whole Gradescope root is off limits to the student's kernel: the hidden tests in
        # source/, this submission's results/ (results.json must come from the grader alone).
        settings = Settings(limits=Limits(**config.limits), data_dir=data_dir,
                            part_seconds=config.part_seconds, denied=(Path(root).resolve(),))
        with tempdirs.folder("submission") as folder:
            # graded from outside the work: results.json is
            # written whatever the grading does, in time
            result = grade_within_time(private_copy(notebook, folder), STUDENT_ID, settings)
        result = replace(result, file=str(notebook))
        print(
            f"graded {notebook.name}: {result.status}, score {result.score} / {result.max_score}, "
            f"{result.seconds:.1f} s, kernel isolation: {result.isolation or 'unknown'}"
        )
        if result.status == GRADER_ERROR:  # for the instructor: stdout is hidden from students
            print(result.traceback or result.message)
    return to_results(result, lab, config.visibility)


def run(root: Path) -> int:
    """``run_autograder``'s work: results.json is always written, whatever the submission holds, by
    the time --notebook-timeout (and a short grace) is up; SIGTERM ends the grading and writes it
    too."""
    started = time.monotonic()
    root = Path(root)
    print(f"autograder: course files in {SOURCE}, Gradescope root {root}")
    tempdirs.sweep()

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)
    try:
        results = grade_submission(root)
    except BaseException:
        traceback.print_exc(file=sys.stdout)
        results = {
            "score": 0,
            "output": "The autograder failed before it could grade this submission, because of a "
            "problem of its own, not of your code. Please tell your instructor.",
            "output_format": "text",
            "stdout_visibility": "hidden",
            "tests": [],
        }
    results["execution_time"] = round(time.monotonic() - started)
    (root / "results").mkdir(parents=True, exist_ok=True)
    (root / "results" / "results.json").write_text(
        json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8"
    )
    print(f"score {results['score']}; wrote {root / 'results' / 'results.json'}")
    from autograder.batch.workers import close_watched

    close_watched()
    tempdirs.sweep()
    return 0


def check() -> int:
    """For setup.sh: the kit imports and the shipped lab is readable."""
    from autograder.labs import get_lab

    config = GradescopeConfig.read(SOURCE)
    use(config.course)
    lab = get_lab(config.lab)
    print(f"ready to grade {lab.lab_id} ({len(lab.parts)} parts, {_points(lab.max_score)} points)")
    return 0


# -- command line -------------------------------------------------------------------------------

def add_build_arguments(parser: argparse.ArgumentParser, lab_type=str) -> None:
    """Arguments of ``python -m autograder gradescope`` (``lab_type`` checks the lab's id:
    cli.lab_choice)."""
    from autograder.kernel.limits import add_limit_arguments

    course = current()
    parser.description = (
        "Build Gradescope's autograder zip for one lab: upload it to a Programming Assignment."
    )
    parser.add_argument(
        "lab",
        type=lab_type,
        metavar="LAB",
        help=f"the lab to grade: one of {', '.join(course.lab_ids())}",
    )
    parser.add_argument(
        "--out", default="autograder.zip", help="where to write the zip (default ./%(default)s)"
    )
    parser.add_argument(
        "--data-dir",
        default=os.environ.get(course.data_variable),
        help=f"corpora the notebooks load, shipped in the zip (default: ${course.data_variable}, "
        f"else {course.default_data})",
    )
    parser.add_argument(
        "--visibility",
        choices=VISIBILITIES,
        default="visible",
        help="when students see the results (Gradescope's test visibility; default %(default)s)",
    )
    # grade's, with the same defaults (autograder/kernel/limits.py)
    add_limit_arguments(parser, gradescope=True)
    parser.set_defaults(run=build_command)


def build_command(args) -> int:
    from autograder.kernel.limits import limits_from

    limits = limits_from(args)
    out = build_zip(
        args.lab,
        Path(args.out),
        Path(args.data_dir) if args.data_dir else None,
        args.visibility,
        limits,
        args.part_timeout,
    )
    with zipfile.ZipFile(out) as archive:
        count = len(archive.namelist())
    print(
        f"wrote {out} ({count} files, {out.stat().st_size / 1024:.0f} KiB): upload it as the "
        "assignment's autograder on Gradescope (docs/GRADESCOPE.md)"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder.gradescope",
        description="Grade the submission in a Gradescope root (what run_autograder runs).",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(os.environ.get(ROOT_VARIABLE, DEFAULT_ROOT)),
        help=f"Gradescope's root folder (default ${ROOT_VARIABLE}, else /autograder)",
    )
    parser.add_argument(
        "--check", action="store_true", help="only check that the kit and the lab load (setup.sh)"
    )
    args = parser.parse_args(argv)
    return check() if args.check else run(args.root)


if __name__ == "__main__":
    sys.exit(main())
