"""Grading leaves nothing behind in the temporary folder, however it ends.

From a red-team run: one honest ``grade`` of two notebooks left two ``bpe-zygote-*`` folders
in /tmp, and a term of grading runs leaves thousands. Now every ``bpe-*`` folder is named
after the process that owns it (``autograder/kernel/tempdirs.py``), removed when that process
is done, and swept by the batch when its owner was killed: the temporary folder holds the same
entries before and after a batch whose workers were killed, or that was ended with SIGTERM.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest

from adversarial import correct_notebook, dump
from autograder.kernel import tempdirs
from bpe_labs import ROOT as REPO_ROOT


def entries(folder: Path) -> set[str]:
    return {path.name for path in folder.iterdir() if path.name.startswith("bpe-")}


def dead_owner_folder(folder: Path) -> Path:
    """A folder as a grading process that was killed leaves it: its owner has exited."""
    sleeper = subprocess.Popen(["sleep", "60"])
    start = round(psutil.Process(sleeper.pid).create_time() * 100)
    sleeper.kill()
    sleeper.wait()
    path = folder / f"{tempdirs.folder_name('kernel', sleeper.pid, start)}left"
    (path / "root").mkdir(parents=True)
    (path / "launch_kernel.py").write_text("# a launcher copy\n")
    return path


@pytest.fixture
def temporary():
    """A temporary folder of the batch's own, at a short
    path (the kernels' socket paths lie beneath it)."""
    folder = Path(tempfile.mkdtemp(prefix="lo-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def start_batch(tmp_path: Path, temporary: Path, students: list[str]) -> dict:
    (tmp_path / "sub").mkdir()
    for student in students:
        (tmp_path / "sub" / f"{student}_toy_bpe.ipynb").write_bytes(dump(correct_notebook()))
    env = {key: value for key, value in os.environ.items() if key != "BPE_LABS_DATA"}
    env.update(PYTHONPATH=str(REPO_ROOT), TMPDIR=str(temporary))
    return env


def grading_workers(batch: psutil.Process) -> list[psutil.Process]:
    """The batch's grading processes that are grading now (they have a zygote with a kernel)."""
    found = []
    for child in batch.children():
        try:
            if any("--zygote" in grandchild.cmdline() and grandchild.children()
                   for grandchild in child.children()):
                found.append(child)
        except psutil.Error:
            continue
    return found


def test_a_batch_whose_workers_are_killed_leaves_the_temporary_folder_as_it_was(
    tmp_path, temporary
):
    env = start_batch(tmp_path, temporary, ["amy", "ben", "cal"])
    # a folder of a process still running (this one): never swept
    live = tempfile.mkdtemp(
        prefix=tempdirs.folder_name(
            "grade", os.getpid(), round(psutil.Process().create_time() * 100)
        ), dir=temporary,
    )
    dead = dead_owner_folder(temporary)
    before = entries(temporary)
    assert before == {Path(live).name, dead.name}
    batch = subprocess.Popen([sys.executable, "-m", "autograder", "grade", str(tmp_path / "sub"),
                              "--out", str(tmp_path / "out"),
                              "--workers", "2", "--quiet"], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = []

    def kill_one_busy_worker():
        deadline = time.monotonic() + 120
        while not killed and batch.poll() is None and time.monotonic() < deadline:
            for worker in grading_workers(psutil.Process(batch.pid)):
                worker.kill()
                killed.append(worker.pid)
                break
            time.sleep(0.1)

    killer = threading.Thread(target=kill_one_busy_worker)
    killer.start()
    out, err = batch.communicate(timeout=300)
    killer.join()
    assert batch.returncode == 0, err[-3000:]
    assert killed, "the test must have killed a worker while it graded"
    assert out.count(" graded ") == 3 and "3 files in" in out and ", 3 graded" in out, out
    after = entries(temporary)
    # the killed worker's folders, and the old dead one, swept
    assert after == {Path(live).name}, sorted(after)


def test_a_batch_ended_with_sigterm_leaves_the_temporary_folder_as_it_was(tmp_path, temporary):
    env = start_batch(tmp_path, temporary, ["amy", "ben"])
    batch = subprocess.Popen([sys.executable, "-m", "autograder", "grade", str(tmp_path / "sub"),
                              "--out", str(tmp_path / "out"),
                              "--workers", "2", "--quiet"], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while (
        not grading_workers(psutil.Process(batch.pid))
        and batch.poll() is None
        and time.monotonic() < deadline
    ):
        time.sleep(0.1)
    assert batch.poll() is None, f"the batch ended before a kernel ran: {batch.communicate()}"
    assert entries(temporary), "a grading batch has folders of its own while it runs"
    batch.send_signal(signal.SIGTERM)
    batch.communicate(timeout=120)
    assert batch.returncode != 0
    time.sleep(1)  # what the batch ended (its workers' kernels) exits
    assert entries(temporary) == set()
