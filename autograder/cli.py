"""grade a folder of handed-in notebooks, build the student notebooks and Gradescope zips, and run
the course's own commands (the course: --course module:attr, else the one installed).

A user's mistake (a wrong path, a typo in a lab's name, Ctrl-C) gets one line saying what to do and
a non-zero exit (2; 130 for Ctrl-C), never a traceback."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from autograder.course import Course, current, use
from autograder.kernel.limits import add_limit_arguments, default_workers
from autograder.grading.names import terminal

# Exit codes: a user's mistake (argparse's own), and Ctrl-C (128 + SIGINT, as shells report it).
USAGE, INTERRUPTED = 2, 130


class UsageError(Exception):
    """A mistake in what the command was given; the message says what to do instead."""


def fail(message: str, code: int = USAGE) -> int:
    """One ``error:`` line per line of ``message`` (a roster's duplicates: one line each)."""
    for line in message.split("\n"):
        print(f"error: {terminal(line)}", file=sys.stderr)
    return code


def _grade(args) -> int:
    from autograder.batch.run import (
        CourseChanged,
        Interrupted,
        NothingToGrade,
        OutNotAFolder,
        grade_folder,
    )
    from autograder.grading.settings import Settings
    from autograder.grading.identity import read_roster
    from autograder.grading.roster import RosterProblems
    from autograder.reports.report import batch_counts, grades_text, term_counts

    if not Path(args.data_dir).is_dir():
        raise UsageError(
            f"--data-dir {args.data_dir} is not a folder: point it at the corpora the notebooks "
            f"load (or unset ${current().data_variable})"
        )
    if args.require_isolation:
        from autograder.kernel.boundary import boundary_mode
        from autograder.kernel.session import isolation_status

        status = isolation_status()
        if not boundary_mode(status):
            raise UsageError(
                "--require-isolation: kernels cannot be isolated here, so nothing was graded "
                f"({status}): grade on Linux 5.13 or later with Landlock enabled, or leave out "
                "--require-isolation"
            )
    settings = Settings.from_arguments(args)
    try:
        roster = read_roster(Path(args.roster)) if args.roster else None
    except RosterProblems as error:
        raise UsageError("\n".join(error.lines + [
            f"the roster {args.roster} was not used: fix the line(s) above and grade again"
        ])) from None
    except (ValueError, OSError) as error:
        raise UsageError(
            f"the roster could not be read ({error}): pass a CSV file with a student_id column "
            "(see --help)"
        ) from None
    out = Path(args.out)
    from autograder.batch.dask_grading import NoWorkers, SchedulerLost
    from autograder.batch.dask_options import (
        DaskOptionMistake,
        SchedulerUnreachable,
        dask_arguments,
    )
    from autograder.batch.dask_tls import ClusterDidNotStart

    cluster = None
    try:
        scheduler, security = dask_arguments(args)
        if args.local_cluster:
            from autograder.batch.dask_tls import LocalTLSCluster

            cluster = LocalTLSCluster(max(args.workers, 1)).start()
            scheduler, security = cluster.address, cluster.security
        rows = grade_folder(Path(args.submissions), out, settings, workers=args.workers,
                            scheduler=scheduler, db_path=args.db, progress=not args.quiet,
                            roster=roster, security=security, allow_fence=args.allow_fence,
                            worker_wait=args.worker_wait)
    except (
        NothingToGrade,
        OutNotAFolder,
        CourseChanged,
        DaskOptionMistake,
        SchedulerUnreachable,
        SchedulerLost,
        NoWorkers,
        ClusterDidNotStart,
    ) as error:
        raise UsageError(str(error)) from None
    except Interrupted as error:
        return fail(str(error), INTERRUPTED)
    finally:
        if cluster is not None:
            cluster.stop()
    print(f"\n{grades_text(rows.reported)}")  # what grades.csv says
    # this batch and the term counted apart: "32 files in X, 33 graded" read as a contradiction
    summary = f"this batch: {batch_counts(rows)}"
    if rows.earlier or len(rows) != rows.this_batch:
        summary += f"; the term in {out}: {term_counts(rows)}"
    print(terminal(summary))
    print(terminal(f"grades in {out / 'grades.csv'}, feedback in {out / 'feedback'}, "
                   f"class report in {out / 'class_report.md'}"))
    return 0


def _dask_certs(args) -> int:
    from autograder.batch.dask_tls import CertificatesExist, make_certificates

    try:
        files = make_certificates(Path(args.dir), tuple(args.host))
    except CertificatesExist as error:
        raise UsageError(str(error)) from None
    print(terminal(f"wrote a CA and the scheduler's, workers' and client's certificates and keys "
                   f"in {files.folder} (owner only)"))
    print("no HTTP pages:  export DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES='[]' "
          "DASK_DISTRIBUTED__WORKER__HTTP__ROUTES='[]'")
    print(terminal(f"scheduler: dask scheduler --protocol tls --no-dashboard "
                   f"{' '.join(files.tls_arguments('scheduler'))}"))
    print(terminal(f"workers:   dask worker tls://HOST:8786 --nthreads 1 --no-dashboard "
                   f"{' '.join(files.tls_arguments('worker'))}"))
    print(terminal(f"grading:   --scheduler tls://HOST:8786 --tls-dir {files.folder}"))
    return 0


def exit_quickly(code: int) -> int:
    """``code``, after freezing this process's objects for its exit (the end of a command run as a
    program).

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
    from autograder.release.student_notebooks import release

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(
            f"--out {out} is a file, not a folder: name a folder for the student notebooks"
        )
    for path in release(out):
        print(f"wrote {shown(path)}")
    course = current()
    if course.release_note:
        print(course.release_note())
    return 0


def lab_choice(course: Course):
    """An argparse ``type`` accepting a lab id of ``course``; anything else gets one line naming the
    labs."""
    labs = course.lab_ids()

    def lab(text: str) -> str:
        if text not in labs:
            raise argparse.ArgumentTypeError(f"no lab {text!r}; the labs are {', '.join(labs)}")
        return text

    lab.__name__ = "lab"
    return lab


def build_parser(course: Course, prog: str = "python -m autograder") -> argparse.ArgumentParser:
    """The command line's parser for ``course``: every command and option with its help."""
    parser = argparse.ArgumentParser(
        prog=prog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=f"{prog}: {__doc__.split(chr(10) + chr(10))[0]}\n\nCourse: {course.name} "
                    f"({course.spec}); labs: {', '.join(course.lab_ids())}.",
    )
    parser.add_argument(
        "--course", help="the course to use, as module:attr (default: the installed course)"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    grade = commands.add_parser(
        "grade",
        help="grade a folder of handed-in notebooks",
        description="Grade every entry of SUBMISSIONS_DIR into OUT: grades.csv, feedback/, "
        "class_report.md, the nbgrader gradebook. Run the same command again "
        "to resume; grade later batches into the same OUT to keep one "
        "gradebook for the term.",
    )
    grade.add_argument(
        "submissions",
        metavar="SUBMISSIONS_DIR",
        help="a folder of handed-in notebooks as an LMS exports them (Canvas, Moodle: the student "
             "id is the prefix the export wrote; any other name: the file name without .ipynb and "
             "a trailing _<lab>), the LMS's submissions .zip as downloaded (unpacked into "
             "OUT/unpacked/, names decoded as the zip says), an nbgrader "
             "submitted/<student>/<lab>/ tree, or an nbgrader course folder (its submitted/ is "
             "graded). Every entry gets a row",
    )
    grade.add_argument(
        "--out",
        required=True,
        metavar="OUT",
        help="folder for grades.csv, feedback/, class_report.md, scores.png, gradebook.db and "
             "results/ (created if needed; an earlier batch's results there are kept and reported)",
    )
    grade.add_argument(
        "--db", type=Path, help="nbgrader gradebook (SQLite file); default OUT/gradebook.db"
    )
    grade.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        help="notebooks graded at once on this machine, each in a grading process of its own "
        "(default: twice the cores, %(default)s here, as about a quarter of grading is waiting; "
        "see benchmarks/profile_grading.md); 0 is 1: one file at a time",
    )
    grade.add_argument(
        "--roster",
        help="CSV mapping LMS export names or user ids to student ids (columns, in any case: "
        "student_id, and any of user_id, name, login, email); every roster student "
        "then has a row for every lab the term's batches were about (missing if nothing came); "
        "given on a later run, it re-keys OUT's earlier results",
    )
    from autograder.batch.dask_options import add_dask_arguments

    add_dask_arguments(grade)
    grade.add_argument(
        "--data-dir",
        default=os.environ.get(course.data_variable, str(course.default_data)),
        help=f"corpora the notebooks load (default: ${course.data_variable}, else "
             f"{course.default_data})",
    )
    add_limit_arguments(grade)  # their defaults: autograder/kernel/limits.py
    grade.add_argument("--quiet", action="store_true", help="no progress bar")
    grade.set_defaults(run=_grade)

    build = commands.add_parser(
        "build",
        help="regenerate the student notebooks from the solution notebooks",
        description="Write the student notebooks (nbgrader's generate_assignment steps) "
        "and say where their Colab badges point.",
    )
    build.add_argument(
        "--out",
        default=str(course.notebooks),
        help="folder for the student notebooks (default: the course's notebooks/ folder)",
    )
    build.set_defaults(run=_build)

    certs = commands.add_parser(
        "dask-certs",
        help="make the TLS certificates a Dask cluster needs (docs/GRADING.md)",
        description="Write a CA, and a certificate and key for the Dask scheduler, the workers "
        "and the grader (the client), into DIR (created owner-only, mode 0700; keys 0600). Start "
        "the scheduler and workers with them; grade with --scheduler tls://HOST:PORT --tls-dir "
        "DIR.",
    )
    certs.add_argument("dir", metavar="DIR", help="a new folder for the certificates")
    certs.add_argument("--host", action="append", default=[],
                       help="a name or address of the scheduler's machine, repeatable (default: "
                       "none besides localhost, 127.0.0.1, ::1 and this machine's name)")
    certs.set_defaults(run=_dask_certs)

    from autograder.gradescope import add_build_arguments

    add_build_arguments(
        commands.add_parser(
            "gradescope", help="build Gradescope's autograder zip for one lab (docs/GRADESCOPE.md)"
        ),
        lab_choice(course),
    )
    from autograder.service.cli import add_commands as add_service_commands

    add_service_commands(commands, course)  # serve, tokens, accounts (docs/SERVICE.md)
    from autograder.lms.command import add_export_command

    add_export_command(commands)  # Canvas and Moodle import files (docs/LMS.md)
    if course.add_commands:
        course.add_commands(commands)
    return parser


def main(
    argv: list[str] | None = None,
    course: Course | str | None = None,
    prog: str = "python -m autograder",
) -> int:
    """The command line, for ``course`` (default: ``--course``, else the one ``autograder.course``
    finds)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    first = argparse.ArgumentParser(add_help=False)
    first.add_argument("--course")
    known, argv = first.parse_known_args(argv)
    try:
        course = use(known.course or course or current())
    except (LookupError, ImportError, TypeError, AttributeError) as error:
        return fail(
            f"{error}: pass --course module:attr naming an installed course (or set "
            "AUTOGRADER_COURSE)"
        )
    try:
        parser = build_parser(course, prog)
        args = parser.parse_args(argv)
        return args.run(args)
    except UsageError as error:
        return fail(str(error))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError) as error:
        # a path given on the command line that is not there, or not of the right kind
        return fail(
            f"{error}: check the paths given to the command (and that they may be read or written)"
        )
    except KeyboardInterrupt:
        return fail("interrupted: run the same command again to go on", INTERRUPTED)


if __name__ == "__main__":
    sys.exit(main())
