"""Reports of a grading run: grades.csv, one feedback page per submission, and the class report.

Feedback says per part the points and why they were lost, in the words of the hidden tests'
messages and of the notebook's own visible check; never hidden-test source, inputs or tracebacks.
"""
from __future__ import annotations

import html
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
import pandas as pd  # noqa: E402
from jinja2 import Environment  # noqa: E402

from autograder.labs import all_labs  # noqa: E402

BASE_COLUMNS = ["student_id", "lab", "file", "status", "score", "max_score"]


def part_columns() -> list[str]:
    return list(dict.fromkeys(part.part_id for lab in all_labs().values() for part in lab.parts))


def grades_table(results: list[dict]) -> pd.DataFrame:
    """One row per submission: ids, status, scores, one column per part, integrity and error."""
    rows = []
    for result in results:
        row = {key: result.get(key) for key in BASE_COLUMNS}
        for part_id, part in result.get("parts", {}).items():
            row[part_id] = part["score"]
        row["integrity"] = "; ".join(f"{e['event']} {e['cell']}" for e in result.get("integrity", []))
        row["error"] = result.get("message", "")
        row["seconds"] = result.get("seconds")
        rows.append(row)
    columns = BASE_COLUMNS + part_columns() + ["integrity", "error", "seconds"]
    table = pd.DataFrame(rows, columns=columns)
    return table.sort_values(["student_id", "lab", "file"], na_position="last").reset_index(drop=True)


FEEDBACK = Environment(autoescape=True).from_string("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Feedback · {{ r.lab or 'submission' }} · {{ r.student_id }}</title>
<style>body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;line-height:1.45}
td,th{padding:.35rem .6rem;border-bottom:1px solid #ddd;vertical-align:top;text-align:left}
.ok{color:#137333}.no{color:#b3261e}pre{white-space:pre-wrap;background:#f6f6f6;padding:.4rem;margin:.2rem 0}</style></head>
<body><h1>{{ title }}</h1>
<p>Student: <b>{{ r.student_id }}</b> · file: {{ file_name }}</p>
{% if r.status != 'graded' %}<p class="no">This file could not be graded: {{ r.message }}</p>
{% else %}<p>Score: <b>{{ fmt(r.score) }} / {{ fmt(r.max_score) }}</b></p>
<table><tr><th>part</th><th>points</th><th>what the autograder found</th></tr>
{% for part_id, p in r.parts.items() %}<tr><td>{{ part_id }}</td>
<td class="{{ 'ok' if p.score >= p.max_score else 'no' }}">{{ '✅' if p.score >= p.max_score else '❌' }} {{ fmt(p.score) }} / {{ fmt(p.max_score) }}</td>
<td>{{ p.message }}{% if p.visible_check %}<br>Your notebook's own check on the example said:<pre>{{ p.visible_check }}</pre>{% endif %}</td></tr>
{% endfor %}</table>
{% if problems %}<h2>Cells that did not run</h2><ul>{% for c in problems %}<li>{{ c.cell }} ({{ c.kind }}): {{ c.status }} — {{ c.error }}</li>{% endfor %}</ul>{% endif %}
{% endif %}
{% if r.integrity %}<h2>Changes to the notebook's structure</h2><ul>{% for e in r.integrity %}<li>{{ e.event }} · {{ e.cell }}: {{ e.detail }}</li>{% endfor %}</ul>{% endif %}
</body></html>
""")


def _fmt(value) -> str:
    return "" if value is None else f"{value:g}"


def feedback_html(result: dict) -> str:
    labs = all_labs()
    title = f"Feedback: {labs[result['lab']].title}" if result.get("lab") in labs else "Feedback"
    problems = [c for c in result.get("cells", []) if c["kind"] != "given"]
    return FEEDBACK.render(r=result, title=title, file_name=Path(result["file"]).name, problems=problems, fmt=_fmt)


def feedback_path(out_dir: Path, result: dict) -> Path:
    name = result.get("lab") or Path(result["file"]).stem
    return Path(out_dir) / "feedback" / result["student_id"] / f"{name}.html"


def class_report(results: list[dict], out_dir: Path) -> Path:
    """scores.png (per lab and per part) and class_report.md (parts most missed, common failures)."""
    out_dir = Path(out_dir)
    graded = [r for r in results if r.get("status") == "graded"]
    lines = ["# Class report", "", f"{len(results)} files, {len(graded)} graded.", ""]
    statuses = Counter(r.get("status") for r in results)
    lines += ["| status | files |", "|---|---|"] + [f"| {s} | {n} |" for s, n in statuses.most_common()] + [""]
    labs = sorted({r["lab"] for r in graded}, key=lambda lab_id: all_labs()[lab_id].order)
    figure, axes = plt.subplots(len(labs) or 1, 2, figsize=(11, 3.2 * max(len(labs), 1)), squeeze=False)
    for row, lab_id in enumerate(labs):
        lab = all_labs()[lab_id]
        mine = [r for r in graded if r["lab"] == lab_id]
        scores = [r["score"] for r in mine]
        axes[row][0].hist(scores, bins=range(0, int(lab.max_score) + 2), color="#4c72b0", edgecolor="white", align="left")
        axes[row][0].set(xlabel=f"score (of {lab.max_score:g})", ylabel="students")
        axes[row][0].set_title(f"{lab.title}\ntotal score", fontsize=10)
        axes[row][0].yaxis.set_major_locator(MaxNLocator(integer=True))
        share = [sum(r["parts"][p.part_id]["score"] >= p.points for r in mine) / len(mine) for p in lab.parts]
        axes[row][1].bar([p.part_id for p in lab.parts], share, color="#55a868")
        axes[row][1].set(ylim=(0, 1), ylabel="share of students")
        axes[row][1].set_title(f"{lab.lab_id}: full marks, per part", fontsize=10)
        axes[row][1].tick_params(axis="x", rotation=30)
        lines += [f"## {lab.title} ({len(mine)} graded, mean {sum(scores) / len(scores):.2f} / {lab.max_score:g})", "",
                  "| part | full marks | missed by |", "|---|---|---|"]
        for part, fraction in sorted(zip(lab.parts, share), key=lambda item: item[1]):
            lines.append(f"| {part.part_id} | {fraction:.0%} | {round((1 - fraction) * len(mine))} students |")
        failures = Counter((pid, p["message"]) for r in mine for pid, p in r["parts"].items() if p["score"] < p["max_score"])
        lines += ["", "Most common failure messages:", ""]
        lines += [f"1. **{pid}** ({n}×): {html.escape(message, quote=False)}" for (pid, message), n in failures.most_common(5)] or ["(none)"]
        lines.append("")
    figure.tight_layout()
    png = out_dir / "scores.png"
    figure.savefig(png, dpi=110)
    plt.close(figure)
    lines += ["![score distributions](scores.png)", ""]
    path = out_dir / "class_report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
