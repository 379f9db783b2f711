"""The counted attempt's score, posted to the LMS gradebook through Assignment and Grade Services.

A student's launch of a lab records a *link* (``lti_links``): the LMS, the student's LTI user id and
the gradebook column (AGS line item) of that lab. Each result the grading process records for the
student's lab counts one more score ``wanted`` on their links (``queue.finish``, in the result's own
transaction); a poster thread in the web process sends the counted attempt (the last or the best, as
``--counted`` says) of every link whose ``wanted > posted``, with a comment that links to the
feedback page. A post that fails is tried again later (5 s, 10 s, ... up to 10 min apart); a link
is leased by one poster at a time, so several web processes never post one score twice at once.
"""
from __future__ import annotations

import hashlib
import json
import logging
import threading
from dataclasses import dataclass
from datetime import timedelta

from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from sqlalchemy import select, update

from autograder.service.database import Database, rowcount
from autograder.service.lti.adapter import Connector
from autograder.service.lti.tool import find_registration
from autograder.service.models import LtiLink, Submission
from autograder.service.results import attempts, counted_attempts
from autograder.service.settings import now

log = logging.getLogger("autograder.service.lti")
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LEASE = timedelta(seconds=60)  # a poster that took a link and died: another takes it after this
POLL_SECONDS = 2.0


def link_key(student_id: str, lab: str, issuer: str, client_id: str, lineitem: str) -> str:
    return hashlib.sha256(
        "\n".join((student_id, lab, issuer, client_id, lineitem)).encode()
    ).hexdigest()


def record_link(db: Database, student_id: str, lab: str, claims: dict, tool_url: str) -> bool:
    """Remember where this student's score for ``lab`` goes (the launch's AGS claim), and that it is
    due (a result may be there already). Returns False if the launch gave no way to post a score."""
    ags = claims.get(AGS) or {}
    column = ags.get("lineitem") or ags.get("lineitems")  # the lab's column, or the course's
    if SCORE_SCOPE not in (ags.get("scope") or []) or not column:
        return False
    issuer, client = (
        claims["iss"],
        claims["aud"][0] if isinstance(claims["aud"], list) else claims["aud"],
    )
    deployment = claims["https://purl.imsglobal.org/spec/lti/claim/deployment_id"]
    key = link_key(student_id, lab, issuer, client, column)
    with db.writing() as session:
        link = session.scalars(select(LtiLink).where(LtiLink.key == key)).first()
        if link is None:
            session.add(
                LtiLink(
                    key=key,
                    student_id=student_id,
                    lab=lab,
                    issuer=issuer,
                    client_id=client,
                    deployment_id=deployment,
                    lti_user_id=claims["sub"],
                    ags=json.dumps(ags),
                    tool_url=tool_url.rstrip("/"),
                    created_at=now(),
                    launched_at=now(),
                    wanted=1,
                    posted=0,
                    tries=0,
                )
            )
        else:
            link.lti_user_id, link.ags, link.tool_url, link.launched_at = (
                claims["sub"],
                json.dumps(ags),
                tool_url.rstrip("/"),
                now(),
            )
    return True


@dataclass(frozen=True)
class Due:
    link_id: int
    wanted: int


def take_due(db: Database, limit: int = 20) -> list[Due]:
    """Links whose score is due, each leased to this poster (a conditional UPDATE only one poster
    wins)."""
    moment = now()
    with db.reading() as session:
        rows = session.execute(
            select(LtiLink.id, LtiLink.wanted)
            .where(
                LtiLink.wanted > LtiLink.posted,
                (LtiLink.next_try_at.is_(None)) | (LtiLink.next_try_at <= moment),
            )
            .order_by(LtiLink.id)
            .limit(limit)
        ).all()
    taken = []
    for link_id, wanted in rows:
        with db.writing() as session:
            won = rowcount(session.execute(
                update(LtiLink)
                .where(
                    LtiLink.id == link_id,
                    (LtiLink.next_try_at.is_(None)) | (LtiLink.next_try_at <= moment),
                )
                .values(next_try_at=moment + LEASE)
            ))
        if won:
            taken.append(Due(link_id, wanted))
    return taken


