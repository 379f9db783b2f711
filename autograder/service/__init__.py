"""The grader as a web service: students submit a notebook and get its feedback in seconds.

One command (``serve``) starts a web process (FastAPI on uvicorn) and a grading process. They share
nothing but the database (SQLAlchemy: an SQLite file by default, PostgreSQL by URL), which is also
the queue: a submission is a row, a grading process claims it, grades it with the engine's own
``grade_file`` behind the same kernel boundary, and writes the one
:class:`~autograder.grading.result.GradeResult` back. Like the rest of the engine it knows nothing
about a course: it receives the course as the one ``Course`` object (``autograder.course``).

    settings.py     ServiceSettings: the one settings object
    database.py     the engine from a URL, sessions, migrations (alembic: migrations/)
    models.py       the tables: students, tokens, accounts, web sessions, submissions, graders
    tokens.py       students' personal tokens (hashed at rest), instructor and TA accounts
    auth.py         who is calling: bearer tokens, web sessions (started by a token, a password or
                    an LTI launch); CSRF
    admission.py    what an upload may cost before it is parsed (per student, overall, a budget)
    private.py      owner-only files: the database, tokens, keys
    submissions.py  taking a submission in: intake, deadlines, rate limit, one at a time
    queue.py        the durable, fair queue: claim, finish, retry once, orphans, adoption
    results.py      stored results as GradeResults: each attempt, the counted one, grades.csv,
                    gradebook
    grading_process.py the grading process: local grading processes or a Dask cluster
    uploads.py      the upload cap, enforced while the body streams in
    app.py          the web application: routers, middleware, security headers
    routes/         api.py (the HTTP API), student.py (students' pages), dashboard.py (instructors')
    submit_helper.py  the Submit cell's helper (standard library only), as the notebooks carry it
                    (the cells themselves are release content: autograder/release/submit_cells.py)
    cli.py          serve, tokens, accounts, lti-keys
    lti/            LTI 1.3: an LMS launches the service, the gradebook gets the counted attempts'
                    scores
"""
