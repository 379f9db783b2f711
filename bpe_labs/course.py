"""The BPE Labs course, as the engine receives it (entry point ``autograder.courses: bpe_labs``)."""
from __future__ import annotations

from autograder.course import Course
from bpe_labs import ROOT


def _prepare_source(source: str) -> str:
    from bpe_labs.build import prepare_source  # imports nbgrader: only when notebooks are released

    return prepare_source(source)


def _release_note() -> str:
    from bpe_labs.build import badge_note

    return badge_note()


def _add_commands(commands) -> None:
    from bpe_labs.commands import add_commands

    add_commands(commands, COURSE)


COURSE = Course(
    name="BPE Labs",
    spec="bpe_labs.course:COURSE",
    root=ROOT,
    solutions=ROOT / "solutions",
    notebooks=ROOT / "notebooks",
    data=ROOT / "data",
    default_data=ROOT / "data" / "standins",
    examples=ROOT / "examples",
    metadata_key="bpe_labs",
    data_variable="BPE_LABS_DATA",
    # the grading service's URL, built into the notebooks' Submit cell
    server_variable="BPE_LABS_SERVER", token_variable="BPE_LABS_TOKEN",
    trusted_modules=("bpe_labs.reference", "bpe_labs.hidden"),
    prepare_source=_prepare_source,
    add_commands=_add_commands,
    release_note=_release_note,
)
