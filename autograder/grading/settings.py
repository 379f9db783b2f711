"""How a file is graded: the limits, the data folder, each part's time, the paths a kernel may not
read, the grading processes' memory cap, the second kernel for feedback. One frozen record, made
from the command line's options (:meth:`Settings.from_arguments`) or by the service's settings,
and handed unchanged to every grading process (``grade.grade_file``, ``deadline``, ``batch``,
``gradescope``, the service).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.kernel.limits import GRADER_MEMORY_BYTES, PART_SECONDS, Limits, MiB, limits_from


@dataclass(frozen=True)
class Settings:
    limits: Limits = field(default_factory=Limits)
    data_dir: Path | None = None  # None: the course's default corpora
    part_seconds: float = PART_SECONDS
    denied: tuple[Path, ...] = ()
    # Address-space cap of each local grading worker process (0: none); see
    # autograder.batch.workers.
    worker_memory_bytes: int = GRADER_MEMORY_BYTES
    # A second kernel shows the notebook's own checks with no hidden input in reach (about 0.7 s a
    # notebook). Without it, feedback shows only what the notebook printed before the first
    # hidden input.
    feedback_kernel: bool = True

    @classmethod
    def from_arguments(cls, args) -> "Settings":
        """What ``grade``'s and ``serve``'s options say (``limits.add_limit_arguments``,
        ``--data-dir``)."""
        return cls(limits=limits_from(args), data_dir=Path(args.data_dir).resolve(),
                   part_seconds=args.part_timeout,
                   worker_memory_bytes=int(args.grader_memory_mb * MiB),
                   feedback_kernel=not args.one_kernel)
