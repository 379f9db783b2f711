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

import nbformat

from autograder.labs import Lab, nbgrader_meta, release_cells

# A given cell with this tag only demonstrates (a timing run, a plot of the whole corpus): the
# grader does not run it, and nothing a graded part needs may be defined in it.
GRADING_SKIP = "grading-skip"


@dataclass
class Step:
    """One code cell of the program to grade."""

    kind: str  # given | answer | added | check (a part's test cell: grade that part here)
    source: str
    cell_id: str  # the release's id or grade_id; for added cells the submission's position
    part_of: str | None = None  # for answers: the grade_id of the answer cell


@dataclass
class Repaired:
    program: list[Step]
    checks: dict[str, str]  # part id -> the visible check code, as released
    integrity: list[dict] = field(default_factory=list)


# How alike (difflib ratio) an unmatched code cell must be to a given cell to count as that cell, edited.
EDITED_GIVEN_LIKENESS = 0.6


def _norm(source: str) -> str:
    return re.sub(r"\s+", " ", source).strip()


def _role(cell) -> str:
    meta = nbgrader_meta(cell)
    if meta.get("grade") and cell.cell_type == "code":
        return "test"
    if meta.get("solution"):
        return "answer"
    if cell.cell_type == "code":
        return "given"
    return "markdown"


def match_cells(release: tuple, cells: list) -> dict[int, int]:
    """Release index -> submission index."""
    matched: dict[int, int] = {}
    used: set[int] = set()

    def claim(r, s):
        matched[r] = s
        used.add(s)

    by_grade_id = {}
    for s, cell in enumerate(cells):
        grade_id = nbgrader_meta(cell).get("grade_id")
        if grade_id and grade_id not in by_grade_id:
            by_grade_id[grade_id] = s
    by_id = {cell.get("id"): s for s, cell in enumerate(cells) if cell.get("id")}
    for r, cell in enumerate(release):
        grade_id = nbgrader_meta(cell).get("grade_id")
        if grade_id in by_grade_id and by_grade_id[grade_id] not in used:
            claim(r, by_grade_id[grade_id])
        elif cell.get("id") in by_id and by_id[cell.get("id")] not in used and (
                _role(cell) == "answer" or _norm(cells[by_id[cell["id"]]].source) == _norm(cell.source)):
            claim(r, by_id[cell["id"]])
    # Given cells, checks and text by their exact content.
    by_text: dict[str, list[int]] = {}
    for s, cell in enumerate(cells):
        if s not in used:
            by_text.setdefault(_norm(cell.source), []).append(s)
    for r, cell in enumerate(release):
        if r in matched or _role(cell) == "answer" or not cell.source.strip():
            continue
        candidates = [s for s in by_text.get(_norm(cell.source), []) if s not in used]
        if candidates:
            claim(r, candidates[0])
    # Answer cells: the most template-like unclaimed cell between the matched neighbours.
    for r, cell in enumerate(release):
        if r in matched or _role(cell) != "answer":
            continue
        before = max((matched[q] for q in matched if q < r), default=-1)
        after = min((matched[q] for q in matched if q > r), default=len(cells))
        window = [s for s in range(before + 1, after) if s not in used and cells[s].source.strip()]
        if not window:
            continue
        scored = [(difflib.SequenceMatcher(None, cell.source, cells[s].source).ratio(), s) for s in window]
        names = re.findall(r"^def (\w+)", cell.source, re.M)
        scored = [(score + (1 if any(re.search(rf"^\s*def {n}\b", cells[s].source, re.M) for n in names) else 0), s)
                  for score, s in scored]
        best_score, best = max(scored)
        if best_score >= 0.3:
            claim(r, best)
    # Given cells and checks edited in a file that lost its metadata: the most alike unclaimed code
    # cell between the matched neighbours, if it is clearly the same cell (then it is restored, and
    # the edited copy is not run as a cell of the student's own).
    for r, cell in enumerate(release):
        if r in matched or _role(cell) not in ("given", "test") or not cell.source.strip():
            continue
        before = max((matched[q] for q in matched if q < r), default=-1)
        after = min((matched[q] for q in matched if q > r), default=len(cells))
        window = [s for s in range(before + 1, after)
                  if s not in used and cells[s].get("cell_type") == "code" and cells[s].source.strip()]
        scored = [(difflib.SequenceMatcher(None, _norm(cell.source), _norm(cells[s].source)).ratio(), s) for s in window]
        if scored and max(scored)[0] >= EDITED_GIVEN_LIKENESS:
            claim(r, max(scored)[1])
    return matched


def _out_of_order(matched: dict[int, int]) -> set[int]:
    """Release indices whose cells stand out of order in the submission (outside a longest increasing run)."""
    pairs = sorted(matched.items())
    positions = [s for _, s in pairs]
    best: list[list[int]] = []
    for i, s in enumerate(positions):
        chain = max((best[j] for j in range(i) if positions[j] < s), key=len, default=[])
        best.append(chain + [i])
    keep = set(max(best, key=len, default=[]))
    return {pairs[i][0] for i in range(len(pairs)) if i not in keep}


def repair(nb: nbformat.NotebookNode, lab: Lab) -> Repaired:
    release = release_cells(lab.lab_id)
    cells = list(nb.cells)
    matched = match_cells(release, cells)
    report: list[dict] = []
    program: list[Step] = []
    checks: dict[str, str] = {}

    def note(kind, cell_id, detail):
        report.append({"event": kind, "cell": cell_id, "detail": detail})

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
        program.append(Step("added", cells[s].source, f"added cell {s + 1}"))
        note("added", f"cell {s + 1}", "a code cell the release does not have; it was run where it stood")
    for r, cell in enumerate(release):
        meta = nbgrader_meta(cell)
        cell_id = meta.get("grade_id") or cell.get("id") or f"cell {r + 1}"
        role = _role(cell)
        s = matched.get(r)
        mine = cells[s] if s is not None else None
        if r in moved and role != "markdown":
            note("moved", cell_id, "the cell stood elsewhere in the submission; it was run in its released place")
        if role == "answer":
            if mine is None:
                note("missing", cell_id, "this answer cell was deleted; its part can only pass if the function is defined elsewhere")
            else:
                if mine.get("cell_type") != "code":
                    note("type_changed", cell_id, f"the answer cell had been switched to {mine.get('cell_type')}; it was run as code")
                program.append(Step("answer", mine.source, cell_id, part_of=cell_id))
        elif role in ("given", "test"):
            if mine is None:
                note("restored", cell_id, "the cell was deleted; it was restored from the release")
            elif _norm(mine.source) != _norm(cell.source):
                note("restored", cell_id, "the cell had been edited; the released version was used")
            elif mine.get("cell_type") != "code":
                note("type_changed", cell_id, "the cell had been switched to markdown; it was run as code")
            if role == "given" and GRADING_SKIP not in cell.get("metadata", {}).get("tags", []):
                program.append(Step("given", cell.source, cell_id))
            elif role == "test":
                # Each part is graded where its test cell stands, as nbgrader does: a later cell
                # that redefines a function does not change what this part sees.
                checks[cell_id] = cell.source
                program.append(Step("check", cell.source, cell_id))
        for s_added in added_after.get(r, []):
            program.append(Step("added", cells[s_added].source, f"added cell {s_added + 1}"))
            note("added", f"cell {s_added + 1}", "a code cell the release does not have; it was run where it stood")
    return Repaired(program, checks, report)
