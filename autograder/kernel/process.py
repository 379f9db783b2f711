"""The life of a student's kernel: started in named steps, asked to run code within its limits,
interrupted when slow, restarted (and the cells that had run replayed) when it dies, and shut down.

One :class:`Kernel` per session; each start is a new kernel process (jupyter_client's manager and
client), and how each one ended is kept as an :class:`Ending`. The notebook's clock (:class:`Clock`)
caps every wait, restarts and replays included.
"""

from __future__ import annotations

import contextlib
import enum
import inspect
import queue
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import psutil
import zmq
from jupyter_client import KernelManager

from autograder.kernel import codec, isolation
from autograder.kernel.errors import TIME_USED_UP, CallTimeout, CellStatus, KernelDied
from autograder.kernel.limits import Limits
from autograder.kernel.workspace import KERNEL_NAME, Workspace
from autograder.kernel.zygote import ZygoteProvisioner, zygote_enabled

CODEC_MODULE = "_autograder_codec"
# Read once: every kernel of a run must speak the same protocol as this process, even if the
# file is edited while a batch is running.
CODEC_SOURCE = inspect.getsource(codec)
KERNEL_START_SECONDS = 60  # the longest wait for a kernel's first answer, time left permitting

# The starts of the files (``Clock.started``) whose hidden inputs have reached a kernel, each with
# the end of the file's time, when it is dropped: kept only while the file may start a kernel.
_HIDDEN_INPUT_SENT: dict[float, float] = {}


@dataclass
class Clock:
    """The notebook's time: everything done for one file counts against ``notebook_seconds``.
    Every kernel of a file has a clock of its own started when the file's grading did
    (grading/grade.py); whether a hidden input of the file has reached any of them is kept by that
    start (:data:`_HIDDEN_INPUT_SENT`): a kernel that dies at start then no longer has its last
    words shown."""

    notebook_seconds: float
    started: float = field(default_factory=time.monotonic)

    @property
    def seconds_left(self) -> float:
        return self.notebook_seconds - (time.monotonic() - self.started)

    def hidden_input_sent(self) -> None:
        now = time.monotonic()
        # a file whose time is up starts no kernel any more: what is kept of it can go
        for started, ends in list(_HIDDEN_INPUT_SENT.items()):
            if ends < now:
                del _HIDDEN_INPUT_SENT[started]
        _HIDDEN_INPUT_SENT[self.started] = self.started + self.notebook_seconds

    @property
    def exposed(self) -> bool:
        """Has a hidden input reached a kernel of this file?"""
        return self.started in _HIDDEN_INPUT_SENT


class Ending(enum.Enum):
    """How one kernel process ended."""

    SHUT_DOWN = "shut down by the grader"
    DIED = "died or stopped answering"  # then restarted, if the limits allow
    FAILED_TO_START = "did not start"


@dataclass
class CellRun:
    status: CellStatus
    error: str = ""
    stdout: str = ""
    seconds: float = 0.0


