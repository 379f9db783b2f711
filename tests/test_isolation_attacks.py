"""Issue 10's attacks (tests/attacks.py) graded in ONE batch with three honest submissions, and
what must hold afterwards: no unearned points, no course file read, nothing written outside the
work folder, no listener reached, no classmate's grade changed, no process left, every file graded.

The test owns everything the attacks aim at except the checkout's own files (which it backs up
and repairs if an attack got through): a world-writable canary folder, a copy of the course
outside the checkout, TCP/UDP/Unix listeners on loopback only, a sentinel process. Beside the
batch it runs two things that would keep a batch's worker busy for minutes if they went wrong:
one notebook whose stand-in makes the grader compute, graded alone, and a grading command killed
mid-batch. The attacks run only behind the Landlock boundary (the fence does not stop native
code); elsewhere the batch holds the honest files only and the results must say "fence".
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import uuid
from pathlib import Path

import nbformat
import pandas as pd
import psutil
import pytest

from attacks import (CLASSMATE, HONEST, NEIGHBOUR, Targets, attack_list, correct_notebook,
                     example_targets, holes_in, report_of, stand_in_hog_notebook, write_submissions)
from autograder.reports import gradebook, report
from bpe_labs import ROOT as REPO_ROOT
from autograder.batch.run import grade_folder
from autograder.grading.grade import Settings
from autograder.kernel.session import Limits
from autograder.labs import get_lab
from autograder.grading.result import GradeResult
from autograder.batch.resume import unsigned


def landlock_abi() -> int:
    """``landlock_create_ruleset(NULL, 0, VERSION)``, asked here rather than of the grader."""
    if not sys.platform.startswith("linux"):
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return max(int(libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))), 0)


def grader_isolation() -> str:
    """What the grader says its kernels get: ``landlock...``
    behind the boundary, ``fence...`` else."""
    try:
        from autograder.kernel.session import isolation_status
    except ImportError:
        return "fence (this grader has no boundary)"
    return isolation_status()


# Small limits, as in test_adversarial.py; cells up to 10 s: the memory attack's children take
# seconds to fill their memory on a busy machine, and the hijacker waits 2 s per cell.
SETTINGS = Settings(limits=Limits(cell_seconds=10, call_seconds=2, notebook_seconds=60,
                                  memory_bytes=int(1.5 * 1024**3)), part_seconds=10)
TOKEN = "rt" + uuid.uuid4().hex[:11]  # 13 characters: fits a process name (15)
# Text of the course that no output may carry: solution and hidden-test markers, the reference's
# first line.
COURSE_MARKERS = ("### BEGIN SOLUTION", "BEGIN HIDDEN TESTS",
                  "Character-level BPE with a separate end-of-word symbol")
REFERENCE = REPO_ROOT / "bpe_labs" / "reference" / "char_bpe.py"
LAUNCHER = REPO_ROOT / "autograder" / "kernel" / "sandbox_launcher.py"
VICTIMS = ("victim-py.txt", "victim-py-2.txt", "victim-libc.txt", "victim-libc-2.txt")
HONEST_FILES = (HONEST, CLASSMATE, NEIGHBOUR)


# -- what the test owns ---------------------------------------------------------------------------
class Listener:
    """TCP and UDP listeners on 127.0.0.1 and a Unix socket (pathname and abstract), in one
    thread that records whatever arrives and stops by itself after ``lifetime`` seconds."""

    def __init__(self, unix_path: Path, abstract_name: str, lifetime: float = 300.0):
        self.received: list[str] = []
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(16)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(str(unix_path))
        # any local user may connect: only the boundary stands in the way
        os.chmod(unix_path, 0o777)
        self.unix.listen(16)
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract.bind("\0" + abstract_name)
        self.abstract.listen(16)
        self._stop = threading.Event()
        self._deadline = time.monotonic() + lifetime
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def ports(self) -> tuple[int, int]:
        return self.tcp.getsockname()[1], self.udp.getsockname()[1]

    def _serve(self) -> None:
        import selectors

        with selectors.DefaultSelector() as selector:
            for sock in (self.tcp, self.udp, self.unix, self.abstract):
                selector.register(sock, selectors.EVENT_READ)
            while not self._stop.is_set() and time.monotonic() < self._deadline:
                for key, _ in selector.select(timeout=0.2):
                    sock = key.fileobj
                    if sock is self.udp:
                        data, source = sock.recvfrom(4096)
                        self.received.append(f"udp from {source}: {data[:80]!r}")
                        continue
                    connection, source = sock.accept()
                    with connection:
                        connection.settimeout(1)
                        try:
                            data = connection.recv(4096)
                        except OSError:
                            data = b""
                    kind = {self.tcp: "tcp", self.unix: "unix", self.abstract: "abstract"}[sock]
                    self.received.append(f"{kind} from {source!r}: {data[:80]!r}")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for sock in (self.tcp, self.udp, self.unix, self.abstract):
            sock.close()


def marked_processes(token: str) -> list[tuple[int, str]]:
    """(pid, cmdline) of every process whose name, command line or environment carries the token."""
    found = []
    needle = token.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            seen = b"".join((entry / name).read_bytes() for name in ("comm", "cmdline", "environ"))
        except OSError:
            continue
        if needle in seen:
            try:
                cmdline = (
                    (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                )
            except OSError:
                cmdline = "?"
            found.append((int(entry.name), cmdline[:120]))
    return found


WATCHDOG = '''
import os, signal, sys, time
grader, log = int(sys.argv[1]), sys.argv[2]
end = time.time() + 300


def descends(pid):
    for _ in range(20):
        if pid == grader:
            return True
        try:
            pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return False
        if pid <= 1:
            return False
    return False


while time.time() < end and os.path.exists(f"/proc/{grader}"):
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            state = open(f"/proc/{name}/stat").read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state in ("T", "t") and descends(int(name)):
            os.kill(int(name), signal.SIGCONT)
            with open(log, "a") as handle:
                handle.write(f"resumed {name}\\n")
    time.sleep(0.5)
'''


# One notebook graded alone in a process of its own, beside the batch (a hostile file may keep a
# batch's worker busy until the worker watchdog ends it, minutes later: too long for this module).
# In the main thread (local workers) or in another thread (as a Dask worker runs a task).
STAND_IN_PROBE = """
import json, sys, threading
from pathlib import Path
from autograder.grading.grade import Settings, grade_file
from autograder.kernel.session import Limits
limits = Limits(cell_seconds=10, call_seconds=2, notebook_seconds=float(sys.argv[3]), \
memory_bytes=int(1.5 * 1024**3))
grade = lambda: Path(sys.argv[2]).write_text(json.dumps(grade_file(Path(sys.argv[1]), \
"stand-in-hog",
                                                                   Settings(limits=limits, \
part_seconds=5)).to_json()))
if sys.argv[4] == "thread":
    thread = threading.Thread(target=grade)
    thread.start()
    thread.join()
