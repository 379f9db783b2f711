"""Repair: rebuild the notebook the student meant to hand in, in the release's shape.

Each cell of the released student notebook is matched to a cell of the submission: by nbgrader
``grade_id``, then by cell id, then by content (given cells by their text; answer cells by where
they stand between matched cells and by likeness to the template). The program that gets graded
is the release with the student's answers put back: given cells and checks as released, answer
cells as the student wrote them (a code cell switched to markdown is switched back), cells the
student added kept where they were added. What differed is written down as data; an honest
submission yields an empty report.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from nbformat import NotebookNode

from autograder.labs import Lab, nbgrader_meta, release_cells
from autograder.grading.result import CellKind, IntegrityEvent

# A given cell with this tag only demonstrates (a timing run, a plot of the whole corpus): the
# grader does not run it, and nothing a graded part needs may be defined in it.
GRADING_SKIP = "grading-skip"
# The Submit cell and its helper: grading-skip cells about which repair says nothing either.
SUBMIT_TAG = "autograder-submit"


@dataclass
class Step:
    """One code cell of the program to grade."""

    kind: CellKind  # given | answer | added | check (a part's test cell: grade that part here)
    source: str
    cell_id: str  # the release's id or grade_id; for added cells the submission's position
    part_of: str | None = None  # for answers: the grade_id of the answer cell


@dataclass
class Repaired:
    program: list[Step]
    checks: dict[str, str]  # part id -> the visible check code, as released
    integrity: list[IntegrityEvent] = field(default_factory=list)


# How alike (difflib ratio) an unmatched code cell must be to a given cell to count as that cell,
# edited.
EDITED_GIVEN_LIKENESS = 0.6


def _norm(source: str) -> str:
    return re.sub(r"\s+", " ", source).strip()


def _role(cell) -> CellKind | None:
    """What a release cell is in the program: a part's test cell (a check), an answer cell, a
    given cell; None for text."""
    meta = nbgrader_meta(cell)
    if meta.get("grade") and cell.cell_type == "code":
        return CellKind.CHECK
    if meta.get("solution"):
        return CellKind.ANSWER
    if cell.cell_type == "code":
        return CellKind.GIVEN
    return None


class Matching:
    """Release index -> submission index, built by the passes of :func:`match_cells`; each pass
    claims only cells that no earlier pass claimed."""

    def __init__(self, release: tuple[NotebookNode, ...], cells: list[NotebookNode]):
        self.release, self.cells = release, cells
        self.matched: dict[int, int] = {}
        self.used: set[int] = set()

    def claim(self, r: int, s: int) -> None:
        self.matched[r] = s
        self.used.add(s)

    def unclaimed_between_neighbours(self, r: int) -> list[int]:
        """Unclaimed, non-empty submission cells between the matches of release cell ``r``'s
        neighbours."""
        before = max((self.matched[q] for q in self.matched if q < r), default=-1)
        after = min((self.matched[q] for q in self.matched if q > r), default=len(self.cells))
        return [s for s in range(before + 1, after)
                if s not in self.used and self.cells[s].source.strip()]


def match_by_ids(m: Matching) -> None:
    """Pass 1: nbgrader's ``grade_id``, then the cell id (an answer cell by id alone; any other cell
    by id only if its text is unchanged: editors copy ids into new cells)."""
    by_grade_id: dict[str, int] = {}
    for s, cell in enumerate(m.cells):
        grade_id = nbgrader_meta(cell).get("grade_id")
        if grade_id and grade_id not in by_grade_id:
            by_grade_id[grade_id] = s
    by_id = {cell.get("id"): s for s, cell in enumerate(m.cells) if cell.get("id")}
    for r, cell in enumerate(m.release):
        grade_id = nbgrader_meta(cell).get("grade_id")
        if grade_id in by_grade_id and by_grade_id[grade_id] not in m.used:
            m.claim(r, by_grade_id[grade_id])
        elif cell.get("id") in by_id and by_id[cell.get("id")] not in m.used and (
                _role(cell) == CellKind.ANSWER
                or _norm(m.cells[by_id[cell["id"]]].source) == _norm(cell.source)):
            m.claim(r, by_id[cell["id"]])


def match_by_text(m: Matching) -> None:
    """Pass 2: given cells, checks and text by their exact content (whitespace aside)."""
    by_text: dict[str, list[int]] = {}
    for s, cell in enumerate(m.cells):
        if s not in m.used:
            by_text.setdefault(_norm(cell.source), []).append(s)
    for r, cell in enumerate(m.release):
        if r in m.matched or _role(cell) == CellKind.ANSWER or not cell.source.strip():
            continue
        candidates = [s for s in by_text.get(_norm(cell.source), []) if s not in m.used]
        if candidates:
            m.claim(r, candidates[0])


def match_answers_by_place(m: Matching) -> None:
    """Pass 3: an answer cell is the most template-like unclaimed cell between its matched
    neighbours; defining the template's function counts for a lot."""
    for r, cell in enumerate(m.release):
        if r in m.matched or _role(cell) != CellKind.ANSWER:
            continue
        window = m.unclaimed_between_neighbours(r)
        if not window:
            continue
        names = re.findall(r"^def (\w+)", cell.source, re.M)

        def likeness(s: int, template: str = cell.source, names: list[str] = names) -> float:
            defines = any(re.search(rf"^\s*def {n}\b", m.cells[s].source, re.M) for n in names)
            alike = difflib.SequenceMatcher(None, template, m.cells[s].source).ratio()
            return alike + (1 if defines else 0)

        best_score, best = max((likeness(s), s) for s in window)
        if best_score >= 0.3:
            m.claim(r, best)


