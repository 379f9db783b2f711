"""nbgrader's own tools on the kit's gradebook (autograder/reports/formgrader.py,
autograder/reports/adjustments.py): formgrader served by a real Jupyter server on loopback (its
HTTP API, and its pages in Debian's Chromium when installed), and `nbgrader export` run in OUT."""
from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from adversarial import correct_notebook, dump
from autograder.reports import adjustments, formgrader
from autograder.batch.run import grade_folder
from autograder.cli import main
from autograder.grading.result import GRADED, GradeResult, PartScore
from bpe_labs import ROOT

EXAMPLES = ROOT / "examples" / "submissions"
PWNED = "window.PWNED_BY_STUDENT"  # what a hostile notebook's HTML tries to run in the TA's browser


def hostile_notebook() -> bytes:
    """A correct toy_bpe notebook whose saved outputs and markdown carry HTML and JavaScript."""
    nb = correct_notebook("toy_bpe")
    answer = next(cell for cell in nb.cells
                  if cell.get("metadata", {}).get("nbgrader", {}).get("solution"))
    answer.outputs = [nbformat.v4.new_output("display_data", data={
        "text/html": f"<script>{PWNED} = 1</script><b>injected</b>",
        "application/javascript": f"{PWNED} = 2"})]
    nb.cells.insert(3, nbformat.v4.new_markdown_cell(f"<img src=x onerror=\"{PWNED} = 3\">"))
    nb.cells.insert(4, nbformat.v4.new_code_cell(f"print('<script>{PWNED} = 4</script>')"))
    return dump(nb)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Three toy_bpe notebooks graded for real: ann's
    correct, bo's with wrong merges, eve's hostile."""
    folder = tmp_path_factory.mktemp("submitted")
    shutil.copy(EXAMPLES / "toy-correct.ipynb", folder / "ann_toy_bpe.ipynb")
    shutil.copy(EXAMPLES / "toy-merge-overlaps.ipynb", folder / "bo_toy_bpe.ipynb")
    (folder / "eve_toy_bpe.ipynb").write_bytes(hostile_notebook())
    out = tmp_path_factory.mktemp("out")
    results = {r.student_id: r for r in grade_folder(folder, out, workers=2, progress=False)}
    assert {student: r.status for student, r in results.items()} == {"ann": GRADED, "bo": GRADED,
                                                                     "eve": GRADED}
    return folder, out, results


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server(course, tmp_path_factory):
    """A Jupyter server in OUT (as a TA starts one there)
    with nbgrader's formgrader, on loopback."""
    _, out, _ = course
    home = tmp_path_factory.mktemp("jupyter")
    (home / "config").mkdir()
    # JupyterLab and the other front ends are not needed for formgrader's pages: not loading them
    # halves the start-up. nbgrader's own extensions stay enabled as installed.
    (home / "config" / "jupyter_server_config.json").write_text(
        json.dumps(
            {
                "ServerApp": {
                    "jpserver_extensions": {
                        "jupyterlab": False, "notebook": False, "jupyter_lsp": False,
                        "jupyter_server_terminals": False,
                    }
                }
            }
        )
    )
    token, port = "formgrader-test-token", _free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), JUPYTER_DATA_DIR=str(home / "data"))
    log = open(home / "server.log", "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root", "--ip=127.0.0.1",
         f"--port={port}",
         "--port-retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={out}"],
        cwd=out, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"the Jupyter server ended: {(home / 'server.log').read_text()[-3000:]}"
                )
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    pytest.fail("the Jupyter server did not answer: "
                                f"{(home / 'server.log').read_text()[-3000:]}")
                time.sleep(0.3)
        yield base, token
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def call(server, path: str, method: str = "GET", body: dict | None = None):
    base, token = server
    request = urllib.request.Request(f"{base}{path}", method=method,
                                     headers={"Authorization": f"token {token}"},
                                     data=json.dumps(body).encode() if body is not None else None)
    with urllib.request.urlopen(request, timeout=60) as response:
        text = response.read().decode("utf-8")
    return json.loads(text) if path.startswith("/formgrader/api/") else text


def submissions(server) -> dict[str, dict]:
    return {s["student"]: s
            for s in call(server, "/formgrader/api/submitted_notebooks/toy_bpe/toy_bpe")}


def test_formgrader_lists_the_assignments_with_their_submissions(server, course):
    _, _, results = course
    assignments = {a["name"]: a for a in call(server, "/formgrader/api/assignments")}
    assert list(assignments) == ["toy_bpe"]
    assert assignments["toy_bpe"]["num_submissions"] == 3
    assert assignments["toy_bpe"]["max_score"] == 11
    assert {s: sub["score"] for s, sub in submissions(server).items()} == {
        s: r.score for s, r in results.items()
    }