else:
    grade()
"""
STAND_IN_WAYS = ("main", "thread")
STAND_IN_NOTEBOOK_SECONDS = 60  # enough to reach the tokenize part on a busy machine
# starting kernels on a busy machine; the reference must not run past it
STAND_IN_SLACK_SECONDS = 60


def end_process_tree(process: subprocess.Popen) -> None:
    """The probe and everything it started (its zygote and kernels run in sessions of their own):
    frozen first, so that it starts nothing new while its tree is being ended."""
    try:
        process.send_signal(signal.SIGSTOP)
        tree = psutil.Process(process.pid).children(recursive=True)
    except (psutil.Error, OSError):
        tree = []
    for child in tree:
        try:
            child.kill()
        except psutil.Error:
            pass
    stop_process(process)


def processes_of(folder: Path) -> list[tuple[int, str]]:
    """(pid, command line) of every process whose working
    folder or command line is under ``folder``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd.startswith(str(folder)) or str(folder) in cmdline:
            found.append((int(entry.name), cmdline[:120]))
    return found


# seconds after the kill: the files it was grading (a cell sleeps 15 s) are done by then
KILLED_GRADER_CHECK = 30


def kill_while_grading(
    process: subprocess.Popen, folder: Path, state: dict, timeout: float = 120
) -> None:
    """SIGKILL the grading command once both its workers have a kernel running (processes working in
    its bpe-grade-* folders), or after ``timeout``; ``state["killed_at"]`` says when."""
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        busy = {cwd for pid, cwd in working_folders(folder / "tmp") if "/bpe-grade-" in cwd}
        if len({cwd.split("/bpe-grade-")[1].split("/")[0] for cwd in busy}) >= 2:
            state["while_grading"] = True
            break
        time.sleep(0.2)
    process.kill()
    state["killed_at"] = time.monotonic()


