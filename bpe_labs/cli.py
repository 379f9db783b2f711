"""``bpe-labs``: the engine's command line bound to the BPE Labs course (same as ``python -m autograder``
with this course installed)."""
import sys

from autograder.cli import main as engine_main


def main(argv: list[str] | None = None) -> int:
    from bpe_labs.course import COURSE

    return engine_main(argv, course=COURSE, prog="bpe-labs")


if __name__ == "__main__":
    sys.exit(main())
