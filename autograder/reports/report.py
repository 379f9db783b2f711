"""Reports of a grading run: grades.csv, one feedback page per submission, and the class report.

Feedback says per part the points and why they were lost, in the words of the hidden tests'
messages and of the notebook's own visible check; never hidden-test source, inputs or tracebacks.
"""
from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

from jinja2 import Environment

from autograder.labs import all_labs
from autograder.grading.names import escaped, file_name, terminal
from autograder.grading.result import GRADED, MISSING, CellKind, GradeResult

# matplotlib is imported by class_report only, and pandas nowhere: together they take longer to
# import (1.2 CPU-s) than this module takes to write every report of a small class. A batch
# imports matplotlib in a background process while it grades (``painter``).

BASE_COLUMNS = ["student_id", "lab", "file", "status", "score", "max_score"]


def _csv_safe(value):
    """Text a spreadsheet shows as text: no formula (=, +, -, @ first); control characters and bytes
    that are not UTF-8 escaped (grading/names.py), line breaks and tabs kept."""
    if not isinstance(value, str):
        return value
    value = escaped(value, keep="\n\t")
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def _points(value) -> str | None:
    """A score written one way whatever the result holds (an int or a float): ``0``, ``11``, ``2.5``
    (never ``0`` in one row and ``11.0`` in the next)."""
    if value is None:
        return None
    value = round(float(value), 6)
    return str(int(value)) if value.is_integer() else repr(value)


def part_columns() -> list[str]:
    return list(dict.fromkeys(part.part_id for lab in all_labs().values() for part in lab.parts))


def grades_columns() -> list[str]:
    return (
        BASE_COLUMNS
        + part_columns()
        + ["integrity", "error", "isolation", "identity", "adjusted", "seconds"]
    )


def _sort_key(row: dict) -> tuple:
    """By student, lab, file; a missing value after every present one."""
    return tuple(
        (row.get(key) is None, str(row.get(key) or "")) for key in ("student_id", "lab", "file")
    )


def grades_rows(results: list[GradeResult]) -> list[dict]:
    """One row per submission (column -> value): ids, status, scores, one column per part, integrity
    and error."""
    rows = []
    for result in results:
        row: dict[str, str | float | None] = {
            "student_id": result.student_id,
            "lab": result.lab,
            "file": result.file,
            "status": result.status,
            "score": _points(result.score),
            "max_score": _points(result.max_score),
        }
        for part_id, part in result.parts.items():
            row[part_id] = _points(part.score)
        row["integrity"] = "; ".join(f"{e.event} {e.cell}" for e in result.integrity)
        row["error"] = result.message
        row["isolation"] = result.isolation or "unknown"
        row["identity"] = result.identity
        row["adjusted"] = adjusted_text(result)
        row["seconds"] = result.seconds
        rows.append({key: _csv_safe(value) for key, value in row.items()})
    return sorted(rows, key=_sort_key)


