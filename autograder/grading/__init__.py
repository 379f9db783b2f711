"""One file's grading: intake, repair, the visible checks, the hidden tests, the row.

Owns: ``grade.grade_file`` (a row of typed steps), the grading ``settings``, a part's checks
(``check``) and stand-ins (``stand_ins``), putting a submission back in the release's shape
(``repair``), reading a handed-in file (``intake``, ``folder``, ``identity``, ``names``) and the
typed result (``result``).

May import: the course's side and ``autograder.kernel.session``. Nothing here knows of batches,
reports, the release or the service.
"""
