"""An autograder for Jupyter notebook courses, on nbgrader: releases student notebooks from the
solution sources and grades handed-in notebooks. It knows nothing about any course: it receives the
course as one object (``autograder.course.Course``).

The grading pipeline is a row of small steps, after nbgrader's preprocessors:
intake (read the file, recognise the lab) -> repair (match cells to the release, restore
given cells) -> execute (run the student's cells in a sandboxed kernel) -> check (run the
hidden tests in this process against proxies of the student's functions) -> record
(nbgrader gradebook, grades.csv, feedback, class report).
"""
from pathlib import Path

# nbformat's validator loads jsonschema, which imports the optional rfc3987_syntax (a URI
# grammar, 1.6 CPU-s at every start) only to check "uri" formats no notebook uses. Measured in
# benchmarks/profile_grading.md; an absent module makes jsonschema skip that check.
import sys as _sys

_sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]  # None: "not there"

# nbgrader creates a new gradebook by running `alembic` as a subprocess: the virtual
# environment's bin/ must be on PATH even when Python was started by its full path.
import os as _os  # noqa: E402  (here, beside the reason it is needed)

_bin = str(Path(_sys.executable).parent)
if _bin not in _os.environ.get("PATH", "").split(_os.pathsep):
    _os.environ["PATH"] = _bin + _os.pathsep + _os.environ.get("PATH", "")