def test_every_graded_submission_opens_as_its_autograded_notebook_with_per_part_scores(
    server, course
):
    _, _, results = course
    for student, submission in submissions(server).items():
        page = call(server, f"/formgrader/submissions/{submission['id']}/")
        grades = {g["name"]: g
                  for g in call(server, f"/formgrader/api/grades?submission_id={submission['id']}")}
        parts = results[student].parts
        assert {name: g["auto_score"] for name, g in grades.items()} == {
            p: part.score for p, part in parts.items()
        }
        for part_id, part in parts.items():
            # the box formgrader fills with the score
            assert f'class="score tabbable" id="{part_id}"' in page
            # the autograder's line under the test
            assert f"{part_id}: {part.score:g} / {part.max_score:g}" in page
        assert "Autograder" in page and f"{results[student].score:g} / 11" in page
    bo = call(server, f"/formgrader/submissions/{submissions(server)['bo']['id']}/")
    assert "merge: 0 / 2" in bo and results["bo"].parts["merge"].message.split(":")[0] in bo


def test_nothing_a_student_displayed_reaches_the_tas_page(server, course):
    _, out, _ = course
    page = call(server, f"/formgrader/submissions/{submissions(server)['eve']['id']}/")
    assert (
        "<b>injected</b>" not in page and f"<script>{PWNED}" not in page and "onerror=" not in page
    )
    notebook = nbformat.read(out / "autograded" / "eve" / "toy_bpe" / "toy_bpe.ipynb", as_version=4)
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert outputs and all(o.output_type == "stream" and "(autograder)" in o.text for o in outputs)
    assert not any(PWNED in cell.source for cell in notebook.cells if cell.cell_type == "markdown")


def test_nbgrader_export_run_in_out_leaves_the_kits_grades_csv_alone(course):
    _, out, results = course
    before = (out / "grades.csv").read_bytes()
    nbgrader = Path(sys.executable).parent / "nbgrader"
    run = subprocess.run([str(nbgrader), "export"], cwd=out, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (out / "grades.csv").read_bytes() == before
    with open(out / formgrader.NBGRADER_EXPORT_NAME, newline="") as handle:
        exported = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    assert exported == {student: r.score for student, r in results.items()}


def test_a_score_typed_in_formgrader_in_chromium_is_saved_to_the_gradebook(server, course):
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright's Python package is not installed")
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium; .ci/run "
                    "installs it)")
    _, out, _ = course
    base, token = server
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            dialogs = []
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            # nothing but the server on loopback: MathJax and the Colab badge's image are not
            # fetched
            page.route("**/*", lambda route: route.continue_()
                       if route.request.url.startswith(base) else route.abort())
            page.goto(f"{base}/login?next=/formgrader/submissions/{submissions(server)['eve']['id']}/")
            page.fill("#password_input", token)  # as a TA signs in with the server's token
            page.click("#login_submit")
            for student in ("eve", "ann"):
                page.goto(f"{base}/formgrader/submissions/{submissions(server)[student]['id']}/")
                # formgrader's script shows each part's autograder score in its box (as the
                # placeholder)
                page.wait_for_function("() => document.getElementById('tokenize').placeholder "
                                       "!== ''", timeout=60_000)
                assert page.evaluate(f"() => typeof {PWNED}") == "undefined" and dialogs == []
            shown = {part: page.get_attribute(f"#{part}", "placeholder")
                     for part in ("initialize", "merge", "learn", "tokenize")}
            assert shown == {"initialize": "2", "merge": "2", "learn": "3", "tokenize": "2"}
            page.fill("#tokenize", "1.5")
            page.press("#tokenize", "Tab")  # formgrader saves a score when its box changes
            deadline = time.monotonic() + 30
            while not adjustments.read(out / "gradebook.db").get(("ann", "toy_bpe")):
                assert time.monotonic() < deadline, "formgrader did not save the score"
                time.sleep(0.2)
        finally:
            browser.close()
    (change,) = adjustments.read(out / "gradebook.db")[("ann", "toy_bpe")]
    assert (change.cell, change.auto_score, change.score) == ("tokenize", 2, 1.5)