def working_folders(folder: Path) -> list[tuple[int, str]]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cwd = os.readlink(entry / "cwd") if entry.name.isdigit() else ""
        except OSError:
            continue
        if cwd.startswith(str(folder)):
            found.append((int(entry.name), cwd))
    return found


def start_grader_to_kill(folder: Path) -> subprocess.Popen:
    """``python -m autograder grade`` on two honest notebooks (a cell sleeps 15 s), its temporary
    folders under ``folder``: the test kills it with SIGKILL mid-batch."""
    (folder / "tmp").mkdir(parents=True)
    os.chmod(folder, 0o755)
    os.chmod(folder / "tmp", 0o755)
    (folder / "submissions").mkdir()
    for name in ("slow-1", "slow-2"):
        nb = correct_notebook()
        for cell in nb.cells:
            if cell.get("id") == "learn_solution":
                cell.source = "import time\ntime.sleep(15)\n" + cell.source
        nbformat.write(nb, folder / "submissions" / f"{name}.ipynb")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TMPDIR": str(folder / "tmp")}
    return subprocess.Popen([sys.executable, "-m", "autograder", "grade",
                             str(folder / "submissions"), "--out",
                             str(folder / "out"), "--workers", "2", "--cell-timeout", "30"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def tree_state(folder: Path) -> dict[str, tuple[str, int]]:
    """relative path -> (sha256 or 'dir'/'link', mode) of everything under ``folder``."""
    state = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            kind = "link"
        elif path.is_dir():
            kind = "dir"
        elif stat.S_ISSOCK(info.st_mode):
            kind = "socket"
        else:
            kind = hashlib.sha256(path.read_bytes()).hexdigest()
        state[str(path.relative_to(folder))] = (kind, stat.S_IMODE(info.st_mode))
    return state


def canary_paths(targets: Targets) -> list[Path]:
    """Where the write attacks would have left a file outside the folders the test snapshots."""
    paths = []
    for how in ("py", "libc"):
        name = f"canary-{how}-{targets.token}"
        paths += [targets.repo / f"{name}.txt", targets.site_packages / f"zz_{name}.pth",
                  Path("/dev/shm") / name, Path("/var/tmp") / name]
    return paths


def repair_checkout(targets: Targets, originals: dict[Path, bytes]) -> list[str]:
    """Undo what an attack did to the checkout and the environment; what had to be undone."""
    undone = []
    for path, original in originals.items():
        text = path.read_bytes() if path.exists() else None
        if text is None or targets.marker_line.encode() in text:
            restored = original if text is None else text.replace(targets.marker_line.encode(), b"")
            path.write_bytes(restored)
            undone.append(f"restored {path}")
    for path in canary_paths(targets):
        if path.exists():
            path.unlink()
            undone.append(f"removed {path}")
    return undone


def start_process(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def stop_process(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)


# -- the batch ------------------------------------------------------------------------------------
class Batch:
    """Everything the assertions look at after the one grading run."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def result(self, stem: str) -> GradeResult:
        return self.results[f"{stem}.ipynb"]


@pytest.fixture(scope="module")
def batch():
    """The attacks (behind the boundary only) and the honest files, graded in one batch."""
    isolation = grader_isolation()
    world = Path(tempfile.mkdtemp(prefix="redteam-"))
    os.chmod(world, 0o755)  # any local user may look inside: only the boundary stands in the way
    submissions, out, canary = world / "submissions", world / "out", world / "canary"
    for folder in (submissions, out, canary):
        folder.mkdir()
        os.chmod(folder, 0o777)
        for name in VICTIMS:
            (folder / name).write_text(f"a file an attack must leave alone: {name}\n")
            os.chmod(folder / name, 0o666)
    last_term = world / "last-term"
    (last_term / "solutions").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "solutions" / "toy_bpe.ipynb",
                last_term / "solutions" / "toy_bpe.ipynb")

    originals = {path: path.read_bytes() for path in (REFERENCE, LAUNCHER)}
    listener = Listener(world / "listener.sock", f"red-team-{TOKEN}")
    sentinel = start_process(["sleep", "600"])
    watchdog_log = world / "watchdog.log"
    watchdog = start_process([sys.executable, "-c", WATCHDOG, str(os.getpid()), str(watchdog_log)])
    targets = Targets(repo=REPO_ROOT, submissions=submissions, out=out, canary=canary,
                      last_term=last_term, site_packages=Path(sysconfig.get_paths()["purelib"]),
                      tcp_port=listener.ports[0],
                      udp_port=listener.ports[1], unix_socket=world / "listener.sock",
                      abstract_socket=f"red-team-{TOKEN}", sentinel_pid=sentinel.pid,
                      grader_pid=os.getpid(),
                      token=TOKEN, reference_copy=originals[REFERENCE].decode("utf-8"))
    # Behind the fence (no Landlock) native code gets through (issue 10): no attack is run there.
    attacks = attack_list(targets) if isolation.startswith("landlock") else []
    written = write_submissions(submissions, targets, attacks)
    before = {"submissions": tree_state(submissions), "canary": tree_state(canary),
              "out": tree_state(out), "checkout_names": checkout_names()}
    probe = killed = None  # the side runs
    if attacks:
        nbformat.write(stand_in_hog_notebook(), world / "stand-in-hog.ipynb")
        probe_started = time.monotonic()
        probe = {way: subprocess.Popen([sys.executable, "-c", STAND_IN_PROBE,
                                        str(world / "stand-in-hog.ipynb"),
                                        str(world / f"stand-in-hog-{way}.json"),
                                        str(STAND_IN_NOTEBOOK_SECONDS), way],
                                       env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                                       stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL) for way in STAND_IN_WAYS}
        killed, killing = start_grader_to_kill(world / "killed"), {}
        killer = threading.Thread(target=kill_while_grading,
                                  args=(killed, world / "killed", killing), daemon=True)
        killer.start()
    try:
        results = grade_folder(submissions, out, SETTINGS, workers=2, progress=False)
        deadline = time.monotonic() + 8  # a process that dies with its kernel may take a moment
        while (survivors := marked_processes(TOKEN)) and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(0.5)  # a late datagram or connection still lands in the listener
        left_by_killed_grader = None
        if killed is not None:
            killer.join()
            time.sleep(max(0.0, killing["killed_at"] + KILLED_GRADER_CHECK - time.monotonic()))
            left_by_killed_grader = (
                processes_of(world / "killed")
                if killing.get("while_grading")
                else "not killed while grading"
            )
        stand_in = {}
        for way, process in (probe or {}).items():
            try:
                process.wait(
                    timeout=max(
                        0.0, probe_started
                        + STAND_IN_NOTEBOOK_SECONDS
                        + STAND_IN_SLACK_SECONDS
                        - time.monotonic(),
                    )
                )
                saved = world / f"stand-in-hog-{way}.json"
                stand_in[way] = (GradeResult.from_json(json.loads(saved.read_text()))
                                 if saved.exists()
                                 else GradeResult("stand-in-hog", str(saved), status="no result"))
            except subprocess.TimeoutExpired:
                stand_in[way] = GradeResult("stand-in-hog", "", status="still grading")
        yield Batch(isolation=isolation, targets=targets, attacks=attacks, written=written, out=out,
                    submissions=submissions, canary=canary, before=before, survivors=survivors,
                    listener=listener,
                    results={Path(r.file).name: r for r in results}, result_list=results,
                    sentinel_alive=sentinel.poll() is None, watchdog_log=watchdog_log,
                    stand_in=stand_in, left_by_killed_grader=left_by_killed_grader,
                    undone=repair_checkout(targets, originals))
    finally:
        for process in (probe or {}).values():
            end_process_tree(process)
        if killed is not None:
            stop_process(killed)
            # its workers, zygotes and kernels: started here
            for pid, _ in processes_of(world / "killed"):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        listener.close()
        for pid, _ in marked_processes(TOKEN):  # the attacks' own processes, started by this test
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        repair_checkout(targets, originals)
        stop_process(watchdog)
        stop_process(sentinel)
        shutil.rmtree(world, ignore_errors=True)


@pytest.fixture(scope="module")
def attacked(batch):
    """The batch, where the attacks were in it: behind the Landlock boundary."""
    if not batch.attacks:
        pytest.skip("the attacks run only behind the Landlock boundary; kernels here get: "
                    f"{batch.isolation}")
    return batch


ATTACK_KINDS = {attack.attack_id: attack.kind for attack in attack_list(example_targets())}
ATTACK_IDS = list(ATTACK_KINDS)


# -- which boundary each file got
# ---------------------------------------------------------------------
def notebooks(batch) -> list[GradeResult]:
    """The rows of the notebooks; the victims' files beside them in the folder have rows of their
    own (not_a_notebook: every entry of the folder gets a row)."""
    return [r for r in batch.result_list if Path(r.file).name not in VICTIMS]


def test_each_result_says_which_isolation_it_got(batch):
    expected = "landlock" if batch.isolation.startswith("landlock") else "fence"
    wrong = {Path(r.file).name: r.isolation for r in notebooks(batch)
             if not str(r.isolation).startswith(expected)}
    assert not wrong, f"expected isolation {expected!r}"
    table = pd.read_csv(batch.out / "grades.csv")
    assert all(str(value).startswith(expected)
               for value in table[table["status"] == "graded"]["isolation"])
    class_report = (batch.out / "class_report.md").read_text(encoding="utf-8")
    assert f"| {report.markdown_text(batch.isolation)} | {len(notebooks(batch))} |" in class_report


@pytest.mark.skipif(landlock_abi() < 6 or os.environ.get("AUTOGRADER_ISOLATION") == "fence",
                    reason="needs Landlock ABI 6 (signal scoping) and no forced fence")
def test_a_machine_with_landlock_gets_the_boundary(batch):
    assert batch.isolation.startswith("landlock"), batch.isolation


# -- every file graded, the honest ones in full ---------------------------------------------------
def test_every_file_has_one_row_and_was_graded(batch):
    table = pd.read_csv(batch.out / "grades.csv")
    assert sorted(Path(f).name for f in table["file"]) == sorted(
        [path.name for path in batch.written.values()] + list(VICTIMS)
    )
    not_graded = {Path(r.file).name: (r.status, r.message) for r in notebooks(batch)
                  if r.status != "graded"}
    assert not not_graded
    assert {batch.results[name].status for name in VICTIMS} == {"not_a_notebook"}


@pytest.mark.parametrize("stem", HONEST_FILES)
def test_honest_submission_in_full(batch, stem):
    result = batch.result(stem)
    full = {part.part_id: part.points for part in get_lab("toy_bpe").parts}
    assert {part_id: part.score for part_id, part in result.parts.items()} == full, result.parts
    assert result.score == sum(full.values())


def test_feedback_was_written_for_every_file(batch):
    for result in batch.result_list:
        assert report.feedback_path(batch.out, result).exists()


# -- 0 unearned points, no course file read
# ---------------------------------------------------------
@pytest.mark.parametrize("attack_id", ATTACK_IDS)
def test_attack_earns_nothing(attacked, attack_id):
    """Every attack is a blank submission: anything above 0 is stolen or forged."""
    result = attacked.result(attack_id)
    assert result.status == "graded", result.message
    assert {part_id: part.score for part_id, part in result.parts.items()} == \
        {part.part_id: 0 for part in get_lab("toy_bpe").parts}, report_of(result)


def stopped_by_a_limit(result: GradeResult) -> bool:
    """The attack's cell did not finish: the kernel was stopped (time limit) or killed."""
    return any(cell.cell == "initialize_solution" and cell.status in ("timeout", "died")
               for cell in result.cells)


# Holes reported and not closed yet, attack id -> why: marked xfail(strict=True), so that each
# one fails again (XPASS) the day it is closed and its entry must go.
KNOWN_HOLES: dict[str, str] = {}


def with_known_holes(attack_ids):
    return [pytest.param(a, marks=pytest.mark.xfail(strict=True, reason=KNOWN_HOLES[a]))
            if a in KNOWN_HOLES else a
            for a in attack_ids]


@pytest.mark.parametrize("attack_id",
                         with_known_holes([a for a, kind in ATTACK_KINDS.items()
                                           if kind != "limit"]))
def test_attack_found_no_way_in(attacked, attack_id):
    """The attack ran to its end (its report is there) and every way it tried was refused."""
    result = attacked.result(attack_id)
    report_text = report_of(result)
    assert report_text, f"no report: {result.cells}"
    assert not holes_in(report_text), f"ways in that worked: {holes_in(report_text)}"


def test_no_course_text_in_any_output(attacked):
    outputs = {"results": json.dumps([result.to_json() for result in attacked.result_list])}
    for path in [attacked.out / "grades.csv", attacked.out / "class_report.md",
                 *attacked.out.rglob("*.html"), *(attacked.out / "results").glob("*.json")]:
        outputs[str(path.relative_to(attacked.out))] = path.read_text(
            encoding="utf-8", errors="replace"
        )
    leaked = {(name, marker) for name, text in outputs.items() for marker in COURSE_MARKERS
              if marker in text}
    assert not leaked


# -- nothing written outside the work folder ----------------------------------------------------
# the test run's own, made whenever a tool first needs one
TOOL_FOLDERS = {".hypothesis", ".pytest_cache", "__pycache__"}


def checkout_names() -> list[str]:
    """The checkout's top-level names, but for the test tools' own folders (another test process may
    make one while the batch runs: hypothesis its database on its first example)."""
    return sorted(p.name for p in REPO_ROOT.iterdir()
                  if not (p.name in TOOL_FOLDERS and p.is_dir() and not p.is_symlink()))


def test_nothing_written_outside_the_work_folder(attacked):
    assert tree_state(attacked.submissions) == attacked.before["submissions"]
    assert tree_state(attacked.canary) == attacked.before["canary"]
    assert not attacked.undone, "an attack changed the checkout or the environment (now repaired)"
    assert checkout_names() == attacked.before["checkout_names"]


def test_output_folder_holds_only_what_the_grader_wrote(attacked):
    now = tree_state(attacked.out)
    for name, state in attacked.before["out"].items():
        assert now.get(name) == state, name
    strays = [name for name in now if attacked.targets.token in name or "canary" in name
              or "evil" in name]
    assert not strays


# -- no listener reached --------------------------------------------------------------------------
def test_no_listener_reached(attacked):
    assert attacked.listener.received == []


# -- no classmate's grade changed
# -------------------------------------------------------------------
def test_gradebook_and_saved_results_agree_with_the_batch(batch):
    graded = [r for r in batch.result_list if r.status == "graded"]
    assert gradebook.total_scores(batch.out / "gradebook.db") == {(r.student_id, r.lab): r.score
                                                                  for r in graded}
    table = pd.read_csv(batch.out / "grades.csv")
    table = table[table["status"] == "graded"]
    assert dict(zip(table["student_id"], table["score"])) == {r.student_id: r.score for r in graded}
    saved = [unsigned(json.loads(path.read_text()))
             for path in (batch.out / "results").glob("*.json")]
    assert {r.student_id: r.score for r in saved} == {r.student_id: r.score
                                                      for r in notebooks(batch)}


# -- no process left ------------------------------------------------------------------------------
def test_no_process_left_after_the_batch(attacked):
    """The daemons really ran inside their kernel (else their absence would prove nothing), and
    none of them, nor any child of the fork bomb, outlived the batch."""
    running = re.search(r"running=(\d+)", report_of(attacked.result("proc-daemons")))
    assert running and int(running.group(1)) >= 1, report_of(attacked.result("proc-daemons"))
    assert attacked.survivors == []


# -- the grader's own work for a notebook stays within the notebook's limits ---------------------
@pytest.mark.parametrize("way", ["main", "thread"])
def test_a_stand_in_cannot_keep_the_grader_busy(attacked, way):
    """A failing learn_bpe answered by the grader's reference on a student-chosen input that takes
    days: the notebook must still be graded within its time limit (plus kernel start-up), whether
    the grader runs in its process's main thread or, as in a Dask worker, in another thread."""
    stand_in = attacked.stand_in[way]
    assert stand_in.status == "graded", (
        f"{stand_in.status} {STAND_IN_NOTEBOOK_SECONDS + STAND_IN_SLACK_SECONDS} s after it "
        "started "
        f"(notebook limit {STAND_IN_NOTEBOOK_SECONDS} s)")
    assert stand_in.score == 0
    tokenize = stand_in.parts["tokenize"].message
    assert "learn_bpe" in tokenize, f"the tokenize part never called the stand-in: {tokenize}"


def test_nothing_outlives_a_grader_killed_mid_batch(attacked):
    """``kill -9`` of a grading command while both its workers run a kernel: its workers, zygotes
    and kernels end too (checked 30 s later, when the files they were grading are done)."""
    assert attacked.left_by_killed_grader == []


# -- signals and limits: the grader and the machine untouched -------------------------------------
def test_signals_reached_nothing_outside_the_kernel(attacked):
    assert attacked.sentinel_alive, "the sentinel process outside the kernels was killed"
    resumed = attacked.watchdog_log.read_text() if attacked.watchdog_log.exists() else ""
    assert resumed == "", f"a process of the grader was stopped and had to be resumed: {resumed}"
    for attack_id in ("sig-pidfd-kill", "sig-libc-kill", "sig-stop", "sig-kill-all"):
        report_text = report_of(attacked.result(attack_id))
        assert "sentinel=out-of-reach" in report_text and "fired=survived" in report_text, (
            attack_id, report_text,
        )


@pytest.mark.parametrize("attack_id", [a for a, kind in ATTACK_KINDS.items() if kind == "limit"])
def test_limits_stopped_the_attack(attacked, attack_id):
    """The fork bomb and the disk filler each met a limit (an error) or lost their kernel; the
    children of the memory hog did not hold more than the kernel's memory limit together."""
    result = attacked.result(attack_id)
    report_text = report_of(result)
    if not report_text:
        assert stopped_by_a_limit(result), result["cells"]
        return
    assert not holes_in(report_text), report_text
    if attack_id != "limit-memory":
        assert "stopped-by" in report_text, report_text
