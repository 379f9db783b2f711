"""``bpe-labs``: the engine's command line bound to the BPE Labs course (same as ``python -m
autograder`` with this course installed)."""
import sys

from autograder.cli import exit_quickly, main as engine_main


def main(argv: list[str] | None = None) -> int:
    from bpe_labs.course import COURSE

    return engine_main(argv, course=COURSE, prog="bpe-labs")


def script() -> int:
    """The ``bpe-labs`` program: :func:`main`, then a quick exit."""
    return exit_quickly(main())


if __name__ == "__main__":
    sys.exit(script())
