"""The BPE course's own subcommands of the command
line (``bpe-labs`` / ``python -m autograder``)."""
from __future__ import annotations

from pathlib import Path

from autograder.cli import shown
from bpe_labs import ROOT


def _examples(args) -> int:
    from bpe_labs.examples import write_examples

    for path in write_examples(Path(args.out)):
        print(f"wrote {shown(path)}")
    return 0


def _standins(args) -> int:
    from bpe_labs.standins import write_all

    for path in write_all(Path(args.out), full_size=args.full_size):
        print(f"wrote {path}")
    return 0


def _execute_solutions(args) -> int:
    from bpe_labs.solutions import execute_solutions

    for path in execute_solutions(args.labs or None):
        print(f"executed {shown(path)}")
    return 0


def _fetch_data(args) -> int:
    from bpe_labs.standins import fetch_real_corpora

    for line in fetch_real_corpora(Path(args.out)):
        print(line)
    return 0


def add_commands(commands, course) -> None:
    """The course's own commands, for ``course`` (handed in by ``course.py``, not imported from
    it: that module imports this one)."""
    from autograder.cli import lab_choice

    examples = commands.add_parser("examples",
                                   help="regenerate the example submissions from examples/*.yaml")
    examples.add_argument("--out", default=str(ROOT / "examples" / "submissions"),
                          help="folder for the example notebooks (default: examples/submissions)")
    examples.set_defaults(run=_examples)

    standins = commands.add_parser("standins", help="write the stand-in corpora")
    standins.add_argument("--out", default=str(ROOT / "data" / "standins"),
                          help="folder for the stand-in corpora (default: data/standins)")
    standins.add_argument("--full-size", action="store_true",
                          help="as large as the real corpora (for benchmarks)")
    standins.set_defaults(run=_standins)

    execute = commands.add_parser("execute-solutions",
                                  help="run the solution notebooks in place (refresh stored "
                                  "outputs)")
    execute.add_argument(
        "labs", nargs="*", metavar="LAB", type=lab_choice(course),
        help=f"the labs to run (default: every lab): {', '.join(course.lab_ids())}",
    )
    execute.set_defaults(run=_execute_solutions)

    fetch = commands.add_parser("fetch-data", help="download the real corpora (needs the internet)")
    fetch.add_argument("--out", default=str(ROOT / "data"),
                       help="folder for the corpora (default: data)")
    fetch.set_defaults(run=_fetch_data)
