"""``python -m autograder``: grade a folder, build the student notebooks, build a Gradescope zip; and the
commands of the course (``--course module:attr``, else the installed one: ``autograder.course``)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from autograder.course import Course, current, use


def _grade(args) -> int:
    from autograder.batch import CourseChanged, InsecureScheduler, dask_security, grade_folder
    from autograder.grade import Settings
    from autograder.identity import read_roster
    from autograder.kernel import Limits
    from autograder.report import grades_text

    limits = Limits(cell_seconds=args.cell_timeout, call_seconds=args.call_timeout,
                    notebook_seconds=args.notebook_timeout, memory_bytes=int(args.memory_mb * 1024 * 1024),
                    max_restarts=args.max_restarts, require_isolation=args.require_isolation)
    if args.require_isolation:
        from autograder.kernel import isolation_status

        status = isolation_status()
        if not status.startswith("landlock"):
            print(f"error: --require-isolation: kernels cannot be isolated here, so nothing was graded: {status}",
                  file=sys.stderr)
            return 2
    settings = Settings(limits=limits, data_dir=Path(args.data_dir).resolve(), part_seconds=args.part_timeout,
                        worker_memory_bytes=int(args.grader_memory_mb * 1024 * 1024), feedback_kernel=not args.one_kernel)
    try:
        roster = read_roster(Path(args.roster)) if args.roster else None
    except (ValueError, OSError) as error:
        print(f"error: the roster could not be read: {error}", file=sys.stderr)
        return 2
    try:
        security = dask_security(args.scheduler, args.tls_ca_file, args.tls_cert, args.tls_key,
                                 args.insecure) if args.scheduler else None
        results = grade_folder(Path(args.submissions), Path(args.out), settings, workers=args.workers,
                               scheduler=args.scheduler, db_path=args.db, progress=not args.quiet,
                               roster=roster, security=security)
    except (CourseChanged, InsecureScheduler) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"\n{grades_text(results)}")
    print(f"\n{len(results)} files: grades in {Path(args.out) / 'grades.csv'}, feedback in {Path(args.out) / 'feedback'}, "
          f"class report in {Path(args.out) / 'class_report.md'}")
    return 0


def exit_quickly(code: int) -> int:
    """``code``, after freezing this process's objects for its exit (the end of a command run as a program).

    Everything is written and closed by then. Frozen, the objects are not collected again, one
    collection after another, while the interpreter tears its modules down: the exit after grading
    takes 0.02 s instead of 0.08 s."""
    import gc

    gc.freeze()
    return code


def shown(path: Path) -> Path:
    """``path`` relative to the course's root if it lies there (what ``wrote ...`` lines print)."""
    root = current().root
    return path.relative_to(root) if path.is_relative_to(root) else path


def _build(args) -> int:
    from autograder.release import release

    for path in release(Path(args.out)):
        print(f"wrote {shown(path)}")
    return 0


def main(argv: list[str] | None = None, course: Course | str | None = None, prog: str = "python -m autograder") -> int:
    """The command line, for ``course`` (default: ``--course``, else the one ``autograder.course`` finds)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    first = argparse.ArgumentParser(add_help=False)
    first.add_argument("--course")
    known, argv = first.parse_known_args(argv)
    try:
        course = use(known.course or course or current())
    except (LookupError, ImportError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog=prog, description=f"{__doc__}\nCourse: {course.name} ({course.spec}).")
    parser.add_argument("--course", help="the course to use, as module:attr (default: the installed course)")
    commands = parser.add_subparsers(dest="command", required=True)

    grade = commands.add_parser("grade", help="grade a folder of handed-in notebooks")
    grade.add_argument("submissions", help="a flat folder of .ipynb files (student id = file name up to the first "
                                           "underscore) or an nbgrader submitted/<student>/<lab>/ tree")
    grade.add_argument("--out", required=True, help="folder for grades.csv, feedback/, class_report.md, results/")
    grade.add_argument("--db", type=Path, help="nbgrader gradebook (SQLite file); default OUT/gradebook.db")
    grade.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1),
                       help="notebooks graded at once on this machine, each in a grading process of its own "
                            "(default: twice the cores, as about a quarter of grading is waiting; see "
                            "benchmarks/profile_grading.md); 0 grades in this process (for debugging)")
    grade.add_argument("--roster", help="CSV mapping LMS export names or user ids to student ids "
                                        "(columns: student_id, and any of user_id, name, login, email)")
    grade.add_argument("--scheduler", help="grade on a Dask cluster: the scheduler's address (tls://host:8786)")
    grade.add_argument("--tls-ca-file", help="Dask: the CA certificate that signed the scheduler's and workers' certificates")
    grade.add_argument("--tls-cert", help="Dask: this client's certificate (the scheduler requires one)")
    grade.add_argument("--tls-key", help="Dask: this client's private key")
    grade.add_argument("--insecure", action="store_true",
                       help="Dask: allow a scheduler on another machine without TLS and client certificates")
    grade.add_argument("--data-dir", default=os.environ.get(course.data_variable, str(course.default_data)),
                       help=f"corpora the notebooks load (default: ${course.data_variable}, else {course.default_data})")
    grade.add_argument("--cell-timeout", type=float, default=60, help="seconds one cell may run (default 60)")
    grade.add_argument("--call-timeout", type=float, default=10, help="seconds one call of a student function may run (default 10)")
    grade.add_argument("--part-timeout", type=float, default=60, help="seconds the hidden tests of one part may run (default 60)")
    grade.add_argument("--notebook-timeout", type=float, default=600,
                       help="seconds everything done for one file may take: cells, hidden tests, restarts and replays (default 600)")
    grade.add_argument("--require-isolation", action="store_true",
                       help="refuse to grade unless every kernel runs behind the Landlock boundary (never fall back "
                            "to the weaker fence; see the README's threat model)")
    grade.add_argument("--memory-mb", type=float, default=4096, help="memory cap of a student's kernel in MiB (default 4096)")
    grade.add_argument("--one-kernel", action="store_true",
                       help="grade each part at its test cell's place in the notebook's one kernel, never in a "
                            "second kernel; the feedback then shows the notebook's own output only up to its first "
                            "hidden test (by default the feedback shows all of it; see the README)")
    grade.add_argument("--max-restarts", type=int, default=3,
                       help="kernel restarts allowed per notebook after a crash (default 3); all within --notebook-timeout")
    grade.add_argument("--grader-memory-mb", type=float, default=6144,
                       help="address-space cap of each local grading process in MiB (default 6144; 0: none)")
    grade.add_argument("--quiet", action="store_true", help="no progress bar")
    grade.set_defaults(run=_grade)

    build = commands.add_parser("build", help="regenerate the student notebooks from the solution notebooks")
    build.add_argument("--out", default=str(course.notebooks))
    build.set_defaults(run=_build)

    from autograder.gradescope import add_build_arguments

    add_build_arguments(commands.add_parser("gradescope", help="build Gradescope's autograder zip for one lab "
                                                               "(docs/GRADESCOPE.md)"))
    from autograder.lms.command import add_export_command

    add_export_command(commands)
    if course.add_commands:
        course.add_commands(commands)

    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
