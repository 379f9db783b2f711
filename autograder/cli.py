"""``python -m autograder``: build the student notebooks, grade a folder, make the examples."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from autograder import REPO_ROOT


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


def _build(args) -> int:
    from autograder.build import build

    for path in build(Path(args.out)):
        print(f"wrote {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}")
    return 0


def _examples(args) -> int:
    from autograder.examples import write_examples

    for path in write_examples(Path(args.out)):
        print(f"wrote {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}")
    return 0


def _standins(args) -> int:
    from autograder.standins import write_all

    for path in write_all(Path(args.out), full_size=args.full_size):
        print(f"wrote {path}")
    return 0


def _execute_solutions(args) -> int:
    from autograder.solutions import execute_solutions

    for path in execute_solutions(args.labs or None):
        print(f"executed {path.relative_to(REPO_ROOT)}")
    return 0


def _fetch_data(args) -> int:
    from autograder.standins import fetch_real_corpora

    for line in fetch_real_corpora(Path(args.out)):
        print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
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
    grade.add_argument("--data-dir", default=os.environ.get("BPE_LABS_DATA", str(REPO_ROOT / "data" / "standins")),
                       help="corpora the notebooks load (default: $BPE_LABS_DATA, else the stand-ins in data/standins)")
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
                       help="one kernel per notebook instead of two (about 0.7 s less each); the feedback then shows "
                            "the notebook's own output only up to its first hidden test")
    grade.add_argument("--max-restarts", type=int, default=3,
                       help="kernel restarts allowed per notebook after a crash (default 3); all within --notebook-timeout")
    grade.add_argument("--grader-memory-mb", type=float, default=6144,
                       help="address-space cap of each local grading process in MiB (default 6144; 0: none)")
    grade.add_argument("--quiet", action="store_true", help="no progress bar")
    grade.set_defaults(run=_grade)

    build = commands.add_parser("build", help="regenerate the student notebooks from solutions/")
    build.add_argument("--out", default=str(REPO_ROOT / "notebooks"))
    build.set_defaults(run=_build)

    examples = commands.add_parser("examples", help="regenerate the example submissions from examples/*.yaml")
    examples.add_argument("--out", default=str(REPO_ROOT / "examples" / "submissions"))
    examples.set_defaults(run=_examples)

    standins = commands.add_parser("standins", help="write the stand-in corpora")
    standins.add_argument("--out", default=str(REPO_ROOT / "data" / "standins"))
    standins.add_argument("--full-size", action="store_true", help="as large as the real corpora (for benchmarks)")
    standins.set_defaults(run=_standins)

    execute = commands.add_parser("execute-solutions", help="run the solution notebooks in place (refresh stored outputs)")
    execute.add_argument("labs", nargs="*")
    execute.set_defaults(run=_execute_solutions)

    fetch = commands.add_parser("fetch-data", help="download the real corpora (needs the internet)")
    fetch.add_argument("--out", default=str(REPO_ROOT / "data"))
    fetch.set_defaults(run=_fetch_data)

    from autograder.gradescope import add_build_arguments

    add_build_arguments(commands.add_parser("gradescope", help="build Gradescope's autograder zip for one lab "
                                                               "(docs/GRADESCOPE.md)"))

    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
