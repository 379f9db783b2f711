"""The Submit cell: built into the student notebooks, run by a real Jupyter kernel against the real
server; and what the grader does with it (never runs it, never reports what a student did to it)."""
from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path

import nbformat
import pytest
from jupyter_client import KernelManager

from autograder.course import current
from autograder.labs import get_lab
from autograder.grading.repair import repair
from autograder.release.submit_cells import HELPER_ID, INTRO_ID, SUBMIT_ID, with_submit_cells
from bpe_labs.examples import load_cases, make_submission
from service_helpers import rows


def built_notebook(monkeypatch, server: str, lab_id: str = "toy_bpe") -> nbformat.NotebookNode:
    """The student notebook of a course whose service is ``server``, every answer filled in as
    the lab's ``-correct`` example has it: the build's own step (``with_submit_cells``, which the
    release runs) puts the service's URL in."""
    monkeypatch.setenv(current().server_variable, server)
    case = next(case for case in load_cases() if case["lab"] == lab_id
                and case["id"].endswith("-correct"))
    return with_submit_cells(make_submission(case), lab_id, current())


class Kernel:
    """A real kernel (jupyter_client) in ``folder``, as Jupyter starts one for a notebook there."""

    def __init__(self, folder: Path, notebook_path: Path, answer: str):
        # what jupyter_server sets for a notebook
        env = {**os.environ, "JPY_SESSION_NAME": str(notebook_path)}
        env.pop("BPE_LABS_TOKEN", None)
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(cwd=str(folder), env=env)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        self.answer, self.prompts = answer, []

    def run(self, source: str, timeout: float = 240) -> str:
        printed = []

        def output(message):
            if message["msg_type"] == "stream":
                printed.append(message["content"]["text"])
            elif message["msg_type"] == "error":
                printed.append("\n".join(message["content"]["traceback"]))

        def stdin(message):
            self.prompts.append(message["content"]["prompt"])
            self.client.input(self.answer)

        reply = self.client.execute_interactive(source, timeout=timeout, allow_stdin=True,
                                                output_hook=output, stdin_hook=stdin)
        assert reply["content"]["status"] == "ok", "".join(printed)
        return "".join(printed)

    def close(self):
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def test_the_submit_cell_in_a_real_kernel_sends_the_saved_notebook_and_prints_the_result(
    service, tmp_path, monkeypatch
):
    nb = built_notebook(monkeypatch, service.url)
    path = tmp_path / "work" / "toy_bpe.ipynb"
    path.parent.mkdir()
    kernel = Kernel(path.parent, path, service.tokens["s011"])
    try:
        code = [cell for cell in nb.cells if cell.cell_type == "code"]
        for cell in code[:-1]:
            kernel.run(cell.source)
        nbformat.write(nb, path)  # saved after the last run
        said = kernel.run(code[-1].source)
        assert kernel.prompts == ["Your personal token for the grading service (from your "
                                  "instructor's message): "]
        assert "older than the last cell" not in said
        assert (
            "📤 Sending the saved file toy_bpe.ipynb" in said
            and "✅ Received as submission" in said
        )
        assert "Score: 11 / 11" in said
        for part in ("initialize", "pair_frequencies", "merge", "learn", "tokenize"):
            assert f"✅ {part}: " in said
        assert f"{service.url}/me/submissions/" in said
        assert service.tokens["s011"] not in said  # the prompt does not echo it
        # a cell run after the last save: the saved file is sent, and the cell says so
        kernel.run("print('one more cell')")
        time.sleep(1.1)
        kernel.run("x = 1")
        again = kernel.run(code[-1].source)
        assert "older than the last cell you ran" in again and "save the notebook (Ctrl+S" in again
        assert "Score: 11 / 11" in again and len(kernel.prompts) == 1  # the token is remembered
    finally:
        kernel.close()
    assert [(lab, status) for _, _, lab, status, *_ in rows(service, "s011")] == [
        ("toy_bpe", "graded")
    ] * 2


