"""A student's notebook running in a fresh, limited Jupyter kernel that the grader can call into.

One :class:`KernelSession` per submission: it runs cells with a per-cell time limit, survives
infinite loops (interrupt, then restart) and kernel deaths (restart and replay the cells that had
run), and lets the grader call the student's functions with plain values (see ``codec.py``).
"""
from __future__ import annotations

import ast
import inspect
import json
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager

from autograder import REPO_ROOT, codec

LAUNCHER = Path(__file__).with_name("sandbox_launcher.py")
KERNEL_NAME = "bpe-labs-sandbox"
CODEC_MODULE = "_bpe_labs_codec"
# Read once: every kernel of a run must speak the same protocol as this process, even if the
# file is edited while a batch is running.
CODEC_SOURCE = inspect.getsource(codec)


@dataclass(frozen=True)
class Limits:
    """Grading limits; every one can be set from the command line."""

    cell_seconds: float = 60.0
    call_seconds: float = 10.0
    notebook_seconds: float = 600.0
    memory_bytes: int = 4 * 1024**3
    interrupt_grace_seconds: float = 5.0


@dataclass
class CellRun:
    status: str  # ok | error | timeout | died | skipped
    error: str = ""
    stdout: str = ""
    seconds: float = 0.0


class KernelDied(Exception):
    """The kernel died (memory cap, os._exit, a crash) or stopped answering."""


class CallTimeout(Exception):
    """A call into the student's code did not finish in time."""


class StudentRaised(Exception):
    """The student's function raised an exception that is not a built-in class."""