def score_of(row: Submission, link: LtiLink, title: str) -> Grade:
    """The AGS score of a graded submission, with the comment that links to its feedback page."""
    if row.score is None or row.max_score is None:
        raise ValueError(f"submission #{row.id} has no score to post")
    late = " (handed in late)" if row.late else ""
    comment = (f"{title}: {row.score:g} / {row.max_score:g}{late}, submission #{row.id}. "
               f"Feedback: {link.tool_url}/me/submissions/{row.id}")
    return (
        Grade()
        .set_score_given(row.score)
        .set_score_maximum(row.max_score)
        .set_user_id(link.lti_user_id)
        .set_activity_progress("Completed")
        .set_grading_progress("FullyGraded")
        .set_comment(comment)
        .set_timestamp(now().isoformat(timespec="milliseconds") + "Z")
        .set_submitted_at(row.created_at.isoformat(timespec="seconds") + "Z")
    )


def _link(session, link_id: int) -> LtiLink:
    """The link a due score is for."""
    link = session.get(LtiLink, link_id)
    if link is None:
        raise LookupError(f"the LTI link {link_id} is no longer in the database")
    return link


def post(db: Database, config, counted: str, due: Due, titles: dict[str, tuple[str, float]]) -> str:
    """Send the counted attempt of one link; returns what happened (for the log)."""
    with db.reading() as session:
        link = _link(session, due.link_id)
        chosen = counted_attempts(
            attempts(session, student_id=link.student_id, lab=link.lab, with_results=False), counted
        )
    row = chosen.get((link.student_id, link.lab))
    outcome = "nothing graded yet"
    try:
        if row is not None:
            title, points = titles.get(link.lab, (link.lab, row.max_score or 0))
            registration = find_registration(config, link.issuer, link.client_id)
            service = AssignmentsGradesService(Connector(registration), json.loads(link.ags))
            lineitem = None
            # only the course's columns: find or make the lab's
            if not json.loads(link.ags).get("lineitem"):
                lineitem = (
                    LineItem()
                    .set_tag("bpe-labs")
                    .set_resource_id(link.lab)
                    .set_label(title)
                    .set_score_maximum(points)
                )
            service.put_grade(score_of(row, link, title), lineitem)
            outcome = f"submission {row.id}: {row.score:g} / {row.max_score:g} posted"
    except Exception as error:  # the LMS down, a refusal, a registration removed: tried again later
        message = f"{type(error).__name__}: {str(error)[:500]}"
        with db.writing() as session:
            link = _link(session, due.link_id)
            link.tries += 1
            link.error = message
            link.next_try_at = now() + timedelta(seconds=min(5 * 2 ** (link.tries - 1), 600))
        return f"failed ({message}); try {link.tries + 1} at {link.next_try_at:%H:%M:%S}"
    with db.writing() as session:
        link = _link(session, due.link_id)
        link.posted, link.tries, link.error, link.next_try_at = (
            max(link.posted, due.wanted),
            0,
            None,
            None,
        )
        if row is not None:
            link.posted_submission_id, link.posted_score, link.posted_at = row.id, row.score, now()
    return outcome


def status(session) -> dict:
    """The dashboard's line: links, scores waiting to be posted, and those whose last post
    failed."""
    from sqlalchemy import func

    links = session.scalar(select(func.count()).select_from(LtiLink))
    waiting = session.scalar(
        select(func.count()).select_from(LtiLink).where(LtiLink.wanted > LtiLink.posted)
    )
    failing = list(
        session.scalars(
            select(LtiLink)
            .where(LtiLink.wanted > LtiLink.posted, LtiLink.error.is_not(None))
            .order_by(LtiLink.id)
        )
    )
    return {
        "links": links,
        "waiting": waiting,
        "failing": len(failing),
        "error": f"{failing[0].student_id}, {failing[0].lab}: {failing[0].error}"
        if failing
        else "",
        "next_try": failing[0].next_try_at if failing else None,
    }


class ScorePoster:
    """A thread of the web process that posts due scores (every 2 s, and when woken)."""

    def __init__(self, db: Database, config, counted: str):
        from autograder.labs import all_labs

        self.db, self.config, self.counted = db, config, counted
        self.titles = {
            lab_id: (lab.title, sum(part.points for part in lab.parts))
            for lab_id, lab in all_labs().items()
        }
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="lti-score-poster", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                for due in take_due(self.db):
                    log.info("LMS score of link %s: %s", due.link_id,
                             post(self.db, self.config, self.counted, due, self.titles))
            except Exception:  # the database busy or away: the next round tries again
                log.exception("posting scores to the LMS")
            self.stopping.wait(POLL_SECONDS)

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(30)
