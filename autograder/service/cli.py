"""The service's commands: ``serve``, ``tokens``, ``accounts`` (added to the engine's command line).

Nothing heavy is imported until a command runs: the command line starts as fast as before.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

DEFAULT_DB = "service.db"


class Stop(Exception):
    """A mistake of the user's: one line, exit code 2."""


def database_url(args) -> str:
    """The database's URL from ``--db`` and ``--db-password-file`` (never a password in argv)."""
    from autograder.service.database import url_with_password

    try:
        return url_with_password(args.db, getattr(args, "db_password_file", None))
    except ValueError as error:
        raise Stop(str(error)) from None


def _database(url: str):
    from autograder.service.database import Database, shown_url

    db = Database(url)
    try:
        db.migrate()
    except Exception as error:
        raise Stop(
            f"the database {shown_url(db.url)} could not be opened or brought up to date "
            f"({type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''})"
        ) from None
    return db


def _roster(db, path: str) -> tuple[int, int]:
    from autograder.service.tokens import load_roster, roster_rows

    try:
        rows = roster_rows(Path(path))
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise Stop(f"the roster could not be read: {error}") from None
    with db.writing() as session:
        return load_roster(session, rows)


def settings_from(args):
    """ServiceSettings from ``serve``'s arguments; raises Stop for a mistake."""
    from autograder.grading.settings import Settings
    from autograder.service.settings import (
        ServiceSettings,
        is_loopback,
        parse_deadline,
        parse_rate,
        read_deadlines,
    )

    try:
        rate, window = parse_rate(args.rate)
        deadlines = read_deadlines(Path(args.deadlines), args.late) if args.deadlines else {}
        deadlines.update(parse_deadline(text, args.late) for text in args.deadline or [])
    except (ValueError, OSError) as error:
        raise Stop(str(error)) from None
    from autograder.labs import all_labs

    unknown = sorted(set(deadlines) - set(all_labs()))
    if unknown:
        raise Stop(f"no lab {', '.join(unknown)}: the labs are {', '.join(all_labs())}")
    if bool(args.https_cert) != bool(args.https_key):
        raise Stop("--https-cert and --https-key go together")
    if not (args.https_cert or args.insecure or is_loopback(args.host)):
        raise Stop(
            f"refusing to serve plain HTTP on {args.host}: tokens and sessions would cross the "
            "network in the clear. Serve on 127.0.0.1 behind a TLS reverse proxy "
            "(docs/SERVICE.md), give --https-cert and --https-key, or pass --insecure"
        )
    from autograder.batch.dask_options import DaskOptionMistake, dask_arguments

    try:
        scheduler, security = dask_arguments(args)
    except DaskOptionMistake as error:
        raise Stop(str(error)) from None
    lti_config = Path(args.lti) if args.lti else None
    if lti_config is not None:
        from autograder.service.lti.tool import ConfigError, load

        try:
            load(lti_config)
        except ConfigError as error:
            raise Stop(str(error)) from None
    public_url = _public_url(args.public_url) if args.public_url else None
    if lti_config is not None and public_url is None:
        raise Stop(
            "--lti needs --public-url: the tool's address as the LMS and the students' browsers "
            "reach it (https://grader.example.edu), which every link handed to the LMS is built "
            "from (docs/LTI.md)"
        )
    return ServiceSettings(
        public_url=public_url,
        api_docs=args.api_docs,
        lti_config=lti_config,
        lti_identity=args.lti_identity,
        db_url=database_url(args),
        roster=Path(args.roster) if args.roster else None,
        host=args.host,
        port=args.port,
        insecure=args.insecure,
        https_cert=args.https_cert,
        https_key=args.https_key,
        forwarded_allow_ips=args.forwarded_allow_ips,
        max_upload_bytes=int(args.max_upload_mb * 1024 * 1024),
        rate_limit=rate,
        rate_window=window,
        grading_budget=args.grading_budget * 60,
        long_job_seconds=args.long_job_seconds,
        hold_refusals=args.hold_refusals,
        deadlines=deadlines,
        counted=args.counted,
        workers=args.workers,
        scheduler=scheduler,
        dask_security=security,
        local_cluster=args.local_cluster,
        allow_fence=args.allow_fence,
        grading=Settings.from_arguments(args),
        log_level=args.log_level,
    )