def write_grades_csv(results: list[GradeResult], path: Path) -> None:
    """grades.csv: ``grades_columns()``, one row per submission, an empty cell for a missing
    value."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, grades_columns(), restval="", extrasaction="ignore")
        writer.writeheader()
        writer.writerows({key: "" if value is None else value for key, value in row.items()}
                         for row in grades_rows(results))


def grades_text(results: list[GradeResult]) -> str:
    """The grades as plain-text tables, one per lab, with that lab's columns only (for the
    terminal).

    A column is left out when no row of the lab has a value in it; ``file`` and ``integrity``
    are long and left to grades.csv, and ``isolation``, the same for most rows, is said once
    under the table. Every cell is the text of grades.csv, escaped for the terminal
    (grading/names.py).
    """
    by_lab: dict[str, list[dict]] = {}
    for row in grades_rows(results):
        by_lab.setdefault(row["lab"] or "(no lab)", []).append(row)
    blocks = []
    for lab_id, rows in by_lab.items():
        columns = [
            column
            for column in grades_columns()
            if column not in ("lab", "file", "integrity", "isolation")
            and any(row.get(column) not in (None, "") for row in rows)
        ]
        cells = [[_cell(row.get(column)) for column in columns] for row in rows]
        widths = [
            max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)
        ]
        lines = [" ".join(column.rjust(width) for column, width in zip(columns, widths))]
        lines += [
            " ".join(cell.rjust(width) for cell, width in zip(line, widths)) for line in cells
        ]
        isolation = Counter(row["isolation"] for row in rows if row["status"] == GRADED)
        if isolation:
            lines.append(
                "isolation: "
                + "; ".join(
                    f"{terminal(kind)} ({plural(n, 'file')})" for kind, n in isolation.most_common()
                )
            )
        blocks.append(f"{terminal(lab_id)}\n" + "\n".join(lines))
    return "\n\n".join(blocks)


def plural(count: int, noun: str) -> str:
    """``1 file``, ``2 files``; ``1 entry``, ``3 entries``."""
    if count == 1:
        return f"1 {noun}"
    return (
        f"{count} {noun[:-1]}ies"
        if noun.endswith("y") and noun[-2:-1] not in "aeiou"
        else f"{count} {noun}s"
    )


def _cell(value) -> str:
    if value is None or value == "":
        return ""
    return f"{value:g}" if isinstance(value, float) else terminal(value)[:80]


FEEDBACK = Environment(autoescape=True).from_string("""<!doctype html>
<html lang="en"><head><meta charset="utf-8">\
<title>Feedback · {{ r.lab or 'submission' }} · {{ r.student_id }}</title>
<style>body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;line-height:1.45}
td,th{padding:.35rem .6rem;border-bottom:1px solid #ddd;vertical-align:top;text-align:left}
.ok{color:#137333}.no{color:#b3261e}\
pre{white-space:pre-wrap;background:#f6f6f6;padding:.4rem;margin:.2rem 0}</style></head>
<body><h1>{{ title }}</h1>
<p>Student: <b>{{ r.student_id }}</b> · file: {{ file_name }}</p>
{% if not r.graded %}<p class="no">This file could not be graded: {{ r.message }}</p>
{% else %}<p>Score: <b>{{ fmt(r.score) }} / {{ fmt(r.max_score) }}</b></p>
<table><tr><th>part</th><th>points</th><th>what the autograder found</th></tr>
{% for part_id, p in r.parts.items() %}<tr><td>{{ part_id }}</td>
<td class="{{ 'ok' if p.passed else 'no' }}">\
{{ '✅' if p.passed else '❌' }} {{ fmt(p.score) }} / {{ fmt(p.max_score) }}</td>
<td>{{ p.message }}{% if p.visible_check %}\
<br>Your notebook's own check on the example said:<pre>{{ p.visible_check }}</pre>\
{% endif %}</td></tr>
{% endfor %}</table>
{% if r.adjustments %}<h2>From your grader</h2><ul>{% for a in r.adjustments %}<li>{{ a.cell }}:
{% if a.score is not none %}\
points set to {{ fmt(a.score) }} (the autograder gave {{ fmt(a.auto_score) }}){% endif %}
{% if a.comment %}<pre>{{ a.comment }}</pre>{% endif %}</li>{% endfor %}</ul>{% endif %}
{% if problems %}<h2>Cells that did not run</h2><ul>\
{% for c in problems %}<li>{{ c.cell }} ({{ c.kind }}): {{ c.status }} — {{ c.error }}</li>\
{% endfor %}</ul>{% endif %}
{% endif %}
{% if r.integrity %}<h2>Changes to the notebook's structure</h2><ul>\
{% for e in r.integrity %}<li>{{ e.event }} · {{ e.cell }}: {{ e.detail }}</li>\
{% endfor %}</ul>{% endif %}
</body></html>
""")


def _fmt(value) -> str:
    return "" if value is None else f"{value:g}"


def adjusted_text(result: GradeResult) -> str:
    """What a person changed by hand in the gradebook (formgrader): ``merge 0→2; comment on
    merge_answer``."""
    return "; ".join(f"{a.cell} {_fmt(a.auto_score) or '-'}→{_fmt(a.score)}" if a.score is not None
                     else f"comment on {a.cell}" for a in result.adjustments)


def feedback_html(result: GradeResult) -> str:
    labs = all_labs()
    title = f"Feedback: {labs[result.lab].title}" if result.lab in labs else "Feedback"
    problems = [c for c in result.cells if c.kind != CellKind.GIVEN]
    return FEEDBACK.render(
        r=result, title=title, file_name=Path(result.file).name, problems=problems, fmt=_fmt
    )


def _path_safe(text: str) -> str:
    """A file name made from a student id or file name: no separators, no leading dot, no '..', at
    most 120 bytes; a name that had to be changed carries a hash of the original, so two never
    meet."""
    return file_name(str(text))


def feedback_path(out_dir: Path, result: GradeResult) -> Path:
    name = result.lab or Path(result.file).stem
    return Path(out_dir) / "feedback" / _path_safe(result.student_id) / f"{_path_safe(name)}.html"


# The ASCII punctuation that Markdown (CommonMark, GitHub's tables, autolinks and math) gives a
# meaning; a backslash makes each literal. Punctuation without one (, ; ' " / ? %) is left as it is.
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:&$@=^])")


def markdown_text(text: str, limit: int = 300) -> str:
    """Student-made text as plain Markdown text: one line, every Markdown character
    backslash-escaped, so that a CommonMark renderer shows the text as it is: no link, image,
    ``javascript:`` URL, raw HTML or entity survives, and nothing is escaped twice (``'`` stays
    ``'``). Control characters and bytes that are not UTF-8 are
    :func:`~autograder.grading.names.escaped` first."""
    text = terminal(text)[:limit]
    return _MARKDOWN_SPECIALS.sub(r"\\\1", text)


class Painter:
    """A background process that imports matplotlib now and draws the class report later, so that
    neither the import nor the drawing holds the command up.

        painter = Painter()                      # at the start of a batch
        painter.start(results, out_dir)          # when the last result is in: drawing begins
        class_report(results, out_dir, painter)  # its path, once drawn; the process ends
    """

    def __init__(self):
        from autograder.reports.background import Background

        self.background = Background("class report painter", preload=[
            "matplotlib.figure", "matplotlib.ticker", "matplotlib.backends.backend_agg", _warm_up],
            niceness=10)
        self.drawing: tuple | None = None  # (rows, out_dir) of the report under way

    def start(self, results: list[GradeResult], out_dir: Path) -> None:
        """Start drawing the report of ``results`` (all of them) while this process does other
        work."""
        from autograder.reports.background import BackgroundLost

        try:
            self.background.submit(_class_report, results, Path(out_dir))
            self.drawing = (len(results), Path(out_dir))
        except BackgroundLost:
            pass

    def report(self, results: list[GradeResult], out_dir: Path) -> Path:
        """The report of ``results``, drawn there (``BackgroundLost`` if it cannot be); then the
        process ends."""
        try:
            if self.drawing is not None and self.drawing != (len(results), Path(out_dir)):
                self.background.result()  # started on other rows: drawn again
                self.drawing = None
            if self.drawing is None:
                self.background.submit(_class_report, results, Path(out_dir))
            return self.background.result()
        finally:
            self.drawing = None
            self.background.close()


def _warm_up() -> None:
    """Draw and encode a small figure once, as the report will: the fonts, the text layout and the
    PNG writer are loaded while the notebooks grade, not after the last one."""
    import io

    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 1))
    axes = figure.subplots(1, 2, squeeze=False)
    axes[0][0].hist([1, 2, 2], bins=range(0, 4))
    axes[0][1].bar(["a"], [0.5])
    axes[0][0].set_title("warm-up\nscore", fontsize=10)
    figure.tight_layout()
    figure.savefig(io.BytesIO(), format="png", dpi=20)


def class_report(results: list[GradeResult], out_dir: Path, painter: Painter | None = None) -> Path:
    """scores.png (per lab and per part) and class_report.md (parts most missed, common failures).

    Drawn by ``painter`` (see :class:`Painter`; it is closed after) if given, else in this process.
    """
    if painter is not None:
        from autograder.reports.background import BackgroundLost

        try:
            return painter.report(results, out_dir)
        except BackgroundLost:
            pass
    return _class_report(results, out_dir)


def batch_counts(rows) -> str:
    """This batch's files and how many were graded: ``32 files in canvas/toy_bpe, 31 graded``."""
    where = f" in {rows.folder}" if getattr(rows, "folder", None) else ""
    return (f"{plural(getattr(rows, 'this_batch', len(rows)), 'file')}{where}, "
            f"{getattr(rows, 'batch_graded', 0)} graded")


def term_counts(rows) -> str:
    """What the term's rows hold: ``45 rows: 33 graded, 3 missing hand-ins, 9 not graded``."""
    graded = sum(r.status == GRADED for r in rows)
    missing = sum(r.status == MISSING for r in rows)
    other = len(rows) - graded - missing
    return (f"{plural(len(rows), 'row')}: {graded} graded"
            + (f", {plural(missing, 'missing hand-in')} (roster)" if missing else "")
            + (f", {other} not graded" if other else ""))


def _class_report(results: list[GradeResult], out_dir: Path) -> Path:
    out_dir = Path(out_dir)
    graded = [r for r in results if r.status == GRADED]
    missing = [r for r in results if r.status == MISSING]
    lines = [
        "# Class report",
        "",
        f"{plural(len(results) - len(missing), 'file')}, {len(graded)} graded"
        + (
            f"; {plural(len(missing), 'missing hand-in')} (roster students without a file for a "
            "lab)"
            if missing
            else ""
        )
        + ".",
        "",
    ]
    earlier = getattr(results, "earlier", 0)
    if earlier:
        lines += [
            f"This batch: {batch_counts(results)}. The term in this folder also keeps "
            f"{plural(earlier, 'row')} of earlier batches whose files were not in this one: their "
            "rows are here too, as in grades.csv (the counts above are the term's).",
            "",
        ]
    statuses = Counter(r.status for r in results)
    lines += (
        ["| status | files |", "|---|---|"]
        + [f"| {markdown_text(s)} | {n} |" for s, n in statuses.most_common()]
        + [""]
    )
    isolation = Counter(r.isolation or "unknown" for r in graded)
    lines += ["How the student kernels were isolated (see docs/SECURITY.md):", "",
              "| isolation | graded files |", "|---|---|"]
    lines += [f"| {markdown_text(kind)} | {n} |" for kind, n in isolation.most_common()] or [
        "| (no file graded) | 0 |"
    ]
    lines.append("")
    if missing:
        lines += ["Missing (on the roster, no file for the lab):", ""]
        # a missing row is always for a lab
        for lab_id in sorted({r.lab for r in missing if r.lab is not None}):
            students = sorted(r.student_id for r in missing if r.lab == lab_id)
            lines.append(
                f"* {markdown_text(lab_id)} ({len(students)}): "
                + ", ".join(markdown_text(s) for s in students)
            )
        lines.append("")
    odd = [r for r in results if r.status not in (GRADED, MISSING)]
    if odd:
        lines += ["Not graded (every such row the term keeps, until its file is removed or its "
                  "folder graded again):", ""]
        lines += [
            f"* {markdown_text(r.lab or 'unknown')}, {markdown_text(r.student_id)}, "
            f"{markdown_text(Path(r.file).name)}: {markdown_text(r.status)} "
            f"({markdown_text(r.message[:200])})"
            for r in sorted(odd, key=lambda r: (r.lab or "", r.student_id, r.file))
        ] + [""]
    adjusted = [r for r in results if r.adjustments]
    if adjusted:
        lines += [
            "Changed by hand in formgrader (the scores below count them; grades.csv's adjusted "
            f"column): {len(adjusted)} submission(s).",
            "",
        ]
        lines += [
            f"* {markdown_text(r.student_id)}, {markdown_text(r.lab or '')}: "
            f"{markdown_text(adjusted_text(r))}"
            for r in adjusted
        ] + [""]
    identity = [r for r in results if r.identity]
    if identity:
        lines += ["Who handed in what (from the export names or the roster):", ""]
        lines += [
            f"* {markdown_text(Path(r.file).name)}: {markdown_text(r.identity)}" for r in identity
        ] + [""]
    from matplotlib.figure import Figure  # no pyplot: no GUI backend is looked for
    from matplotlib.ticker import MaxNLocator

    # a graded result always has its lab and its score
    labs = sorted(
        {r.lab for r in graded if r.lab is not None}, key=lambda lab_id: all_labs()[lab_id].order
    )
    figure = Figure(figsize=(11, 3.2 * max(len(labs), 1)))
    axes = figure.subplots(len(labs) or 1, 2, squeeze=False)
    for row, lab_id in enumerate(labs):
        lab = all_labs()[lab_id]
        mine = [r for r in graded if r.lab == lab_id]
        scores = [r.score or 0.0 for r in mine]
        axes[row][0].hist(
            scores,
            bins=range(0, int(lab.max_score) + 2),
            color="#4c72b0",
            edgecolor="white",
            align="left",
        )
        axes[row][0].set(xlabel=f"score (of {lab.max_score:g})", ylabel="students")
        axes[row][0].set_title(f"{lab.title}\ntotal score", fontsize=10)
        axes[row][0].yaxis.set_major_locator(MaxNLocator(integer=True))
        share = [
            sum(r.parts[p.part_id].score >= p.points for r in mine) / len(mine) for p in lab.parts
        ]
        axes[row][1].bar([p.part_id for p in lab.parts], share, color="#55a868")
        axes[row][1].set(ylim=(0, 1), ylabel="share of students")
        axes[row][1].set_title(f"{lab.lab_id}: full marks, per part", fontsize=10)
        # each part name ends under its bar, so a long one stays inside the figure
        axes[row][1].set_xticks(
            range(len(lab.parts)),
            [p.part_id for p in lab.parts],
            rotation=30,
            ha="right",
            rotation_mode="anchor",
        )
        lines += [
            f"## {lab.title} ({len(mine)} graded, mean {sum(scores) / len(scores):.2f} / "
            f"{lab.max_score:g})",
            "",
            "| part | full marks | missed by |",
            "|---|---|---|",
        ]
        for part, fraction in sorted(zip(lab.parts, share), key=lambda item: item[1]):
            lines.append(
                f"| {part.part_id} | {fraction:.0%} | "
                f"{plural(round((1 - fraction) * len(mine)), 'student')} |"
            )
        failures = Counter(
            (pid, p.message) for r in mine for pid, p in r.parts.items() if not p.passed
        )
        lines += ["", "Most common failure messages:", ""]
        lines += [
            f"1. **{pid}** ({n}×): {markdown_text(message)}"
            for (pid, message), n in failures.most_common(5)
        ] or ["(none)"]
        lines.append("")
    figure.tight_layout()
    png = out_dir / "scores.png"
    figure.savefig(png, dpi=110)
    lines += ["![score distributions](scores.png)", ""]
    path = out_dir / "class_report.md"
    path.write_text("\n".join(lines), encoding="utf-8", errors="replace")
    return path
