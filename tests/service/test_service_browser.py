"""A real browser (Debian's chromium driven by Playwright, no browser download): a student signs in
with a token, uploads a notebook, watches it in the queue, reads the command line's feedback page
and the history of attempts; markup in a file name, in what the student's code printed and in a
roster name stays text (no script runs, no element is made)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
import pytest

from service_helpers import EXAMPLES

CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="Debian's chromium is not installed "
                                 "(apt-get install chromium fonts-noto-color-emoji; .ci/run does)")
PAYLOAD = "<img src=x onerror=document.title='pwned'>"


@pytest.fixture(scope="module")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


def test_a_student_signs_in_uploads_and_reads_the_feedback(service, browser, tmp_path):
    dialogs, errors = [], []
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(service.url)
    page.fill("input[name=token]", service.tokens["s008"])
    page.click("form[action='/signin'] button")
    assert page.url.endswith("/me")
    # the roster's name is text
    assert "Eve" in page.inner_text("header") and page.locator("header img").count() == 0
    cookies = {cookie["name"]: cookie for cookie in page.context.cookies()}
    assert cookies["autograder_session"]["httpOnly"] and cookies["autograder_session"]["secure"]

    notebook = nbformat.read(EXAMPLES / "toy-merge-overlaps.ipynb", as_version=4)
    for cell in notebook.cells:  # the notebook's own check shows what this returns
        if cell.get("id") == "initialize_solution":
            cell.source = f"def bpe_initialize(dataset):\n    return [[{PAYLOAD!r}]], []\n"
    page.set_input_files(
        "input[name=notebook]",
        files=[
            {
                "name": f"{PAYLOAD}.ipynb", "mimeType": "application/json",
                "buffer": nbformat.writes(notebook).encode(),
            }
        ],
    )
    page.click("form[action='/me/submissions'] button")
    assert "/me/submissions/" in page.url
    status = page.inner_text("#status")
    # the queue position, then the score
    assert "Waiting to be graded" in status or "Being graded" in status or "Score" in status
    page.wait_for_selector("#score", timeout=120_000)
    assert page.inner_text("#score") == "Score: 7 / 11"
    feedback = page.frame_locator("#feedback")
    feedback.locator("table").wait_for()
    text = feedback.locator("body").inner_text()
    assert "Feedback: Byte-Pair Encoding on toy corpora" in text and "merge" in text
    assert PAYLOAD in text  # shown as text, in the file name and in the check's output
    assert feedback.locator("img").count() == 0 and page.locator("img").count() == 0
    page.screenshot(path=str(tmp_path / "feedback.png"), full_page=True)

    page.goto(f"{service.url}/me")
    history = page.inner_text("#attempts")
    assert "toy_bpe" in history and "7 / 11" in history and "counts" in history
    assert page.title() != "pwned" and not dialogs and not errors
    # to look at them: SERVICE_SCREENSHOTS=/some/folder
    shots = os.environ.get("SERVICE_SCREENSHOTS")
    if shots:
        page.screenshot(path=str(tmp_path / "history.png"), full_page=True)
        for shot in tmp_path.glob("*.png"):
            shutil.copy(shot, Path(shots) / shot.name)
    page.close()


def test_the_dashboard_in_the_browser(service, browser):
    from service_helpers import INSTRUCTOR_PASSWORD

    page = browser.new_page()
    page.goto(f"{service.url}/dashboard")
    page.fill("input[name=username]", "prof")
    page.fill("input[name=password]", INSTRUCTOR_PASSWORD)
    page.click("form button")
    assert page.url.endswith("/dashboard")
    assert "Class progress" in page.inner_text("body") and page.locator("#queue").count() == 1
    page.goto(f"{service.url}/dashboard/students")
    assert (
        PAYLOAD.split(" ")[0] not in page.inner_html("#students").replace("&lt;", "<")
        or page.locator("#students img").count() == 0
    )
    assert page.locator("#students img").count() == 0 and page.title() != "pwned"
    page.close()