def _public_url(value: str) -> str:
    """``--public-url`` checked: an http(s) address with a host and no query, without its last
    slash."""
    from urllib.parse import urlsplit

    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise Stop(
            f"--public-url {value!r} is not an address like https://grader.example.edu (the "
            "scheme, the host, at most a path)"
        )
    return value.strip().rstrip("/")


def _serve(args) -> int:
    from autograder.course import current
    from autograder.service.database import shown_url

    from autograder.service.port import port_problem

    settings = settings_from(args)
    # before anything is said: a banner (and its address) printed for a port another server holds
    # sent students to that server
    problem = port_problem(settings.host, settings.port)
    if problem:
        raise Stop(problem)
    db = _database(settings.db_url)
    try:
        if settings.roster:
            listed, added = _roster(db, str(settings.roster))
            roster = f"{listed} students on the roster ({added} new) from {settings.roster}"
        else:
            from autograder.service.models import Student

            with db.reading() as session:
                listed = session.query(Student).filter(Student.on_roster.is_(True)).count()
            roster = f"{listed} students on the roster" + (
                "" if listed else ": nobody can submit (pass --roster)"
            )
    finally:
        db.close()
    scheme = "https" if settings.tls else "http"
    host = "[" + settings.host + "]" if ":" in settings.host else settings.host
    address = f"{scheme}://{host}:{settings.port}"
    graders = (
        f"a Dask cluster at {settings.scheduler}"
        if settings.scheduler
        else f"a local Dask cluster over TLS ({settings.workers} workers)"
        if settings.local_cluster
        else f"{settings.workers} local grading process{'es' if settings.workers != 1 else ''}"
    )
    print(
        f"{current().name} grading service on {address}\n  students:  {address}/  (sign in with a "
        f"token; the notebooks' Submit cell posts to {address}/api/v1/submissions)\n  dashboard: "
        f"{address}/dashboard  (instructors and TAs; API: {address}/openapi.json)\n  database:  "
        f"{shown_url(settings.db_url)}; {roster}\n  grading:   {graders}; "
        f"{settings.rate_limit or 'no'} submissions per lab per {settings.rate_window / 3600:g} h; "
        f"{_minutes(settings.grading_budget)} of grading per student per hour; "
        f"the {settings.counted} attempt counts; uploads up to "
        f"{settings.max_upload_bytes / 1024 / 1024:g} MB\n"
        + (_lti_lines(settings, settings.public_url or address) if settings.lti_config else "")
        + "  Ctrl-C stops it; queued submissions wait in the database for the next start.",
        flush=True,
    )
    import uvicorn

    from autograder.service.app import create_app
    from autograder.service.private import compact_allocator

    compact_allocator()  # the web process stays small whatever is uploaded (admission.py)

    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        proxy_headers=True,
        forwarded_allow_ips=settings.forwarded_allow_ips,
        ssl_certfile=str(settings.https_cert) if settings.https_cert else None,
        ssl_keyfile=str(settings.https_key) if settings.https_key else None,
        server_header=False,
    )
    return 0


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds else "no limit"


def _lti_lines(settings, address: str) -> str:
    from autograder.service.lti.tool import issuers, load

    platforms = issuers(load(settings.lti_config))
    return (
        f"  LTI 1.3:   login {address}/lti/login, launch {address}/lti/launch, keys "
        f"{address}/lti/jwks (Canvas: {address}/lti/canvas.json)\n             {len(platforms)} "
        f"platform(s) from {settings.lti_config}: {', '.join(platforms)}; students found by their "
        f"{settings.lti_identity}\n"
    )