class Kernel:
    """The kernel's life: :meth:`start`, then :meth:`execute` and :meth:`run_cell` (a death restarts
    it), then :meth:`shut_down`. Raises :class:`KernelDied` or :class:`CallTimeout`."""

    def __init__(
        self,
        workspace: Workspace,
        limits: Limits,
        clock: Clock,
        preload: tuple[str, ...] = (),
        use_zygote: bool = True,
    ):
        self.workspace, self.limits, self.clock = workspace, limits, clock
        self.preload, self.use_zygote = preload, use_zygote
        self.km: KernelManager | None = None
        self.kc: Any = None  # jupyter_client's BlockingKernelClient
        self.restarts = 0
        self.given_up = ""  # why the session stopped restarting kernels, once it has
        self.endings: list[Ending] = []  # how each kernel process of this life ended
        self.stdin_answer: Callable[[str], str] | None = None  # see answering_stdin
        self._replay: list[tuple[str, float]] = []
        self._last_msg_id = ""

    @property
    def seconds_left(self) -> float:
        return self.clock.seconds_left

    # -- the steps of a start ------------------------------------------------------------------
    def start(self) -> None:
        """Launch a kernel process, connect to it, wait until it answers, install the codec."""
        log_path = self._launch()
        self._connect()
        self._wait_until_ready(log_path)
        self._install_codec()

    def _launch(self) -> Path:
        workspace = self.workspace
        private = workspace.private
        assert private is not None, "Workspace.create() first"
        # A new manager each time: shutting a kernel down terminates its manager's ZMQ context.
        # Unix sockets in a folder of the kernel's own, never TCP: a network namespace has none.
        km = self.km = KernelManager(
            kernel_name=KERNEL_NAME,
            kernel_spec_manager=workspace.specs(),
            transport="ipc",
            ip=str(workspace.sockets / f"k{self.restarts}"),
            connection_file=str(private / f"kernel-{self.restarts}.json"),
        )
        if zygote_enabled() and self.use_zygote:
            km.kernel_id = f"bpe-{private.name}-{self.restarts}"
            km.provisioner = ZygoteProvisioner(
                kernel_id=km.kernel_id, kernel_spec=km.kernel_spec, parent=km,
                preload=tuple(self.preload),
            )
        km.write_connection_file()
        # readable by the kernel's uid alone; Landlock keeps it read-only
        workspace.give_to_kernel(km.connection_file)
        # The kernel process's own output (ipykernel's start-up warnings) goes to a log beside it;
        # what the notebook prints travels on the output channel as usual.
        # A log of each start's own: what a killed kernel wrote to its stderr (after a hidden input
        # reached it) is never in the message of a restart that failed.
        log_path = private / f"kernel-{self.restarts}.log"
        with open(log_path, "ab") as log:
            km.start_kernel(
                cwd=str(workspace.workdir),
                env=workspace.environment(km.connection_file),
                stdout=log,
                stderr=log,
            )
        return log_path

    def _connect(self) -> None:
        assert self.km is not None
        self.kc = self.km.client()
        self.kc.context.setsockopt(zmq.MAXMSGSIZE, self.limits.reply_bytes)  # Limits.reply_bytes
        self.kc.start_channels()

    def _wait_until_ready(self, log_path: Path) -> None:
        try:
            # The notebook's time limit caps the wait too: a restart begun just before the limit
            # does not hold the grader for a minute past it on a busy machine.
            self.kc.wait_for_ready(timeout=min(KERNEL_START_SECONDS, max(1.0, self.seconds_left)))
        except RuntimeError as error:  # the kernel died while starting, or did not answer in time
            self.endings.append(Ending.FAILED_TO_START)
            if self.seconds_left <= 0:
                raise CallTimeout(TIME_USED_UP) from None
            raise KernelDied(
                f"the kernel did not start: {error}{self._last_words(log_path)}"
            ) from None

    def _last_words(self, log_path: Path) -> str:
        """The last lines a kernel that died at start wrote (say, an ImportError), for the row; only
        while no hidden input has reached a kernel of this file (a restarted kernel's start-up
        code could print one that the notebook saved), and only for the first start."""
        if self.restarts or self.clock.exposed:
            return ""
        try:
            lines = [
                line.strip()
                for line in log_path.read_text(errors="replace").splitlines()
                if line.strip()
            ]
        except OSError:
            return ""
        if not lines:
            return ""

        def shown(text: str) -> str:
            return "".join(c if c.isprintable() else "?" for c in text)

        before = " | ".join(lines[-6:-1])
        return f"; the kernel's last words: {shown(lines[-1])[:300]}" + (
            f" (before that: {shown(before)[-300:]})" if before else ""
        )

    def _install_codec(self) -> None:
        code = (
            f"import sys as _s, types as _t\n_m = _t.ModuleType({CODEC_MODULE!r})\n"
            f"exec({CODEC_SOURCE!r}, _m.__dict__)\n"
            f"_s.modules[{CODEC_MODULE!r}] = _m\ndel _s, _t, _m\n"
        )
        self.execute(code, timeout=30, silent=True)

    def cpu_seconds(self) -> float | None:
        """The CPU time the kernel's processes have used so far: the launcher's, every process
        under it (the kernel and whatever the student's code started), and those already ended
        and waited for. Read by this process from /proc, so that nothing in the kernel can change
        it (a speed verdict's measure: load slows the clock, not the CPU time). None when the
        kernel's process is not known or gone."""
        pid = getattr(getattr(self.km, "provisioner", None), "pid", None)
        if not isinstance(pid, int):
            return None
        try:
            leader = psutil.Process(pid)
            tree = [leader, *leader.children(recursive=True)]
        except psutil.Error:
            return None
        used = 0.0
        for process in tree:
            with contextlib.suppress(psutil.Error):
                times = process.cpu_times()
                used += times.user + times.system + times.children_user + times.children_system
        return used

    # -- the end of a kernel process, and of the life ------------------------------------------
    @staticmethod
    def stop(km: KernelManager | None, kc: Any) -> None:
        """Close the channels, then end the kernel: each on its own, so that channels that would not
        close never keep the kernel alive."""
        with contextlib.suppress(Exception):
            if kc is not None:
                kc.stop_channels()
        # The launcher leads the kernel's session: whatever the kernel started is in it (the
        # fence forbids setsid; the boundary's PID namespace ends them anyway), ended with it.
        session = getattr(getattr(km, "provisioner", None), "pid", None) if km is not None else None
        with contextlib.suppress(Exception):
            if km is not None:
                km.shutdown_kernel(now=True)
        if isinstance(session, int):
            with contextlib.suppress(Exception):
                isolation.end_processes(session=session)

    def shut_down(self) -> None:
        """End the current kernel process (the workspace is the caller's to remove)."""
        self.stop(self.km, self.kc)
        self.endings.append(Ending.SHUT_DOWN)

    def restart(self) -> None:
        """Fresh kernel, then replay every cell that had run, so the notebook's state comes back.

        Within the notebook's time limit and at most ``max_restarts`` times: after that the session
        gives up, and every later call fails at once as if the kernel had died."""
        self.stop(self.km, self.kc)
        self.endings.append(Ending.DIED)
        if self.restarts >= self.limits.max_restarts:
            self.given_up = (f"the kernel died {self.restarts + 1} times "
                             f"(limit {self.limits.max_restarts} restarts)")
            return
        if self.seconds_left <= 0:
            self.given_up = "the notebook's time limit was used up"
            return
        self.restarts += 1
        try:
            self.start()
        except (
            CallTimeout,
            KernelDied,
        ) as failed:  # out of time while starting, or it died at once
            self.given_up = f"the kernel could not be restarted ({failed})"
            return
        replayed = []
        for code, timeout in self._replay:
            if self.seconds_left <= 0:
                break  # replays count against the notebook's time limit like everything else
            try:
                self.execute(code, timeout=timeout)
            except CallTimeout:
                # it ran in time before; without it the parts that need it fail on
                # their own
                continue
            except KernelDied:
                break  # the notebook now kills every kernel: the rest is graded without state
            replayed.append((code, timeout))
        self._replay = replayed

    # -- running code ----------------------------------------------------------------------------
    def execute(
        self, code: str, timeout: float, silent: bool = False, expressions: dict | None = None
    ) -> dict:
        """Run ``code``; the execute reply's content. Raises CallTimeout (kernel interrupted and
        answering again) or KernelDied (dead, or stuck after the interrupt)."""
        if self.given_up:
            raise KernelDied(self.given_up)
        if self.seconds_left <= 0:
            raise CallTimeout(TIME_USED_UP)
        assert self.km is not None
        timeout = min(timeout, self.seconds_left)  # the notebook's limit caps every request
        # stop_on_error=False: otherwise a cell that raises makes the kernel abort the
        # requests right
        # after it, and a later definition cell would silently never run.
        msg_id = self._last_msg_id = self.kc.execute(
            code,
            silent=silent,
            store_history=False,
            allow_stdin=self.stdin_answer is not None,
            stop_on_error=False,
            user_expressions=expressions or {},
        )
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
                reply = self._shell_msg(timeout=min(remaining, 1.0))
            except queue.Empty:
                if not self.km.is_alive():
                    raise KernelDied("the kernel died") from None
                continue
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        if interrupted:
            raise CallTimeout(f"did not finish within {timeout:g} s")
        return reply["content"]

    def drain_output(self, until_idle_of: str | None = None, limit: int = 4000) -> str:
        """Read the output channel: what was printed, up to ``limit`` characters (long outputs cost
        nothing). With ``until_idle_of``, wait (briefly) for that request's outputs to end.

        Never longer than ``Limits.drain_seconds`` nor past the notebook's time: a kernel can
        publish output faster than it is read (a thread sending signed messages without end), and
        the output channel is never empty then."""
        chunks: list[str] = []
        size = 0
        deadline = time.monotonic() + max(0.0, min(self.limits.drain_seconds, self.seconds_left))
        while True:
            if time.monotonic() > deadline:
                return "".join(chunks)
            try:
                msg = self.kc.get_iopub_msg(timeout=0.2 if until_idle_of else 0)
            except queue.Empty:
                if not until_idle_of:
                    return "".join(chunks)
                continue
            own = not until_idle_of or msg["parent_header"].get("msg_id") == until_idle_of
            if msg["msg_type"] == "stream" and own and size < limit:
                text = msg["content"].get("text", "")
                chunks.append(text[: limit - size])
                size += len(text)
            if (
                until_idle_of
                and msg["msg_type"] == "status"
                and msg["content"].get("execution_state") == "idle"
                and msg["parent_header"].get("msg_id") == until_idle_of
            ):
                return "".join(chunks)

    def run_cell(self, code: str, replay: bool = True, capture: bool = False) -> CellRun:
        """Run one cell within the cell and notebook limits; remembered for replay if it ran."""
        timeout = min(self.limits.cell_seconds, self.seconds_left)
        if timeout <= 0:
            return CellRun(CellStatus.SKIPPED, "the notebook's time limit was used up")
        started = time.monotonic()
        self.drain_output()
        try:
            content = self.execute(code, timeout=timeout)
        except CallTimeout:
            return CellRun(
                CellStatus.TIMEOUT,
                f"stopped after {timeout:g} s (time limit)",
                seconds=time.monotonic() - started,
            )
        except KernelDied as died:
            self.restart()
            return CellRun(
                CellStatus.DIED, f"{died} while running this cell",
                seconds=time.monotonic() - started,
            )
        stdout = (
            self.drain_output(until_idle_of=self._last_msg_id)
            if capture
            else (self.drain_output() and "")
        )
        seconds = time.monotonic() - started
        if content.get("status") == "ok":
            if replay:
                self._replay.append((code, timeout))
            return CellRun(CellStatus.OK, stdout=stdout, seconds=seconds)
        return CellRun(
            CellStatus.ERROR,
            f"{content.get('ename', 'Error')}: {content.get('evalue', '')}"[:500],
            stdout,
            seconds,
        )

    # -- the kernel's input requests: stand-ins (codec.py) ask the grader through them -------------
    @contextlib.contextmanager
    def answering_stdin(self, answer: Callable[[str], str]) -> Iterator[None]:
        """Within the block, the kernel's input requests (prompt -> reply) are answered by
        ``answer``; outside it, stdin is off."""
        self.stdin_answer = answer
        try:
            yield
        finally:
            self.stdin_answer = None

    def _shell_msg(self, timeout: float) -> dict:
        """The next shell message; meanwhile, answer the kernel's input requests (stand-ins)."""
        if self.stdin_answer is None:
            return self.kc.get_shell_msg(timeout=timeout)
        shell, stdin = self.kc.shell_channel.socket, self.kc.stdin_channel.socket
        poller = zmq.Poller()
        poller.register(shell, zmq.POLLIN)
        poller.register(stdin, zmq.POLLIN)
        deadline = time.monotonic() + timeout
        while True:
            ready = dict(poller.poll(int(max(0.0, deadline - time.monotonic()) * 1000)))
            if stdin in ready:
                request = self.kc.get_stdin_msg(timeout=0)
                if request["msg_type"] == "input_request":
                    self.kc.input(self.stdin_answer(request["content"].get("prompt", "")))
            if shell in ready:
                return self.kc.get_shell_msg(timeout=0)
            if time.monotonic() >= deadline:
                raise queue.Empty