def test_in_colab_the_cell_sends_the_notebook_from_the_page(service, tmp_path, monkeypatch):
    """Colab cannot run here: a stand-in for ``google.colab._message`` answers ``get_ipynb`` as
    Colab's page does (sources as lists of lines), so that the Colab branch of the helper runs
    for real."""
    nb = built_notebook(monkeypatch, service.url, "ny_constitution")
    page = json.loads(nbformat.writes(nb))
    # as Colab's page sends it
    assert all(isinstance(cell["source"], list) for cell in page["cells"] if cell["source"])
    (tmp_path / "page.json").write_text(json.dumps({"ipynb": page}), encoding="utf-8")
    kernel = Kernel(tmp_path, tmp_path / "absent.ipynb", service.tokens["s012"])
    try:
        kernel.run(f"""
import json, sys, types
# STAND-IN for Colab's google.colab._message (not available outside Colab): the page's notebook
_message = types.ModuleType("google.colab._message")
_message.blocking_request = lambda kind, request="", \
timeout_sec=None: json.load(open({str(tmp_path / 'page.json')!r})) if kind == "get_ipynb" else None
sys.modules.update({{"google": types.ModuleType("google"), \
"google.colab": types.ModuleType("google.colab"), "google.colab._message": _message}})
sys.modules["google.colab"]._message = _message
""")
        helper = next(cell.source for cell in nb.cells if cell.get("id") == HELPER_ID)
        kernel.run(helper)
        said = kernel.run("submit()")
    finally:
        kernel.close()
    assert "📤 Sending this notebook as it is now in Colab" in said and "Score: " in said, said
    assert [(lab, status) for _, _, lab, status, *_ in rows(service, "s012")] == [
        ("ny_constitution", "graded")
    ]


def test_with_no_service_the_cell_says_how_to_hand_in(tmp_path, monkeypatch):
    # the notebooks as built here: no service
    nb = nbformat.read(get_lab("toy_bpe").student_path, as_version=4)
    kernel = Kernel(tmp_path, tmp_path / "toy_bpe.ipynb", "unused")
    try:
        unready = kernel.run(nb.cells[-1].source)
        assert "First run the 'Submit helper' cell" in unready
        kernel.run(next(cell.source for cell in nb.cells if cell.get("id") == HELPER_ID))
        said = kernel.run(nb.cells[-1].source)
    finally:
        kernel.close()
    assert (
        "hand in the notebook file itself" in said and "File → Download → Download .ipynb" in said
    )
    assert not kernel.prompts


def test_every_student_notebook_has_the_helper_after_its_setup_cells_and_ends_with_submit_cell():
    from autograder.labs import all_labs

    for lab in all_labs().values():
        nb = nbformat.read(lab.student_path, as_version=4)
        ids = [cell.get("id") for cell in nb.cells]
        helper = ids.index(HELPER_ID)
        assert ids[-2:] == [INTRO_ID, SUBMIT_ID] and ids.count(HELPER_ID) == 1
        assert all(cell.cell_type == "code" for cell in nb.cells[ids.index("setup") : helper]), (
            lab.lab_id
        )
        assert nb.cells[helper + 1].cell_type == "markdown"
        source = nb.cells[helper].source
        imports = [line for line in source.splitlines()
                   if line.strip().startswith(("import ", "from "))]
        modules = {line.split()[1].split(".")[0] for line in imports}
        # standard library
        assert modules <= {"json", "os", "time", "glob", "getpass", "uuid", "urllib", "google"}, (
            modules
        )
        assert (
            'server = ""' in source
            and f'lab = "{lab.lab_id}"' in source
            and 'token_variable = "BPE_LABS_TOKEN"' in source
        )


def test_adding_the_cells_again_changes_nothing():
    nb = nbformat.read(get_lab("gpt2_bpe").student_path, as_version=4)
    again = with_submit_cells(copy.deepcopy(nb), "gpt2_bpe", current())
    assert [cell.get("id") for cell in again.cells] == [cell.get("id") for cell in nb.cells]
    assert [cell.source for cell in again.cells] == [cell.source for cell in nb.cells]


