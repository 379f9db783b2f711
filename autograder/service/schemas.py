"""The API's answers as Pydantic models: the OpenAPI document (``/openapi.json``) describes every
response body from these, and schemathesis checks the running service against it
(tests/service/test_service_schema.py). docs/SERVICE.md explains the fields."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["queued", "grading", "graded", "error"]


class Problem(BaseModel):
    """Every refusal: a sentence for the student, and a word for programs."""

    # a refusal may say more (retry_after, next_allowed_at, pending, deadline)
    model_config = ConfigDict(extra="allow")

    detail: str = Field(description="what went wrong and what to do, in one sentence")
    status: str = Field(description="a word for programs: unauthorized, rate_limited, ...")


class Queued(BaseModel):
    """A notebook taken: its id, and where to follow it."""

    id: int
    status: Status
    lab: str
    position: int = Field(description="its place in the queue (0 once it is being graded)")
    late: bool
    url: str = Field(description="the page that shows it")


class PartFeedback(BaseModel):
    part: str
    score: float
    max_score: float
    message: str
    visible_check: str | None = None


class CellOutcome(BaseModel):
    cell: str
    kind: str
    status: str
    error: str | None = None


class SubmissionSummary(BaseModel):
    """One submission as the list shows it."""

    model_config = ConfigDict(extra="allow")  # the grading service may add fields

    id: int
    status: Status
    lab: str
    score: float | None
    max_score: float | None
    parts: dict[str, float] = Field(description="each part's score, once graded")
    feedback_html: str | None = Field(description="the feedback page (in the single answer only)")
    error: str | None
    position: int
    file_name: str
    late: bool
    submitted_at: str = Field(description="ISO 8601, UTC")
    graded_at: str | None
    grading_seconds: float | None
    feedback: list[PartFeedback] | None = None
    cells: list[CellOutcome] | None = None


class Health(BaseModel):
    status: Literal["ok", "starting", "no workers", "database_unavailable"]
    database: Literal["ok", "unreachable"] = Field("ok", description="the database: reachable?")
    grading: str = Field("ok", description="the grading process: ok, starting, no workers, "
                         "unknown (while the database is unreachable)")
    graders: int = Field(description="grading slots ready")
    workers: int = Field(0, description="workers that can grade now (a Dask cluster's that passed "
                         "the check); 0: 503")
    queue: int = Field(description="submissions waiting or being graded")
    max_upload_bytes: int

    model_config = ConfigDict(extra="allow")  # what is down, when something is


def problems(*codes: int, **descriptions: str) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a route: each error status with the :class:`Problem` body."""
    said = {int(code.lstrip("_")): text for code, text in descriptions.items()}
    return {
        code: {"model": Problem, "description": said.get(code, "refused (see detail)")}
        for code in sorted({*codes, *said})
    }