def _lti_keys(args) -> int:
    from autograder.service.lti.tool import ConfigError, write_keys

    try:
        private, public = write_keys(Path(args.folder))
    except ConfigError as error:
        raise Stop(str(error)) from None
    except OSError as error:
        raise Stop(
            f"the keys could not be written in {args.folder} ({error.strerror or error})"
        ) from None
    print(
        f"the tool's key pair: {private} (private, owner-only) and {public}; name them in the LTI "
        "configuration as private_key_file and public_key_file (docs/LTI.md)"
    )
    return 0


def _tokens(args) -> int:
    import csv

    from autograder.service import tokens
    from autograder.service.models import Student

    db = _database(database_url(args))
    try:
        if args.roster:
            listed, added = _roster(db, args.roster)
            print(f"roster: {listed} students ({added} new)")
        out = Path(args.out) if args.out else None
        if out is not None and out.exists():
            raise Stop(
                f"{out} exists: tokens are shown only once, so it is not overwritten (name another "
                "file)"
            )
        written: list[tuple[str, str]] = []
        with db.writing() as session:
            students = {
                s.student_id: s for s in session.query(Student).filter(Student.on_roster.is_(True))
            }
            for name in (args.revoke or []) + (args.reissue or []):
                if session.get(Student, name) is None:
                    raise Stop(f"no student {name!r} in the database (is the roster loaded?)")
            for name in args.revoke or []:
                print(f"{name}: {tokens.revoke(session, name)} token(s) revoked")
            reissue = set(students) if args.reissue_all else set(args.reissue or [])
            for student_id in sorted(students):
                # a revoked one stays revoked
                if student_id in reissue or not tokens.ever_issued(session, student_id):
                    written.append((student_id, tokens.issue(session, student_id)))
            if written and out is None:
                raise Stop("--out FILE is needed: new tokens are written there (only once)")
            if out is not None:
                out.parent.mkdir(parents=True, exist_ok=True)
                descriptor = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(descriptor, "w", newline="", encoding="utf-8") as handle:
                    writer = csv.writer(handle)
                    writer.writerow(["student_id", "token"])
                    writer.writerows(written)
        kept = len([s for s in students if s not in dict(written) and s not in (args.revoke or [])])
        print(
            f"{len(written)} new token(s)"
            + (f" in {out} (owner-only): send each student their own" if out else "")
            + (
                f"; {kept} student(s) keep the token they have (--reissue ID or --reissue-all to "
                "replace)"
                if kept
                else ""
            )
        )
    finally:
        db.close()
    return 0


def _read_password(args) -> tuple[str, bool]:
    """The new password, and whether to print it (generated)."""
    import getpass
    import secrets

    if args.random_password:
        return secrets.token_urlsafe(15), True
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\n"), False
    first = getpass.getpass(f"password for {args.name}: ")
    if getpass.getpass("again: ") != first:
        raise Stop("the two passwords differ: nothing was changed")
    return first, False


def _accounts(args) -> int:
    from autograder.service import tokens
    from autograder.service.models import Account

    db = _database(database_url(args))
    try:
        if args.action == "add" and args.if_new:
            with db.reading() as session:
                if session.get(Account, args.name) is not None:
                    print(f"{args.name}: the account exists; its password is unchanged")
                    return 0
        if args.action == "add":
            password, show = _read_password(args)
            try:
                with db.writing() as session:
                    tokens.set_account(session, args.name, args.role, password)
            except ValueError as error:
                raise Stop(str(error)) from None
            print(
                f"{args.name}: {args.role} account ready"
                + (f"; password: {password}" if show else "")
            )
        elif args.action == "disable":
            with db.writing() as session:
                account = session.get(Account, args.name)
                if account is None:
                    raise Stop(f"no account {args.name!r}")
                account.disabled = True
            print(f"{args.name}: disabled")
        else:
            with db.reading() as session:
                for account in session.query(Account).order_by(Account.username):
                    disabled = "  (disabled)" if account.disabled else ""
                    print(f"{account.username}\t{account.role}{disabled}")
    finally:
        db.close()
    return 0