@pytest.mark.parametrize("change", ["edited", "deleted", "moved", "ran", "untouched"])
def test_grading_never_runs_the_submit_cells_and_says_nothing_of_them(change):
    lab = get_lab("toy_bpe")
    nb = copy.deepcopy(lab.release_notebook())
    cells = {cell.get("id"): cell for cell in nb.cells}
    if change == "edited":
        cells[SUBMIT_ID].source = "submit()  # my token is abc"
        cells[HELPER_ID].source = cells[HELPER_ID].source.replace('server = ""',
                                                                  'server = "http://example.invalid"')
    elif change == "deleted":
        nb.cells = [cell for cell in nb.cells
                    if cell.get("id") not in (HELPER_ID, SUBMIT_ID, INTRO_ID)]
    elif change == "moved":
        nb.cells.remove(cells[SUBMIT_ID])
        nb.cells.insert(3, cells[SUBMIT_ID])
    elif change == "ran":
        cells[SUBMIT_ID].outputs = [nbformat.v4.new_output("stream", text="Score: 3 / 11\n")]
        cells[SUBMIT_ID].execution_count = 7
    repaired = repair(nb, lab)
    assert repaired.integrity == []
    sources = "\n".join(step.source for step in repaired.program)
    assert (
        "submit()" not in sources and "class _Submitter" not in sources and "urllib" not in sources
    )


class HeadlessKernel(Kernel):
    """A kernel run as ``jupyter nbconvert --execute``
    runs one: no notebook named to it, no stdin."""

    def __init__(self, folder: Path):
        self.manager = KernelManager(kernel_name="python3")
        env = {key: value for key, value in os.environ.items()
               if key not in ("JPY_SESSION_NAME", "BPE_LABS_TOKEN")}
        self.manager.start_kernel(cwd=str(folder), env=env)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        self.prompts = []

    def run(self, source: str, timeout: float = 240) -> str:
        printed = []

        def output(message):
            if message["msg_type"] == "stream":
                printed.append(message["content"]["text"])

        self.client.execute_interactive(source, timeout=timeout, allow_stdin=False,
                                        output_hook=output)
        return "".join(printed)


def test_the_submit_helper_run_headless_sends_the_notebook_that_ran_not_the_newest(
    tmp_path, monkeypatch
):
    """Issue 33 (8): run headless in a folder holding two copies of the lab, the helper sent the
    newest file, not the one whose cells ran. It now finds the one by the code the kernel ran;
    when copies are alike it cannot tell, says so, and sends nothing (here the service's address
    is one nobody answers: reaching for it would print "cannot be reached")."""
    nb = built_notebook(monkeypatch, "http://127.0.0.1:9")
    helper = next(cell.source for cell in nb.cells if cell.get("id") == HELPER_ID)
    ran, other = copy.deepcopy(nb), copy.deepcopy(nb)
    answer = next(cell for cell in other.cells if cell.cell_type == "code"
                  and cell.metadata.get("nbgrader", {}).get("solution"))
    answer.source += "\n# a different try, in the other copy\n"
    nbformat.write(ran, tmp_path / "toy_bpe.ipynb")
    time.sleep(0.05)
    # the newest file: not the one that ran
    nbformat.write(other, tmp_path / "toy_bpe (copy).ipynb")
    kernel = HeadlessKernel(tmp_path)
    try:
        for cell in [cell for cell in ran.cells if cell.cell_type == "code"][:-1]:
            kernel.run(cell.source)
        kernel.run(helper)
        chosen = kernel.run("print('chosen:', _Submitter()._saved()[1])")
        assert "chosen: toy_bpe.ipynb" in chosen, chosen
        nbformat.write(ran, tmp_path / "toy_bpe (copy).ipynb")  # now alike: the code cannot tell
        said = kernel.run("submit()")
    finally:
        kernel.close()
    assert "not sent: several notebooks of this lab" in said and "submit(file=" in said, said
    assert "Sending" not in said and "cannot be reached" not in said
