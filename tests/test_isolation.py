"""The building blocks of the kernel boundary (autograder/kernel/isolation.py), each tested alone
in a child process (every restriction is irreversible), through Python and through libc (ctypes).

The attacks of a hostile notebook graded end to end are in test_isolation_attacks.py.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

from adversarial import living_named
from autograder.kernel import isolation
from autograder.kernel.session import isolation_status

LANDLOCK = isolation.landlock_abi() >= 1
needs_landlock = pytest.mark.skipif(not LANDLOCK, reason="this Linux kernel has no Landlock")
# Kernels get the boundary here (not forced to the
# fence by AUTOGRADER_ISOLATION=fence, nor refused).
needs_boundary = pytest.mark.skipif(
    not isolation_status().startswith("landlock"),
    reason=f"kernels run behind the fence here: {isolation_status()}",
)
needs_x86_64 = pytest.mark.skipif(
    os.uname().machine != "x86_64", reason="the seccomp filter is for x86-64"
)


def run_child(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``code`` in a fresh Python with ``autograder.kernel.isolation`` importable; its output."""
    prelude = "import os, sys, ctypes, socket\nfrom autograder.kernel import isolation\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def listener():
    """A TCP listener on loopback that records whether anyone connected (stops by itself)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    reached = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                connection, _ = server.accept()
                reached.append(True)
                connection.close()
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], reached
    stop.set()
    thread.join(timeout=2)
    server.close()


def test_bpf_program_is_whole_instructions():
    program = isolation.seccomp_program()
    assert len(program) % 8 == 0 and 10 < len(program) // 8 < 256


@needs_x86_64
def test_seccomp_refuses_ip_sockets_through_python_and_libc_but_keeps_unix_sockets():
    result = run_child("""
        isolation.set_no_new_privs()
        isolation.install_seccomp_filter()
        libc = ctypes.CDLL(None, use_errno=True)
        for family in (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK, socket.AF_PACKET):
            try:
                socket.socket(family,
                              socket.SOCK_DGRAM if family != socket.AF_PACKET else socket.SOCK_RAW)
                print("python", family, "OPEN")
            except OSError as error:
                print("python", family, error.errno)
            fd = libc.socket(family, 2, 0)
            print("libc", family, fd, ctypes.get_errno())
        a, b = socket.socketpair(socket.AF_UNIX)
        a.send(b"x"); print("unix", b.recv(1))
        print("ptrace", libc.ptrace(0, 0, 0, 0), ctypes.get_errno())
    """)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert not any("OPEN" in line for line in lines)
    # EAFNOSUPPORT, Python and libc alike
    assert sum(line.endswith(" 97") for line in lines) == 8, lines
    assert "unix b'x'" in lines
    assert "ptrace -1 1" in lines  # EPERM


@needs_x86_64
def test_seccomp_refuses_new_namespaces_by_clone_and_clone3_but_keeps_fork_threads_and_subprocess():
    """A red-team run made user, PID and network namespaces with the raw clone
    and clone3 system calls (unshare and setns were refused): clone with a
    namespace flag now fails with EPERM, clone3 with ENOSYS (its flags are in
    memory, out of a filter's sight), while what honest code does still works."""
    result = run_child("""
        import struct, subprocess, threading
        isolation.set_no_new_privs()
        isolation.install_seccomp_filter()
        # the GIL stays held: a raw clone's child may run Python
        raw = ctypes.PyDLL(None, use_errno=True)
        SIGCHLD = 17
        flags = {"user": isolation.CLONE_NEWUSER, "pid": isolation.CLONE_NEWPID,
                 "net": isolation.CLONE_NEWNET, "mount": isolation.CLONE_NEWNS,
                 "uts": isolation.CLONE_NEWUTS, "ipc": isolation.CLONE_NEWIPC,
                 "cgroup": isolation.CLONE_NEWCGROUP, "time": isolation.CLONE_NEWTIME}
        for name, flag in flags.items():
            pid = raw.syscall(56, flag | SIGCHLD, 0, 0, 0, 0)
            if pid == 0:
                os._exit(0)
            print("clone", name, pid, ctypes.get_errno() if pid < 0 else os.waitpid(pid, 0)[1])
            args = ctypes.create_string_buffer(struct.pack("=8Q", flag, 0, 0, 0, SIGCHLD, 0, 0, 0),
                                               64)
            pid = raw.syscall(435, args, 64)
            if pid == 0:
                os._exit(0)
            print("clone3", name, pid, ctypes.get_errno() if pid < 0 else os.waitpid(pid, 0)[1])
        pid = raw.syscall(56, SIGCHLD, 0, 0, 0, 0)  # as fork() asks
        if pid == 0:
            os._exit(7)
        print("plain clone", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        pid = os.fork()
        if pid == 0:
            os._exit(3)
        print("fork", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        box = []
        thread = threading.Thread(target=box.append, args=("ran",))
        thread.start(); thread.join()
        print("thread", box[0])
        print("subprocess",
              subprocess.run(["/bin/echo", "ok"], capture_output=True, text=True).stdout.strip())
    """)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for name in ("user", "pid", "net", "mount", "uts", "ipc", "cgroup", "time"):
        assert f"clone {name} -1 1" in lines, lines  # EPERM
        assert f"clone3 {name} -1 38" in lines, lines  # ENOSYS
    assert lines[-4:] == ["plain clone 7", "fork 3", "thread ran", "subprocess ok"], lines


@needs_landlock
def test_landlock_allows_only_the_rules_through_python_and_libc(tmp_path, listener):
    port, reached = listener
    allowed, secret = tmp_path / "allowed", tmp_path / "secret.txt"
    allowed.mkdir()
    (allowed / "mine.txt").write_text("mine")
    secret.write_text("the answers")
    system = sorted({sys.prefix, sys.base_prefix, '/usr', '/lib', '/lib64'})
    result = run_child(f"""
        isolation.set_no_new_privs()
        isolation.restrict_filesystem_and_network([({str(allowed)!r}, isolation.READ_WRITE)]
                                                  + [(p, isolation.READ_ONLY) for p in {system!r}])
        libc = ctypes.CDLL(None, use_errno=True)
        print("mine", open({str(allowed / 'mine.txt')!r}).read())
        try:
            print("python read", open({str(secret)!r}).read())
        except PermissionError:
            print("python read denied")
        print("libc read", libc.open({str(secret).encode()!r}, 0), ctypes.get_errno())
        try:
            os.link({str(secret)!r}, {str(allowed / 'link.txt')!r}); print("link made")
        except OSError as error:
            print("link denied", error.errno)
        try:
            open({str(tmp_path / 'outside.txt')!r}, "w"); print("wrote outside")
        except PermissionError:
            print("write outside denied")
        s = socket.socket()
        print("tcp", s.connect_ex(("127.0.0.1", {port})))
        fd = libc.socket(2, 1, 0)
        addr = bytes([2, 0]) + ({port}).to_bytes(2, "big") + bytes([127, 0, 0, 1]) + bytes(8)
        print("libc tcp", libc.connect(fd, addr, 16), ctypes.get_errno())
        print("libc kill parent", libc.kill(os.getppid(), 0), ctypes.get_errno())
    """)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "mine mine" in out
    assert "python read denied" in out and "libc read -1 13" in out
    assert "link denied" in out and "link made" not in out
    assert "write outside denied" in out and not (tmp_path / "outside.txt").exists()
    assert "tcp 13" in out and "libc tcp -1 13" in out
    if isolation.landlock_abi() >= 6:  # signals scoped to the domain
        assert "libc kill parent -1 1" in out
    assert not reached


@needs_landlock
def test_an_excluded_package_inside_an_allowed_folder_stays_unreadable(tmp_path):
    """``pip install .`` puts the course (and its reference answers) into site-packages, which a
    kernel must read: the course's package is carved out of the allowed folder."""
    site = tmp_path / "site-packages"
    (site / "numpy_like").mkdir(parents=True)
    (site / "numpy_like" / "core.py").write_text("ok = 1")
    (site / "bpe_labs" / "reference").mkdir(parents=True)
    (site / "bpe_labs" / "reference" / "char_bpe.py").write_text("ANSWERS = 1")
    system = sorted({sys.prefix, sys.base_prefix, '/usr', '/lib', '/lib64'})
    result = run_child(f"""
        rules = isolation.rules_excluding([{str(site)!r}] + {system!r},
                                          isolation.READ_ONLY, [{str(site / 'bpe_labs')!r}])
        isolation.set_no_new_privs()
        isolation.restrict_filesystem_and_network(rules)
        libc = ctypes.CDLL(None, use_errno=True)
        print("listing", sorted(os.listdir({str(site)!r})))
        print("allowed", open({str(site / 'numpy_like' / 'core.py')!r}).read())
        for how in ("python", "libc"):
            path = {str(site / 'bpe_labs' / 'reference' / 'char_bpe.py')!r}
            if how == "python":
                try:
                    print(how, open(path).read())
                except PermissionError:
                    print(how, "denied")
            else:
                print(how, libc.open(path.encode(), 0), ctypes.get_errno())
    """)
    assert result.returncode == 0, result.stderr
    assert "listing ['bpe_labs', 'numpy_like']" in result.stdout
    assert "allowed ok = 1" in result.stdout
    assert "python denied" in result.stdout and "libc -1 13" in result.stdout
    assert "ANSWERS" not in result.stdout


def test_landlock_abi_is_reported_from_the_kernel():
    abi = isolation.landlock_abi()
    assert abi >= 0
    status = isolation_status()
    if abi == 0 or os.environ.get("AUTOGRADER_ISOLATION") == "fence":
        assert status.startswith("fence")
    else:
        assert status.startswith(f"landlock-abi{abi}")


_KERNEL_PROBE = """
        import tempfile
        from pathlib import Path
        from autograder.kernel.session import KernelSession, Limits
        with tempfile.TemporaryDirectory(prefix="bpe-grade-") as folder:
            with KernelSession(Path(folder) / "work", Limits(cell_seconds=20)) as session:
                run = session.run_cell(
                    "import os; print(os.getuid(), os.getpid(), sorted(os.listdir('.')))",
                    capture=True)
                reference = (__import__("importlib").util
                             .find_spec("bpe_labs.reference.char_bpe").origin)
                assert Path(reference).is_file()
                libc_read = session.run_cell(
                    "import ctypes; print('libc', ctypes.CDLL(None).open(%r.encode(), 0))"
                    % reference,
                    capture=True)
                print(libc_read.stdout.strip())
                print(session.isolation)
                print(run.status, run.stdout.strip())
    """


def _kernel_probe(env: dict) -> str:
    result = run_child(_KERNEL_PROBE, env)
    assert result.returncode == 0, result.stderr
    return result.stdout


@needs_boundary
def test_a_kernel_runs_as_process_one_of_its_own_namespace_as_an_unprivileged_user():
    libc_read, status, run = _kernel_probe({}).strip().splitlines()[-3:]
    assert status.startswith("landlock")
    assert libc_read == "libc -1"  # the grader's package (the reference answers) is unreadable
    uid, pid = run.split()[1:3]
    assert pid == "1"
    if os.geteuid() == 0:
        assert int(uid) >= 1_000_000
    assert "'data'" in run and "'tmp'" in run


@pytest.fixture(scope="module")
def open_python():
    """A Python every user can run (this machine's own may lie in root's closed home): what a
    fence kernel under a uid of its own needs."""
    from test_gradescope_guard import python_open_to_others

    venv = python_open_to_others()
    if venv is None:
        pytest.skip("no Python here that another user could run")
    yield str(venv / "bin" / "python")
    import shutil

    shutil.rmtree(venv, ignore_errors=True)


def run_child_with(python: str, code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``code`` in ``python`` (this checkout's autograder importable)."""
    prelude = "import os, sys, ctypes, socket\nfrom autograder.kernel import isolation\n"
    root = str(Path(__file__).resolve().parents[1])
    return subprocess.run(
        [python, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env={**os.environ, "PYTHONPATH": root, **(env or {})},
    )


def test_the_fence_is_used_and_said_when_landlock_is_off(open_python):
    result = run_child_with(open_python, _KERNEL_PROBE, {"AUTOGRADER_ISOLATION": "fence"})
    assert result.returncode == 0, result.stderr
    status, run = result.stdout.strip().splitlines()[-2:]
    assert status.startswith("fence+seccomp")
    assert run.startswith("ok ")


FENCE_ATTACK = '''
import tempfile
from pathlib import Path
from autograder.kernel.session import KernelSession, Limits
CELL = """
import ctypes, os, socket
print("uid", os.getuid())
for family in (socket.AF_INET, socket.AF_INET6):
    try:
        socket.socket(family, socket.SOCK_STREAM)
        print("socket", family, "opened")
    except OSError as error:
        print("socket", family, "refused", error.errno)
libc = ctypes.CDLL(None, use_errno=True)
print("libc socket", libc.socket(2, 1, 0))
pid = libc.fork()
if pid == 0:
    libc.setsid()
    libc.prctl(15, b"bpe-survivor", 0, 0, 0)
    libc.sleep(600)
    libc._exit(0)
print("forked", pid)
"""
with tempfile.TemporaryDirectory(prefix="bpe-grade-") as folder:
    with KernelSession(Path(folder) / "work", Limits(cell_seconds=20)) as session:
        run = session.run_cell(CELL, capture=True)
        print(session.isolation)
        print(run.stdout)
'''


def survivors() -> set[str]:
    return living_named("bpe-survivor")


@pytest.mark.skipif(os.geteuid() != 0, reason="the fence's own uid needs root")
def test_the_fence_closes_the_network_and_ends_a_child_that_left_the_session(open_python):
    """From a red-team run: a fence kernel sent every call's arguments to 127.0.0.1, and a child
    started with libc fork() and setsid() was still running 91 s after grading."""
    before = survivors()
    result = run_child_with(open_python, FENCE_ATTACK, {"AUTOGRADER_ISOLATION": "fence"})
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "fence+seccomp+uid" in out, out
    assert "opened" not in out and "libc socket -1" in out, out
    assert "forked" in out, out
    uid = int(next(line.split()[1] for line in out.splitlines() if line.startswith("uid ")))
    assert uid >= 1_000_000
    assert not survivors() - before, "a child of the kernel outlived its grading"
    assert not isolation.processes_where(uid=uid)


def test_a_fence_kernel_that_would_run_as_root_is_refused():
    """This machine's Python lies in root's home (mode 700): a kernel under a uid of its own could
    not run it. The fence used to give it none, and the notebook ran as uid 0."""
    from autograder.kernel.probe import _closed_to_others

    if os.geteuid() != 0 or _closed_to_others([Path(sys.executable).resolve()]) is None:
        pytest.skip("needs root and a Python in a folder closed to other users")
    code = """
        import tempfile
        from pathlib import Path
        from autograder.kernel.session import KernelSession, Limits, IsolationUnavailable
        with tempfile.TemporaryDirectory(prefix="bpe-grade-") as folder:
            try:
                with KernelSession(Path(folder) / "work", Limits(cell_seconds=20)) as session:
                    print("ran as",
                          session.run_cell("import os; print(os.getuid())", capture=True).stdout)
            except IsolationUnavailable as error:
                print("refused:", error)
    """
    result = run_child(code, {"AUTOGRADER_ISOLATION": "fence"})
    assert "ran as" not in result.stdout, result.stdout
    assert "refused:" in result.stdout and "would run as root" in result.stdout, (
        result.stdout + result.stderr[-2000:]
    )


def test_require_isolation_refuses_the_fence():
    code = """
        import tempfile
        from pathlib import Path
        from autograder.kernel.session import KernelSession, Limits, IsolationUnavailable
        with tempfile.TemporaryDirectory() as folder:
            try:
                with KernelSession(Path(folder) / "work", Limits(require_isolation=True)):
                    print("started")
            except IsolationUnavailable as error:
                print("refused:", error)
    """
    result = run_child(code, {"AUTOGRADER_ISOLATION": "fence"})
    assert "refused: kernel isolation was required" in result.stdout, result.stderr
    assert "started" not in result.stdout


def test_the_cli_refuses_to_grade_without_isolation_when_required(tmp_path):
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    (submissions / "ann_toy_bpe.ipynb").write_text("{}")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(submissions),
            "--out",
            str(tmp_path / "out"),
            "--require-isolation",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "AUTOGRADER_ISOLATION": "fence"},
    )
    assert result.returncode == 2
    assert "--require-isolation" in result.stderr and "nothing was graded" in result.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()


@needs_boundary
def test_no_unix_socket_of_the_machine_exists_for_a_kernel():
    """Landlock cannot refuse connect() on a pathname Unix socket; the kernel's own root file
    system leaves every socket of the machine out (here a world-writable listener in /tmp)."""
    folder = Path(tempfile.mkdtemp(prefix="bpe-socket-"))
    folder.chmod(0o777)
    path = folder / "listener.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    path.chmod(0o777)
    server.listen()
    server.settimeout(0.2)
    reached, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                reached.append(server.accept()[0].recv(100))
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        attack = textwrap.dedent(f"""
            import socket, ctypes
            try:
                s = socket.socket(socket.AF_UNIX); s.connect({str(path)!r}); s.send(b"python")
                print("python reached")
            except OSError as error:
                print("python", error.errno)
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.socket(1, 1, 0)
            address = (1).to_bytes(2, "little") + {str(path).encode()!r}.ljust(108, bytes(1))
            print("libc", libc.connect(fd, address, len(address)), ctypes.get_errno())
        """)
        code = f"""
            import tempfile
            from pathlib import Path
            from autograder.kernel.session import KernelSession, Limits
            with tempfile.TemporaryDirectory(prefix="bpe-grade-") as work:
                with KernelSession(Path(work) / "work", Limits(cell_seconds=20)) as session:
                    print(session.run_cell({attack!r}, capture=True).stdout)
        """
        result = run_child(code)
    finally:
        stop.set()
        thread.join(timeout=2)
        server.close()
    assert result.returncode == 0, result.stderr
    # ENOENT: it does not exist
    assert "python 2" in result.stdout and "libc -1 2" in result.stdout, result.stdout
    assert not reached


@needs_boundary
def test_the_memory_limit_holds_for_a_kernel_and_all_its_children_together():
    """rlimits count per process: eight children of 150 MB each under a 1000 MB limit would hold
    1.2 GB. The kernel's cgroup caps them together (where cgroups can be made: root)."""
    if "cgroup" not in isolation_status():
        pytest.skip("no cgroup can be made here (not root, or no delegated controllers)")
    attack = textwrap.dedent("""
        import os, time, ctypes
        libc = ctypes.CDLL(None)
        r, w = os.pipe()
        children = []
        for index in range(8):
            pid = libc.fork()
            if pid == 0:
                try:
                    block = b'x' * (150 * 1024**2)
                    os.write(w, bytes([index]))
                except MemoryError:
                    pass
                libc.sleep(30); libc._exit(0)
            children.append(pid)
        time.sleep(5)
        os.set_blocking(r, False)
        try:
            allocated = set(os.read(r, 100))
        except BlockingIOError:
            allocated = set()
        held = [i for i, pid in enumerate(children)
                if i in allocated and os.waitpid(pid, os.WNOHANG)[0] == 0]
        print("held", len(held))
    """)
    code = f"""
        import tempfile
        from pathlib import Path
        from autograder.kernel.session import KernelSession, Limits
        with tempfile.TemporaryDirectory(prefix="bpe-grade-") as work:
            limits = Limits(cell_seconds=30, memory_bytes=1000 * 1024**2)
            with KernelSession(Path(work) / "work", limits) as session:
                run = session.run_cell({attack!r}, capture=True)
                print(run.status, run.stdout.strip())
    """
    result = run_child(code)
    assert result.returncode == 0, result.stderr
    status, _, held = result.stdout.strip().splitlines()[-1].partition(" held ")
    if status == "ok":
        assert int(held) * 150 <= 1000, result.stdout  # never more than the limit held at once
    else:
        assert status == "died"  # the kernel itself was the one the limit stopped


@pytest.mark.skipif(os.geteuid() != 0, reason="mount namespaces need root here")
def test_the_kernel_root_holds_only_the_given_paths_and_follows_symbolic_links(tmp_path):
    """A venv or data folder that is a symbolic link resolves inside the kernel's root as outside;
    a sibling that was not given does not exist there."""
    real = tmp_path / "real-data"
    real.mkdir()
    (real / "corpus.txt").write_text("corpus")
    (tmp_path / "data").symlink_to(real)
    (tmp_path / "secret.txt").write_text("answers")
    (tmp_path / "root").mkdir()
    python = sorted(
        {
            sys.prefix,
            sys.base_prefix,
            os.path.realpath(sys.prefix),
            "/usr",
            "/lib",
            "/lib64",
            "/etc",
        }
    )
    result = run_child(f"""
        isolation.unshare(isolation.CLONE_NEWNS)
        isolation.make_mounts_private()
        isolation.build_root({str(tmp_path / 'root')!r}, {python!r} + [{str(tmp_path / 'data')!r}],
                             [], ["/dev/null"])
        isolation.pivot_into({str(tmp_path / 'root')!r})
        print("data", open({str(tmp_path / 'data' / 'corpus.txt')!r}).read())
        print("secret", os.path.exists({str(tmp_path / 'secret.txt')!r}))
        try:
            open({str(real / 'new.txt')!r}, "w")
            print("wrote")
        except OSError as error:
            print("read-only", error.errno)
    """)
    assert result.returncode == 0, result.stderr
    assert "data corpus" in result.stdout
    assert "secret False" in result.stdout
    assert "read-only 30" in result.stdout  # EROFS
