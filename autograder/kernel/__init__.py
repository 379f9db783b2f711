"""A student's notebook in a fresh, limited, isolated Jupyter kernel that the grader calls into.

Owns: the session a grader uses (``session.KernelSession``), the kernel process's life
(``process``), calls into the notebook (``calls``) and the plain values they carry (``codec``,
``shapes``), the kernel's folder (``workspace``) and fast starts (``zygote``), what a kernel may
read (``boundary``) and which isolation it gets here (``probe``), the isolation primitives
(``isolation``) and the launcher behind them (``sandbox_launcher``), the limits, the kernel's
errors and the temporary folders.

May import: the course's side (``autograder.course``, ``course_interface``, ``verdicts``, ``labs``)
and nothing else of the engine: the grading, batch, reports, release and service packages are built
on this one.
"""
