"""Many files: a folder graded into an OUT folder (``run``), the grading processes a hostile file
cannot take down (``workers``: the ``Job`` record and ``WorkerPool``), the one deadline wrapper
(``deadline``), Dask, the OUT folder's ledger, resuming, and the guard on the course files.

May import: every package above but ``lms`` and ``service`` (which are built on this one).
"""