def match_edited_given_cells(m: Matching) -> None:
    """Pass 4: a given cell or check edited in a file that lost its metadata: the most alike
    unclaimed code cell between the matched neighbours, if clearly the same cell (it is then
    restored, and the edited copy is not run as a cell of the student's own)."""
    for r, cell in enumerate(m.release):
        if (r in m.matched or _role(cell) not in (CellKind.GIVEN, CellKind.CHECK)
                or not cell.source.strip()):
            continue
        window = [s for s in m.unclaimed_between_neighbours(r)
                  if m.cells[s].get("cell_type") == "code"]
        released = _norm(cell.source)
        scored = [(difflib.SequenceMatcher(None, released, _norm(m.cells[s].source)).ratio(), s)
                  for s in window]
        if scored and max(scored)[0] >= EDITED_GIVEN_LIKENESS:
            m.claim(r, max(scored)[1])


MATCHING_PASSES = (match_by_ids, match_by_text, match_answers_by_place, match_edited_given_cells)


def match_cells(release: tuple[NotebookNode, ...], cells: list[NotebookNode]) -> dict[int, int]:
    """Release index -> submission index: the passes of ``MATCHING_PASSES`` in order."""
    matching = Matching(release, cells)
    for match_pass in MATCHING_PASSES:
        match_pass(matching)
    return matching.matched


def _out_of_order(matched: dict[int, int]) -> set[int]:
    """Release indices whose cells stand out of order in the submission (outside a longest
    increasing run)."""
    pairs = sorted(matched.items())
    positions = [s for _, s in pairs]
    best: list[list[int]] = []
    for i, s in enumerate(positions):
        before = [best[j] for j in range(i) if positions[j] < s]
        best.append((max(before, key=len) if before else []) + [i])
    longest: list[int] = max(best, key=len) if best else []
    keep = set(longest)
    return {pairs[i][0] for i in range(len(pairs)) if i not in keep}


ADDED = "a code cell the release does not have; it was run where it stood"


def repair(nb: NotebookNode, lab: Lab) -> Repaired:
    """The program to grade, the released checks, and what differed from the release."""
    release = release_cells(lab.lab_id)
    cells = list(nb.cells)
    matched = match_cells(release, cells)
    report: list[IntegrityEvent] = []
    program: list[Step] = []
    checks: dict[str, str] = {}

    def note(kind: str, cell_id: str, detail: str) -> None:
        report.append(IntegrityEvent(kind, cell_id, detail))

    moved = _out_of_order(matched)
    added_after: dict[int, list[int]] = {}
    last_release_before = -1
    inverse = {s: r for r, s in matched.items()}
    for s, cell in enumerate(cells):
        if s in inverse:
            last_release_before = inverse[s]
        elif cell.get("cell_type") == "code" and cell.source.strip():
            added_after.setdefault(last_release_before, []).append(s)

    for s in added_after.get(-1, []):
        program.append(Step(CellKind.ADDED, cells[s].source, f"added cell {s + 1}"))
        note("added", f"cell {s + 1}", ADDED)
    for r, cell in enumerate(release):
        meta = nbgrader_meta(cell)
        cell_id = meta.get("grade_id") or cell.get("id") or f"cell {r + 1}"
        role = _role(cell)
        at = matched.get(r)
        mine = cells[at] if at is not None else None
        # The Submit cell and its helper (autograder/release/submit_cells.py) are never run here:
        # whatever a student did to them costs nothing and is not reported.
        submit_cell = SUBMIT_TAG in (cell.get("metadata", {}).get("tags") or [])
        if r in moved and role is not None and not submit_cell:
            note("moved", cell_id,
                 "the cell stood elsewhere in the submission; it was run in its released place")
        if role == CellKind.ANSWER:
            if mine is None:
                note("missing", cell_id, "this answer cell was deleted; its part can only pass "
                                         "if the function is defined elsewhere")
            else:
                if mine.get("cell_type") != "code":
                    note("type_changed", cell_id, "the answer cell had been switched to "
                                                  f"{mine.get('cell_type')}; it was run as code")
                program.append(Step(CellKind.ANSWER, mine.source, cell_id, part_of=cell_id))
        elif role in (CellKind.GIVEN, CellKind.CHECK):
            if submit_cell:
                pass
            elif mine is None:
                note("restored", cell_id, "the cell was deleted; it was restored from the release")
            elif _norm(mine.source) != _norm(cell.source):
                note("restored", cell_id,
                     "the cell had been edited; the released version was used")
            elif mine.get("cell_type") != "code":
                note("type_changed", cell_id,
                     "the cell had been switched to markdown; it was run as code")
            skipped = GRADING_SKIP in cell.get("metadata", {}).get("tags", [])
            if role == CellKind.GIVEN and not skipped:
                program.append(Step(CellKind.GIVEN, cell.source, cell_id))
            elif role == CellKind.CHECK:
                # Each part is graded where its test cell stands, as nbgrader does: a later cell
                # that redefines a function does not change what this part sees.
                checks[cell_id] = cell.source
                program.append(Step(CellKind.CHECK, cell.source, cell_id))
        for s_added in added_after.get(r, []):
            program.append(Step(CellKind.ADDED, cells[s_added].source, f"added cell {s_added + 1}"))
            note("added", f"cell {s_added + 1}", ADDED)
    return Repaired(program, checks, report)