def _guarded(command):
    def run(args) -> int:
        from autograder.service.private import owner_only

        owner_only()  # the database, its WAL, tokens, keys: owner-only files in owner-only folders
        try:
            return command(args)
        except Stop as stop:
            print(f"error: {stop}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("stopped (Ctrl-C)", file=sys.stderr)
            return 130
    return run


def add_commands(commands, course) -> None:
    """``serve``, ``tokens`` and ``accounts`` as sub-commands of the engine's command line."""
    from autograder.kernel.limits import add_limit_arguments, default_workers

    serve = commands.add_parser(
        "serve",
        help="the grading service: students submit from the notebooks or a web page "
        "(docs/SERVICE.md)",
    )
    serve.add_argument(
        "--db",
        default=DEFAULT_DB,
        help=f"the database: an SQLite file (default {DEFAULT_DB}) or a "
        "PostgreSQL URL without its password (postgresql://user@host/name)",
    )
    _password_argument(serve)
    serve.add_argument(
        "--roster",
        help="roster CSV (grade --roster's format: student_id, and name, email...): who may submit",
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; put a TLS reverse "
        "proxy in front for students elsewhere)",
    )
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    serve.add_argument(
        "--insecure", action="store_true", help="allow plain HTTP on an address other than loopback"
    )
    serve.add_argument(
        "--https-cert", type=Path, help="serve HTTPS with this certificate (PEM) ..."
    )
    serve.add_argument("--https-key", type=Path, help="... and its private key")
    serve.add_argument(
        "--public-url",
        help="the service's address as students and the LMS reach it (https://grader.example.edu): "
             "the links it hands out are built from it (needed with --lti)",
    )
    serve.add_argument(
        "--api-docs",
        action="store_true",
        help="serve the API's reference pages /docs and /redoc (they load scripts from a CDN; "
             "/openapi.json is always served)",
    )
    serve.add_argument(
        "--forwarded-allow-ips",
        default="127.0.0.1",
        help="reverse proxies whose X-Forwarded-Proto/For headers are trusted (default 127.0.0.1)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        help="local grading processes (default: twice the cores, as grade: about a quarter of "
             "grading is waiting on kernels)",
    )
    from autograder.batch.dask_options import add_dask_arguments

    add_dask_arguments(serve)  # --scheduler tls://..., --tls-dir, --local-cluster, --allow-fence
    serve.add_argument(
        "--max-upload-mb", type=float, default=20, help="largest notebook taken, in MB (default 20)"
    )
    serve.add_argument(
        "--rate",
        default="10/hour",
        help="submissions per student per lab: N/WINDOW (default 10/hour; 0: no limit)",
    )
    serve.add_argument(
        "--grading-budget",
        type=float,
        default=20,
        metavar="MINUTES",
        help="minutes of grading a student's notebooks may use per hour (default 20; 0: no "
             "limit); past it, their next submission waits (HTTP 429)",
    )
    serve.add_argument(
        "--long-job-seconds",
        type=float,
        default=60,
        metavar="SECONDS",
        help="a notebook graded this long (or idle for 2 s: sleeping, waiting) no longer holds "
             "one of the --workers slots: another grading process starts beside it (up to 3 times "
             "--workers such; default 60)",
    )
    serve.add_argument(
        "--hold-refusals",
        type=float,
        default=3,
        metavar="SECONDS",
        help="a sign-in past its limits, or an upload past the student's rate or grading budget, "
             "is answered 429 after this many seconds (at most its Retry-After; default 3; 0: at "
             "once): a script that sends again as soon as it is answered is slowed at no cost",
    )
    serve.add_argument(
        "--deadline",
        action="append",
        metavar="LAB=WHEN",
        help="a lab's deadline, ISO 8601 (toy_bpe=2026-12-01T23:59+01:00); repeat for each lab",
    )
    serve.add_argument(
        "--deadlines",
        help="deadlines CSV: columns lab,deadline and optionally late (mark or refuse)",
    )
    serve.add_argument("--late", choices=("mark", "refuse"), default="mark",
                       help="after a deadline: accept and mark late (default), or refuse")
    serve.add_argument("--counted", choices=("last", "best"), default="last",
                       help="the attempt that counts: the last graded one (default) or the best")
    serve.add_argument(
        "--data-dir",
        default=os.environ.get(course.data_variable, str(course.default_data)),
        help=f"corpora the notebooks load (default: ${course.data_variable}, else "
             f"{course.default_data})",
    )
    add_limit_arguments(serve)  # grade's, with the same defaults (autograder/kernel/limits.py)
    serve.add_argument(
        "--lti",
        metavar="CONFIG.json",
        help="LTI 1.3: the LMS platforms this service is registered with "
        "(pylti1p3's JSON; docs/LTI.md)",
    )
    serve.add_argument(
        "--lti-identity",
        choices=("email", "sourcedid", "sub", "custom"),
        default="email",
        help="LTI: how a launch's user is found on the roster: email (default; the roster's email "
             "column), sourcedid (the LMS's SIS id), sub (its LTI user id) or custom (a custom "
             "parameter student_id), the last three matching the roster's student_id",
    )
    serve.add_argument(
        "--log-level",
        default="info",
        choices=("debug", "info", "warning", "error"),
        help="how much the server logs (default info; never a token or a notebook's content)",
    )
    serve.set_defaults(run=_guarded(_serve))

    keys = commands.add_parser(
        "lti-keys", help="LTI 1.3: write the tool's RSA key pair (docs/LTI.md)"
    )
    keys.add_argument(
        "folder", help="where to write lti-private.pem and lti-public.pem (never overwritten)"
    )
    keys.set_defaults(run=_guarded(_lti_keys))

    issue = commands.add_parser(
        "tokens", help="personal tokens for the service: one per student, written once to a CSV"
    )
    issue.add_argument("--roster", help="roster CSV: its students are added (or updated) first")
    issue.add_argument(
        "--db", default=DEFAULT_DB, help=f"the service's database (default {DEFAULT_DB})"
    )
    _password_argument(issue)
    issue.add_argument(
        "--out",
        help="CSV to write the new tokens to (student_id,token; owner-only; never overwritten)",
    )
    issue.add_argument(
        "--reissue",
        action="append",
        metavar="STUDENT",
        help="replace this student's token (repeat)",
    )
    issue.add_argument("--reissue-all", action="store_true", help="replace every student's token")
    issue.add_argument(
        "--revoke", action="append", metavar="STUDENT", help="revoke this student's token (repeat)"
    )
    issue.set_defaults(run=_guarded(_tokens))

    accounts = commands.add_parser(
        "accounts", help="instructors' and TAs' accounts for the service's dashboard"
    )
    accounts.add_argument("action", choices=("add", "disable", "list"),
                          help="add an account (or reset its password), disable one, or list them")
    accounts.add_argument("name", nargs="?", help="user name (add, disable)")
    accounts.add_argument("--role", choices=("instructor", "ta"), default="ta",
                          help="instructor (can also re-grade) or ta (default)")
    accounts.add_argument(
        "--db", default=DEFAULT_DB, help=f"the service's database (default {DEFAULT_DB})"
    )
    _password_argument(accounts)
    secret = accounts.add_mutually_exclusive_group()
    secret.add_argument(
        "--password-stdin", action="store_true", help="read the password from standard input"
    )
    secret.add_argument(
        "--random-password", action="store_true", help="make up a password and print it"
    )
    accounts.add_argument(
        "--if-new", action="store_true",
        help="add: only if there is no such account yet (an existing one keeps its password, and "
        "none is printed)",
    )
    accounts.set_defaults(run=_guarded(_accounts_checked))


def _password_argument(parser) -> None:
    parser.add_argument(
        "--db-password-file",
        type=Path,
        metavar="FILE",
        help="PostgreSQL: a file (owner-only) whose first line is the database password; or use "
             "~/.pgpass or $PGPASSFILE. Never put the password in --db: the command line is public",
    )


def _accounts_checked(args) -> int:
    if args.action in ("add", "disable") and not args.name:
        raise Stop(f"accounts {args.action} needs a user name")
    return _accounts(args)
