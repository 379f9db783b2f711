"""Limits the grader keeps for itself: one wall-clock budget per file (restarts and replays
included, restarts capped) and a size cap on what a kernel may send back."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from adversarial import cell_of, correct_notebook, dump
from bpe_labs import ROOT as REPO_ROOT
from autograder.grading.grade import Settings, grade_file
from autograder.kernel.session import Limits

SLOW = "import time\ntime.sleep(3)\n"
EXIT = "\n\ndef {name}(*args):\n    import os\n    os._exit(1)\n"


def slow_and_dying_notebook() -> bytes:
    """Two answer cells that take 3 s each, and three functions that end their kernel whenever they
    are called: every such hidden-test call restarts the kernel and replays both slow cells."""
    nb = correct_notebook()
    for cell_id in ("initialize_solution", "pair_frequencies_solution"):
        cell = cell_of(nb, cell_id)
        cell.source = SLOW + cell.source
    for cell_id, name in (("merge_solution", "merge_pair_in_word"), ("learn_solution", "learn_bpe"),
                          ("tokenize_solution", "tokenize")):
        cell_of(nb, cell_id).source += EXIT.format(name=name)
    return dump(nb)


def test_the_notebook_timeout_caps_everything_done_for_a_file(tmp_path):
    path = tmp_path / "slow_toy_bpe.ipynb"
    path.write_bytes(slow_and_dying_notebook())
    limits = Limits(cell_seconds=5, call_seconds=2, notebook_seconds=12, max_restarts=2,
                    interrupt_grace_seconds=2)
    result = grade_file(path, "slow", Settings(limits=limits, part_seconds=20))
    assert result.status == "graded", result.message
    assert result.parts["merge"].score == 0
    # the grading kernel's, and at most one of the feedback kernel's
    assert result.restarts <= limits.max_restarts + 1
    # 12 s of budget, plus what ends the last request (an interrupt's grace) and a kernel's shutdown
    assert result.seconds < 12 + 8, result.seconds


REPLY = textwrap.dedent("""
    import sys
    from pathlib import Path
    from autograder.kernel.session import KernelDied, KernelSession, Limits, CallTimeout

    limits = Limits(cell_seconds=20, call_seconds=8, memory_bytes=3 * 1024**3, \
interrupt_grace_seconds=2)
    with KernelSession(Path(sys.argv[1]), limits) as session:
        session.run_cell("def big():\\n    return 'x' * 200_000_000\\ndef small():\\n    return \
'ok'")
        try:
            session.call("big")
            outcome = "returned"
        except (KernelDied, CallTimeout) as error:
            outcome = type(error).__name__
        again = session.call("small")
    # VmHWM, not ru_maxrss: ru_maxrss carries over the RSS of whatever process forked this one
    peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if \
line.startswith("VmHWM:"))
    print(outcome, again, peak_kb // 1024)
""")


def test_a_huge_reply_is_dropped_before_the_grader_decodes_it(tmp_path):
    """A function that returns 200 MB: the call fails as a dead kernel would, the session goes on,
    and the grader's own memory stays small (it grew by 1.3 GB before the cap)."""
    done = subprocess.run([sys.executable, "-c", REPLY, str(tmp_path / "work")],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=300,
                          env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    outcome, again, peak_mb = done.stdout.split()
    assert outcome in ("KernelDied", "CallTimeout") and again == "ok"
    assert int(peak_mb) < 400, f"the grader grew to {peak_mb} MB"


# From a red-team run: the kernel's own output thread sends stream messages, each signed with the
# kernel's key and unique (so jupyter_client takes every one), faster than the grader reads them.
FLOOD = textwrap.dedent('''
    _kernel = get_ipython().kernel
    _iopub, _key, _session_id, _sent = _kernel.iopub_thread, _kernel.session.auth, \
_kernel.session.session, [0]

    def _frames():
        _sent[0] += 1
        header = ('{"msg_id":"f%d","msg_type":"stream","username":"u","session":"%s",'
                  '"date":"2024-01-01T00:00:00Z","version":"5.3"}' % (_sent[0], \
_session_id)).encode()
        parts = (header, b"{}", b"{}", b'{"name":"stdout","text":""}')
        signature = _key.copy()
        for part in parts:
            signature.update(part)
        return [b"stream.stdout", b"<IDS|MSG>", signature.hexdigest().encode(), *parts]

    def _burst():
        try:
            for _ in range(300):
                _iopub.socket.send_multipart(_frames())
        finally:
            _iopub.io_loop.call_later(0.0005, _burst)

    _iopub.io_loop.add_callback(_burst)
''')


def test_a_kernel_flooding_its_output_channel_cannot_hold_the_grader_past_the_notebooks_time(
    tmp_path,
):
    """Reading a cell's output stops at its own deadline and at the notebook's: the flooding file
    is graded within its time (it held the grader for good before), its honest parts kept."""
    nb = correct_notebook()
    cell_of(nb, "tokenize_solution").source += "\n" + FLOOD
    path = tmp_path / "flood_toy_bpe.ipynb"
    path.write_bytes(dump(nb))
    limits = Limits(cell_seconds=5, call_seconds=3, notebook_seconds=20, interrupt_grace_seconds=2)
    result = grade_file(path, "flood", Settings(limits=limits, part_seconds=20))
    assert result.status == "graded", result.message
    assert result.parts["initialize"].score == result.parts["initialize"].max_score
    assert result.seconds < 20 + 10, result.seconds