@dataclass
class KernelSession:
    workdir: Path
    limits: Limits = field(default_factory=Limits)
    data_dir: Path | None = None
    denied: tuple[Path, ...] = ()

    def __post_init__(self):
        self._replay: list[tuple[str, float]] = []
        self.sent_arguments: list = []  # every argument a hidden test passed, to keep them out of feedback
        self._started_at = time.monotonic()
        self.restarts = 0

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "KernelSession":
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._private = Path(tempfile.mkdtemp(prefix="bpe-kernel-"))
        spec_dir = self._private / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        launcher = self._private / "launch_kernel.py"
        shutil.copy(LAUNCHER, launcher)
        (spec_dir / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, str(launcher), "-f", "{connection_file}", "--HistoryManager.enabled=False"],
            "display_name": "BPE Labs grading sandbox", "language": "python"}))
        self._specs = KernelSpecManager(kernel_dirs=[str(self._private / "kernels")])
        self._link_course_data()
        self._start()
        return self

    def __exit__(self, *exc) -> None:
        # Shutting a kernel down is mostly waiting for it to exit: let a thread do it while the
        # worker goes on to the next notebook. Not a daemon, so that no kernel outlives the
        # process (interpreter exit, and multiprocessing's workers, join such threads).
        threading.Thread(target=self._shut_down, args=(self.km, self.kc, self._private), daemon=False).start()

    @staticmethod
    def _shut_down(km, kc, private: Path) -> None:
        try:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
        except Exception:
            pass
        shutil.rmtree(private, ignore_errors=True)

    def _environment(self) -> dict[str, str]:
        home = str(self.workdir)
        env = {key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL", "TZ") if key in os.environ}
        env.update(HOME=home, MPLBACKEND="Agg", MPLCONFIGDIR=str(self.workdir / ".matplotlib"),
                   IPYTHONDIR=str(self.workdir / ".ipython"), PYTHONHASHSEED="0", OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", JUPYTER_RUNTIME_DIR=str(self._private),
                   PYTHONDONTWRITEBYTECODE="1")
        if self.data_dir:
            env["BPE_LABS_DATA"] = str(self.data_dir)
        allowed = [self.workdir, self._private, Path(sys.prefix), Path(sys.base_prefix), REPO_ROOT / "data"]
        if self.data_dir:
            allowed.append(self.data_dir)
        env["BPE_LABS_SANDBOX"] = json.dumps({
            "memory_bytes": self.limits.memory_bytes,
            "denied": [str(p) for p in (REPO_ROOT, *self.denied)],
            "allowed": [str(p) for p in allowed]})
        return env

    def _link_course_data(self) -> None:
        """``./data`` in the kernel's folder is the course's data folder (the lab documents), as
        when a student runs a notebook from a clone of the repository."""
        link = self.workdir / "data"
        if not link.exists():
            link.symlink_to(REPO_ROOT / "data", target_is_directory=True)

    def _start(self) -> None:
        # A new manager each time: shutting a kernel down terminates its manager's ZMQ context.
        self.km = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=self._specs,
                                connection_file=str(self._private / f"kernel-{self.restarts}.json"))
        # The kernel process's own output (ipykernel's start-up warnings) goes to a log beside it;
        # what the notebook prints travels on the output channel as usual.
        with open(self._private / "kernel.log", "ab") as log:
            self.km.start_kernel(cwd=str(self.workdir), env=self._environment(), stdout=log, stderr=log)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self._install_codec()

    def _install_codec(self) -> None:
        code = (f"import sys as _s, types as _t\n_m = _t.ModuleType({CODEC_MODULE!r})\n"
                f"exec({CODEC_SOURCE!r}, _m.__dict__)\n_s.modules[{CODEC_MODULE!r}] = _m\ndel _s, _t, _m\n")
        self._execute(code, timeout=30, silent=True)

    def restart(self) -> None:
        """Fresh kernel, then replay every cell that had run, so the notebook's state comes back."""
        self.restarts += 1
        try:
            self.kc.stop_channels()
            self.km.shutdown_kernel(now=True)
        except Exception:
            pass
        self._start()
        replayed = []
        for code, timeout in self._replay:
            try:
                self._execute(code, timeout=timeout)
            except CallTimeout:
                continue  # it ran in time before; without it the parts that need it fail on their own
            except KernelDied:
                break  # the notebook now kills every kernel: the rest is graded without state
            replayed.append((code, timeout))
        self._replay = replayed

    # -- running code ------------------------------------------------------------------------
    @property
    def seconds_left(self) -> float:
        return self.limits.notebook_seconds - (time.monotonic() - self._started_at)

    def _execute(self, code: str, timeout: float, silent: bool = False, expressions: dict | None = None) -> dict:
        """Run ``code``; the execute reply's content. Raises CallTimeout (kernel interrupted and
        answering again) or KernelDied (dead, or stuck after the interrupt)."""
        # stop_on_error=False: otherwise a cell that raises makes the kernel abort the requests right
        # after it, and a later definition cell would silently never run.
        msg_id = self._last_msg_id = self.kc.execute(code, silent=silent, store_history=False, allow_stdin=False, stop_on_error=False,
                                                     user_expressions=expressions or {})
        deadline = time.monotonic() + timeout
        interrupted = False
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if interrupted or not self.km.is_alive():
                    raise KernelDied("the kernel stopped answering")
                self.km.interrupt_kernel()
                interrupted = True
                deadline = time.monotonic() + self.limits.interrupt_grace_seconds
                continue
            try:
                reply = self.kc.get_shell_msg(timeout=min(remaining, 1.0))
            except queue.Empty:
                if not self.km.is_alive():
                    raise KernelDied("the kernel died")
                continue
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        if interrupted:
            raise CallTimeout(f"did not finish within {timeout:g} s")
        return reply["content"]

    def _drain_output(self, until_idle_of: str | None = None, limit: int = 4000) -> str:
        """Read the output channel: what was printed, up to ``limit`` characters (long outputs cost
        nothing). With ``until_idle_of``, wait (briefly) for that request's outputs to end."""
        chunks: list[str] = []
        size = 0
        deadline = time.monotonic() + 2.0
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=0.2 if until_idle_of else 0)
            except queue.Empty:
                if not until_idle_of or time.monotonic() > deadline:
                    return "".join(chunks)
                continue
            own = not until_idle_of or msg["parent_header"].get("msg_id") == until_idle_of
            if msg["msg_type"] == "stream" and own and size < limit:
                text = msg["content"].get("text", "")
                chunks.append(text[: limit - size])
                size += len(text)
            if (until_idle_of and msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle"
                    and msg["parent_header"].get("msg_id") == until_idle_of):
                return "".join(chunks)

    def run_cell(self, code: str, replay: bool = True, capture: bool = False) -> CellRun:
        """Run one cell within the cell and notebook limits; remembered for replay if it ran."""
        timeout = min(self.limits.cell_seconds, self.seconds_left)
        if timeout <= 0:
            return CellRun("skipped", "the notebook's time limit was used up")
        started = time.monotonic()
        self._drain_output()
        try:
            content = self._execute(code, timeout=timeout)
        except CallTimeout:
            return CellRun("timeout", f"stopped after {timeout:g} s (time limit)", seconds=time.monotonic() - started)
        except KernelDied as died:
            self.restart()
            return CellRun("died", f"{died} while running this cell", seconds=time.monotonic() - started)
        stdout = self._drain_output(until_idle_of=self._last_msg_id) if capture else (self._drain_output() and "")
        seconds = time.monotonic() - started
        if content.get("status") == "ok":
            if replay:
                self._replay.append((code, timeout))
            return CellRun("ok", stdout=stdout, seconds=seconds)
        return CellRun("error", f"{content.get('ename', 'Error')}: {content.get('evalue', '')}"[:500], stdout, seconds)

    # -- calling into the notebook -------------------------------------------------------------
    def _evaluate(self, expression: str, timeout: float) -> str:
        try:
            # silent: no execute_input to publish, no post-run events; 10% less per call, measured.
            content = self._execute("", timeout=timeout, silent=True, expressions={"value": expression})
        except KernelDied:
            self.restart()
            raise
        self._drain_output()
        result = content.get("user_expressions", {}).get("value", {})
        if result.get("status") != "ok":
            if result.get("ename") == "KeyboardInterrupt":
                raise CallTimeout(f"did not finish within {timeout:g} s")
            raise KernelDied(f"the grader's call failed in the kernel: {result.get('ename')}: {result.get('evalue')}")
        return ast.literal_eval(result["data"]["text/plain"])

    def _codec(self, function: str, *args) -> str:
        return f"__import__('sys').modules[{CODEC_MODULE!r}].{function}(get_ipython().user_ns, {', '.join(map(repr, args))})"

    def describe(self, name: str) -> str:
        return self._evaluate(self._codec("describe", name), timeout=self.limits.call_seconds)

    def fetch(self, name: str):
        return codec.decode(json.loads(self._evaluate(self._codec("fetch", name), timeout=self.limits.call_seconds)))

    def call(self, name: str, *args, **kwargs):
        """``name(*args, **kwargs)`` in the student's kernel; the result as plain values of exact types.

        A built-in exception the function raised is raised again here, with the same class and
        message; any other as :class:`StudentRaised`.
        """
        self.sent_arguments.append([list(args), kwargs])
        payload = json.dumps(codec.encode([list(args), kwargs]))
        outcome = json.loads(self._evaluate(self._codec("call_in_namespace", name, payload),
                                            timeout=self.limits.call_seconds))
        return self._result(name, outcome)

    def call_each(self, name: str, argument_lists: list) -> list:
        """``[name(*args) for args in argument_lists]`` in one round trip; the whole batch has one
        call's time limit. Raises like the loop would, at the first call that raised."""
        self.sent_arguments.extend(argument_lists)
        payload = json.dumps(codec.encode([list(args) for args in argument_lists]))
        outcomes = json.loads(self._evaluate(self._codec("call_each_in_namespace", name, payload),
                                             timeout=self.limits.call_seconds))
        return [self._result(name, outcome) for outcome in outcomes]

    @staticmethod
    def _result(name: str, outcome: list):
        if outcome[0] == "returned":
            return codec.decode(outcome[1])
        _, class_name, builtin, message = outcome
        import builtins

        kind = getattr(builtins, class_name) if builtin else None
        error = kind(message) if isinstance(kind, type) and issubclass(kind, Exception) else StudentRaised(f"{class_name}: {message}")
        error.bpe_labs_student = f"{name} raised {class_name}: {message}"
        raise error
