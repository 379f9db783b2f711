"""Reports escape what came from a student, and the feedback hides hidden inputs by value, never
what the released notebook already shows."""
from __future__ import annotations

from dataclasses import replace

import mistune
from bs4 import BeautifulSoup

from autograder.reports import report
from autograder.grading.grade import Redactor, public_text, public_values
from autograder.grading.result import GradeResult, IntegrityEvent, PartScore

HOSTILE = (
    "[click me](javascript:alert(1)) <img src=x onerror=alert(1)> **bold** "
    "![i](http://evil.example/x.png) "
    "<script>alert(2)</script> | a | table | `code` https://evil.example javascript:alert(3)"
)


def result(message: str = HOSTILE, student: str = "amy") -> GradeResult:
    return GradeResult(student, f"/sub/{student}.ipynb", lab="toy_bpe", status="graded", score=9.0,
                       max_score=11.0, isolation="landlock-abi7+netns+seccomp+uid", seconds=1.0,
                       parts={p: PartScore(p, 0.0 if p == "tokenize" else m, m,
                                           message if p == "tokenize" else "all checks passed",
                                           visible_check=message)
                              for p, m in [("initialize", 2.0), ("pair_frequencies", 2.0),
                                           ("merge", 2.0), ("learn", 3.0), ("tokenize", 2.0)]},
                       integrity=[IntegrityEvent("added", "cell 9", message)])


def test_class_report_renders_student_text_as_text(tmp_path):
    report.class_report([result(), result(student="ben")], tmp_path)
    markdown = (tmp_path / "class_report.md").read_text()
    rendered = BeautifulSoup(mistune.html(markdown), "html.parser")
    assert not rendered.find_all("script")
    assert [img["src"] for img in rendered.find_all("img")] == ["scores.png"], (
        "no image from a student"
    )
    assert not [a for a in rendered.find_all("a") if "evil" in a.get("href", "")
                or "javascript" in a.get("href", "")]
    assert not rendered.find_all("strong", string="bold")
    assert "[click me](javascript:alert(1))" in rendered.get_text(), (
        "the text itself is kept, as text"
    )


def test_class_report_and_grades_say_which_isolation_the_files_got(tmp_path):
    unknown = replace(result(student="cal"), isolation=None)
    report.class_report([result(), unknown], tmp_path)
    markdown = (tmp_path / "class_report.md").read_text()
    assert (
        "landlock\\-abi7\\+netns\\+seccomp\\+uid | 1 |" in markdown
        and "| unknown | 1 |" in markdown
    )
    rows = report.grades_rows([result(), unknown])
    assert {row["student_id"]: row["isolation"] for row in rows} == {
        "amy": "landlock-abi7+netns+seccomp+uid", "cal": "unknown",
    }


def test_grades_csv_cells_do_not_become_spreadsheet_formulas():
    rows = report.grades_rows([result(message="x", student="=HYPERLINK(\"http://evil\")")])
    assert rows[0]["student_id"].startswith("'=")


def test_feedback_html_is_escaped():
    page = BeautifulSoup(report.feedback_html(result()), "html.parser")
    assert not page.find_all(["script", "img"])
    assert not [a for a in page.find_all("a")]
    assert "<script>alert(2)</script>" in page.get_text()


def test_feedback_path_stays_inside_the_feedback_folder(tmp_path):
    for student in ("..", "../../etc", "a/b", ".hidden"):
        path = report.feedback_path(tmp_path, result(student=student))
        assert tmp_path / "feedback" in path.resolve().parents and path.parent.name not in (
            "..", ".",
        )


def test_redaction_compares_values_not_spellings():
    """A value the released notebook shows stays (however it is spelled); a hidden one goes."""
    public = public_text("toy_bpe")
    shown = public_values("toy_bpe")
    # a word the notebook shows
    visible_word = next(v for v in shown if v.startswith("['") and "</w>" in v)
    hidden = ["q", "z", "q", "z", "q", "</w>"]
    assert repr(hidden) not in shown
    redact = Redactor([[eval(visible_word), ("q", "z")], [hidden, ("z", "q")]], public, shown=shown)
    spelled_otherwise = visible_word.replace("'", '"').replace(", ", ",")
    message = f"merge({visible_word}) gave {spelled_otherwise}; merge({hidden!r}) gave x"
    assert (
        redact(message)
        == f"merge({visible_word}) gave {spelled_otherwise}; merge([hidden input]) gave x"
    )
    assert redact(str(hidden).replace("'", '"')) == "[hidden input]"