def test_a_change_made_in_formgrader_reaches_grades_csv_the_reports_and_the_lms_export(
    server, course, tmp_path
):
    folder, out, results = course
    bo = submissions(server)["bo"]["id"]
    grades = {g["name"]: g for g in call(server, f"/formgrader/api/grades?submission_id={bo}")}
    comments = {c["name"]: c for c in call(server, f"/formgrader/api/comments?submission_id={bo}")}
    call(server, f"/formgrader/api/grade/{grades['merge']['id']}", "PUT", {"manual_score": 1.5})
    call(server, f"/formgrader/api/comment/{comments['merge_solution']['id']}", "PUT",
         {"manual_comment": "Nearly: <overlapping> pairs need care."})
    expected = results["bo"].score + 1.5

    def bo_row():
        with open(out / "grades.csv", newline="") as handle:
            return next(row for row in csv.DictReader(handle) if row["student_id"] == "bo")

    # on the next grade: every file is taken from results/ (nothing graded again), the reports are
    # rewritten
    again = {r.student_id: r for r in grade_folder(folder, out, workers=2, progress=False)}
    assert again["bo"].score == results["bo"].score  # the autograder's own result does not change
    row = bo_row()
    assert (float(row["merge"]), float(row["score"])) == (1.5, expected)
    assert row["adjusted"] == "merge 0→1.5; comment on merge_solution"
    report = (out / "class_report.md").read_text()
    assert "Changed by hand in formgrader" in report and "merge 0→1\\.5" in report
    feedback = (out / "feedback" / "bo" / "toy_bpe.html").read_text()
    assert (
        "From your grader" in feedback
        and "Nearly: &lt;overlapping&gt; pairs need care." in feedback
    )
    assert f"<b>{expected:g} / 11</b>" in feedback

    # and on the export command, which the LMS files follow
    (out / "grades.csv").unlink()
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,name,canvas_id\nann,Ann,1\nbo,Bo,2\neve,Eve,3\n")
    assert main(["export", str(out), "--format", "canvas", "--roster", str(roster), "--out",
                 str(tmp_path / "c.csv"), "--assignment", "toy_bpe=55"]) == 0
    assert float(bo_row()["score"]) == expected
    with open(tmp_path / "c.csv", newline="") as handle:
        canvas_rows = {row["ID"]: row for row in csv.DictReader(handle)}
    assert float(canvas_rows["2"]["Byte-Pair Encoding on toy corpora (55)"]) == expected


def _result(student: str, file: str) -> GradeResult:
    return GradeResult(student, file, status=GRADED, lab="toy_bpe", sha256="0" * 64, score=0,
                       max_score=11, parts={"merge": PartScore("merge", 0, 2)})


def test_a_student_id_that_is_no_folder_name_and_a_changed_file_are_skipped_and_said(tmp_path):
    (tmp_path / "x_toy_bpe.ipynb").write_bytes(dump(correct_notebook("toy_bpe")))
    layout = formgrader.write_course(tmp_path / "out",
                                     [_result("..", str(tmp_path / "x_toy_bpe.ipynb")),
                                                        _result("x",
                                                                str(tmp_path / "x_toy_bpe.ipynb"))])
    assert layout.written == 0 and len(layout.skipped) == 2
    assert (
        "cannot be a folder name" in layout.skipped[0]
        and "changed since it was graded" in layout.skipped[1]
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "x_toy_bpe.ipynb"]
    assert not (tmp_path / "out" / "autograded").exists()


def test_a_config_or_notebook_the_autograder_did_not_write_is_left_alone(tmp_path):
    """OUT may be a course folder that nbgrader's own tools wrote into."""
    (tmp_path / formgrader.CONFIG_NAME).write_text("c = get_config()\n# the TA's own\n")
    theirs = tmp_path / "autograded" / "x" / "toy_bpe" / "toy_bpe.ipynb"
    theirs.parent.mkdir(parents=True)
    theirs.write_bytes(dump(correct_notebook("toy_bpe")))
    before = theirs.read_bytes()
    layout = formgrader.write_course(tmp_path, [_result("x", str(tmp_path / "x.ipynb"))])
    assert (tmp_path / formgrader.CONFIG_NAME).read_text().endswith("# the TA's own\n")
    assert theirs.read_bytes() == before and layout.written == 0
    assert len(layout.skipped) == 2 and all("left as it is" in reason for reason in layout.skipped)


def test_a_submission_whose_notebook_cannot_be_made_costs_that_notebook_only(tmp_path, monkeypatch):
    import hashlib

    content = dump(correct_notebook("toy_bpe"))
    results = []
    for student in ("a", "b"):
        (tmp_path / f"{student}_toy_bpe.ipynb").write_bytes(content)
        results.append(replace(_result(student, str(tmp_path / f"{student}_toy_bpe.ipynb")),
                               sha256=hashlib.sha256(content).hexdigest()))
    made = formgrader.autograded_notebook

    # as a notebook nested too deeply for the repair would
    def deep(result, notebook, metadata=None):
        if result.student_id == "a":
            raise RecursionError("maximum recursion depth exceeded")
        return made(result, notebook, metadata)

    monkeypatch.setattr(formgrader, "autograded_notebook", deep)
    layout = formgrader.write_course(tmp_path / "out", results)
    assert (
        layout.written == 1 and len(layout.skipped) == 1 and "RecursionError" in layout.skipped[0]
    )
    notebook = nbformat.read(tmp_path / "out" / "autograded" / "b" / "toy_bpe" / "toy_bpe.ipynb",
                             as_version=4)
    nbformat.validate(notebook)
    assert "merge: 0 / 2 ❌ (autograder)" in "".join(o.text for c in notebook.cells
                                                    if c.cell_type == "code"
                                                   for o in c.outputs)
