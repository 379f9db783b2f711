"""What is made of the rows: grades.csv, feedback pages and the class report, nbgrader's gradebook,
formgrader and the changes a person made there (``adjustments``), and the background process that
does the slow parts while notebooks grade.

May import: the course's side, ``autograder.kernel.session``, ``autograder.grading`` and
``autograder.release.student_notebooks``.
"""
