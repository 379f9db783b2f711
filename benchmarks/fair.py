"""Speed figures only between runs that did the same work.

A grader that fails every file is fast. So a benchmark prints a ratio (or a percentage) of two runs
only when every file of both graded and their scores are equal; otherwise it prints why not, in the
ratio's place. Used by bench_grading.py, bench_isolation.py and bench_one_notebook.py.

    >>> ratio(12.0, 3.0, why_not_comparable({"s01": ("graded", "11")}, {"s01": 11.0}))
    '4.00x'
    >>> ratio(12.0, 2.0, why_not_comparable({"s01": ("grader_error", "")}, {"s01": 11.0}))
    'none: 1 of 1 files not graded (s01: grader_error)'
"""
from __future__ import annotations


def _number(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def why_not_comparable(
    ours: dict[str, tuple], theirs: dict[str, float] | None = None
) -> str | None:
    """Why the run ``ours`` (student -> (status, total, ...), as grades.csv says) cannot be
    compared for speed with the baseline ``theirs`` (student -> total; None: no baseline scores,
    only ours checked): a file that did not grade, or a total that differs; None when it can."""
    failed = sorted(student for student, row in ours.items() if row[0] != "graded")
    if failed:
        shown = ", ".join(f"{student}: {ours[student][0]}" for student in failed[:3])
        more = ", ..." if len(failed) > 3 else ""
        return f"{len(failed)} of {len(ours)} files not graded ({shown}{more})"
    if theirs is not None:
        students = sorted(set(ours) | set(theirs))
        differing = [s for s in students if s not in ours or s not in theirs
                     or _number(ours[s][1]) != _number(theirs[s])]
        if differing:
            return (f"scores differ from the baseline's for {len(differing)} of {len(students)} "
                    "students "
                    f"({', '.join(differing[:3])}{', ...' if len(differing) > 3 else ''})")
    return None


def ratio(
    baseline_seconds: float, seconds: float, why_not: str | None, form: str = "{:.2f}x"
) -> str:
    """``baseline_seconds / seconds`` in ``form``, or ``none:
    <why>`` when the runs did not do the same work."""
    if why_not:
        return f"none: {why_not}"
    return form.format(baseline_seconds / seconds)
