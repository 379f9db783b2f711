"""Grades and feedback into a learning-management system, as the files its own import pages take.

A pipeline of small steps, each on typed data:

* ``source``: the graded results (:class:`~autograder.grading.result.GradeResult`) from wherever
they are kept: a grading output folder today (:class:`~autograder.lms.source.OutFolder`), the
submission service's database later; with the changes a person made by hand in the gradebook
applied.
* ``roster``: the class list, with the ids each LMS knows a student by.
* ``sheet``: results matched to roster students, labs to LMS columns; every mismatch becomes a
  :class:`~autograder.lms.sheet.Problem` (an error stops the export, a note is said).
* ``canvas``, ``moodle``: the sheet as Canvas's gradebook import CSV, Moodle's gradebook import
  CSV, or a Moodle assignment's offline grading worksheet with its zip of feedback files.
* ``command``: ``bpe-labs export``.

The formats, their menu paths in each LMS and the documentation they follow: docs/LMS.md.
"""
