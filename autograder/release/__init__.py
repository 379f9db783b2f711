"""The student notebooks, made from the solution notebooks: nbgrader's release steps, the course's
own preparation, and the Submit cell with its helper (the service's client, carried by every
notebook).

May import: the course's side, ``autograder.kernel.session`` and ``autograder.grading``.
"""
