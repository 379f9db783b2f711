"""Start an IPython kernel for grading, behind a boundary the student's code cannot cross.

Copied, with ``isolation.py`` beside it (as ``autograder_isolation.py``), into a folder the kernel
can neither write nor read, and run as a script: the kernel never has the autograder on its path.

``boundary`` mode (Linux with Landlock; the grader probes it first, see
``kernel.isolation_status``):

1. this process (the one jupyter_client started) joins the kernel's cgroups (memory and processes of
   the kernel and all its children together, where the grader could make them), enters new mount,
   PID, network, IPC and UTS namespaces (a user namespace first when not root) and forks: the child
   is process 1 of the new PID namespace, so when it ends, every process the notebook started ends
   with it; the child also dies with this process (``PR_SET_PDEATHSIG``), which is the one
   jupyter_client kills;
2. the child makes its mounts private and pivots into a root file system of its own (a tmpfs): the
   Python installation, system libraries and the lab's data bound read-only at their own paths,
   its socket folder, a few devices, its own ``/proc`` (its own processes only), and a
   size-capped tmpfs as its work folder (the disk limit). Nothing else exists there: no other
   file, and no Unix socket of the machine;
3. rlimits (memory, processes, file size, open files, CPU time, no core files), then the
   unprivileged uid (when the grader is root), no_new_privs, a seccomp filter (no socket family
   but Unix, no ptrace, mount, namespaces, BPF, io_uring...), and Landlock: read-only the Python
   installation, system libraries and the lab's data; read-write only the work folder; Unix
   sockets only in its socket folder; no TCP; no signals or abstract sockets beyond itself.

``fence`` mode (no Landlock: macOS, old kernels, some containers) keeps the older, weaker fence:
a memory cap and a Python audit hook, and natively (:func:`enter_fence`) never root, no network
(the seccomp socket filter works without Landlock) and no way out of the kernel's session. It is
reported as such in grades.csv and the class report.

In both modes an audit hook refuses what a notebook has no reason to do (course files, process
creation, signals to others): in boundary mode it only turns a denial into a clearer message.
"""
import json
import os
import resource
import select
import signal
import sys


def _inside(path, roots):
    return any(path == root or path.startswith(root + os.sep) for root in roots)


def _deepest(path, roots):
    """The length of the longest of ``roots`` that holds ``path`` (0: none does)."""
    return max(
        (len(root) for root in roots if path == root or path.startswith(root + os.sep)), default=0
    )


def install_fence(settings):
    """The Python-level fence: a memory cap and an audit hook (``sys.addaudithook`` cannot be
    removed)."""
    memory = int(settings.memory_bytes)
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    denied = [os.path.realpath(p) for p in settings.denied]
    allowed = [os.path.realpath(p) for p in settings.allowed]
    own_pid = os.getpid()

    def refuse(what):
        raise PermissionError(f"not allowed while grading: {what}")

    def audit(event, args):
        if event in (
            "open",
            "os.listdir",
            "os.scandir",
            "os.chdir",
            "os.remove",
            "os.rename",
            "shutil.rmtree",
        ):
            target = args[0] if args else None
            if isinstance(target, int) or target is None:
                return
            if isinstance(target, bytes):
                target = os.fsdecode(target)
            path = os.path.realpath(os.path.join(os.getcwd(), os.fspath(target)))
            # the nearer folder decides: the course inside an allowed installation stays denied
            if _deepest(path, denied) > _deepest(path, allowed):
                refuse(f"{event} {target}")
            if path.startswith("/proc/") and not path.startswith(
                ("/proc/self", f"/proc/{own_pid}")
            ):
                refuse(f"{event} {target}")
        elif event in (
            "subprocess.Popen",
            "os.system",
            "os.exec",
            "os.posix_spawn",
            "os.spawn",
            "os.fork",
            "pty.spawn",
        ):
            refuse(event)
        elif event in ("os.kill", "os.killpg") and args and args[0] not in (own_pid, 0):
            refuse(event)

    sys.addaudithook(audit)


def landlock_rules(settings, own_proc):
    iso = autograder_isolation
    rules = iso.rules_excluding(settings.read_only, iso.READ_ONLY, settings.denied)
    rules += [
        (settings.workdir, iso.READ_WRITE),
        (settings.sockets_dir, iso.SOCKETS_ONLY),
        (settings.connection_file, iso.ACCESS_FS_READ_FILE),
        ("/dev/null", iso.ACCESS_FS_READ_FILE | iso.ACCESS_FS_WRITE_FILE | iso.ACCESS_FS_TRUNCATE),
        ("/dev/zero", iso.ACCESS_FS_READ_FILE),
        ("/dev/urandom", iso.ACCESS_FS_READ_FILE),
        ("/dev/random", iso.ACCESS_FS_READ_FILE),
        ("/sys/devices/system/cpu", iso.READ_ONLY),
        ("/proc" if own_proc else "/proc/self", iso.READ_ONLY),
    ]
    return rules


def enter_boundary(settings, parent_alive_fd):
    """Run in process 1 of the new PID namespace: every step of the boundary, in order. Returns what
    was applied, in the words of grades.csv's ``isolation`` column
    (``landlock-abi7+seccomp+...``)."""
    iso = autograder_isolation
    uid, gid = settings.uid, settings.gid
    workdir, new_root = settings.workdir, settings.root_dir
    iso.make_mounts_private()
    # A root file system of its own: the allowed folders only, so that no other file, and no Unix
    # socket of the machine (Landlock cannot refuse connecting to one), exists for the kernel.
    iso.build_root(
        new_root,
        settings.read_only + ["/sys/devices/system/cpu", settings.connection_file],
        read_write=[settings.sockets_dir],
        devices=DEVICES,
    )
    iso.mount_private_tmpfs(new_root + workdir, int(settings.disk_bytes), uid, gid)
    own_proc = True
    try:
        iso.mount("proc", new_root + "/proc", "proc", iso.MS_NOSUID | iso.MS_NODEV | iso.MS_NOEXEC)
    except OSError:
        own_proc = False  # some containers forbid it: then no /proc at all
    for name, target in settings.links.items():
        os.symlink(target, os.path.join(new_root + workdir, name))
    for folder in ("tmp", ".matplotlib", ".ipython", ".cache"):
        path = os.path.join(new_root + workdir, folder)
        os.makedirs(path, exist_ok=True)
        if uid is not None:
            os.chown(path, uid, gid)
    iso.pivot_into(new_root)
    iso.set_limits(settings.rlimits)
    if uid is not None:
        iso.drop_to_user(uid, gid)
    iso.die_with_parent(signal.SIGKILL)
    if select.select([parent_alive_fd], [], [], 0)[0]:
        os._exit(70)  # the launcher died before the line above: nobody would ever stop this kernel
    iso.set_no_new_privs()
    missing = []
    try:
        iso.install_seccomp_filter()
    # no table for this architecture, or a kernel (or emulator) without seccomp filters
    except OSError as error:
        missing.append(f"no seccomp: {error.strerror or error}")
    abi = iso.restrict_filesystem_and_network(landlock_rules(settings, own_proc))
    os.chdir(workdir)
    piece = iso.Piece
    applied = [
        iso.landlock_piece(abi),
        piece.SECCOMP if not missing and _seccomp_mode() in (2, None) else "",
        piece.NETNS,
        piece.PIDNS,
        piece.UID if uid is not None else piece.USERNS,
    ]
    return "+".join(part for part in applied if part) + (
        f" ({'; '.join(missing)})" if missing else ""
    )


def _seccomp_mode():
    """This process's seccomp mode as the kernel reports it (2: a filter), or None."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Seccomp:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


DEVICES = ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"]


def enter_fence(settings):
    """The fence's native part, where the boundary cannot be had: never root (the kernel's own uid
    when the grader is root; no kernel at all when it would stay root), no_new_privs, and the
    seccomp filter (no socket family but Unix: no network; no setsid: every process the kernel
    starts stays in its session, which the grader ends whole). Returns whether the network is
    closed; sets what was applied in grades.csv's words."""
    iso = autograder_isolation
    uid = settings.uid
    if uid is None and os.geteuid() == 0:
        print(
            "autograder sandbox: refusing to run a notebook as root: the fence has no uid of its "
            "own to give this kernel",
            file=sys.stderr,
            flush=True,
        )
        os._exit(72)
    if uid is not None:  # the grader's private files are closed to this uid
        iso.drop_to_user(uid, settings.gid)
    iso.set_no_new_privs()
    applied = [iso.Piece.FENCE]
    try:
        iso.install_seccomp_filter(fence=True)
        applied.append(iso.Piece.SECCOMP)
    except OSError:  # no table for this architecture, or no seccomp: the network stays open
        pass
    if uid is not None:
        applied.append(iso.Piece.UID)
    os.environ[APPLIED] = "+".join(applied)
    return iso.Piece.SECCOMP in applied


def run_kernel(settings):
    install_fence(settings)
    os.environ.pop("JPY_PARENT_PID", None)  # process 1 has no parent to poll
    boundary = settings.mode == autograder_isolation.IsolationMode.BOUNDARY
    network_closed = boundary
    if not boundary:
        network_closed = enter_fence(settings)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    for name in [name for name in sys.modules if name == "autograder_isolation"]:
        del sys.modules[name]
    if settings.probe:
        os._exit(0)
    if network_closed:
        # ipykernel forwards the output of forked children through a TCP pipe on 127.0.0.1, and
        # libzmq aborts the process when it cannot make an IP socket (the seccomp filter): no pipe.
        from ipykernel import iostream

        iostream.IOPubThread._setup_pipe_in = (  # type: ignore[method-assign]
            lambda thread: setattr(thread, "_pipe_flag", False)
        )
    # No debugger in a grading kernel: ipykernel imports debugpy (160 modules, about 0.1 CPU-s)
    # when it can, for a front end's debug requests that the grader never sends.
    sys.modules.setdefault("debugpy", None)  # type: ignore[arg-type]  # None: "not importable"
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


# What the kernel got, in grades.csv's words; read by the grader's isolation probe (a real kernel,
# asked before any student code runs in it).
APPLIED = "AUTOGRADER_ISOLATION_APPLIED"
# How much of a kernel's own output (its stdout and stderr: start-up errors) reaches its log, which
# lies outside the boundary: the last words of a kernel that dies at start, never a disk to fill.
KERNEL_LOG_BYTES = 16 * 1024


def _relay(source_fd, limit=KERNEL_LOG_BYTES):
    """Copy what the kernel writes to its stdout and stderr into this process's stderr (the log), up
    to ``limit`` bytes; the rest is read and dropped. Returns at end of file (the kernel and all its
    children have exited)."""
    left = limit
    while True:
        try:
            chunk = os.read(source_fd, 65536)
        except InterruptedError:
            continue
        except OSError:
            return
        if not chunk:
            return
        if left > 0:
            try:
                os.write(2, chunk[:left])
            except OSError:
                pass
            left -= len(chunk)


def main():
    settings = autograder_isolation.LauncherSettings.decode(
        os.environ.pop(autograder_isolation.LauncherSettings.VARIABLE)
    )
    if settings.mode != autograder_isolation.IsolationMode.BOUNDARY:
        run_kernel(settings)
        return
    # jupyter_client interrupts a kernel by signalling its whole process group: the kernel (our
    # child) handles SIGINT; this process must ignore it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    autograder_isolation.join_cgroups(settings.cgroups)  # before any child: they all inherit it
    autograder_isolation.enter_namespaces(as_root=os.geteuid() == 0)
    parent_alive, keep_open = os.pipe()
    output_read, output_write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(keep_open)
        os.close(output_read)
        try:
            applied = enter_boundary(settings, parent_alive)
        except BaseException as error:  # say why in the kernel log; the grader sees the kernel die
            print(
                f"autograder sandbox: could not enter the boundary: {type(error).__name__}: "
                f"{error}",
                file=sys.stderr,
                flush=True,
            )
            os._exit(71)
        os.environ[APPLIED] = applied
        # The log file (outside the boundary) stays the launcher's: the kernel's own stdout and
        # stderr go through a pipe that the launcher copies, up to KERNEL_LOG_BYTES, into it (a
        # kernel that dies at start says why there), so a notebook cannot fill a disk through them.
        os.dup2(output_write, 1)
        os.dup2(output_write, 2)
        os.close(output_write)
        run_kernel(settings)
        os._exit(0)
    os.close(parent_alive)
    os.close(output_write)
    signal.signal(signal.SIGTERM, lambda *_: os.kill(child, signal.SIGKILL))
    _relay(output_read)
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def threads_of_this_process():
    return len(os.listdir("/proc/self/task"))


def preload(names):
    """Import ``names`` (what a released notebook imports: the instructor's choice, never a
    student's) so that kernels forked afterwards have them in memory: up to 1.3 CPU-s of pandas
    and matplotlib per kernel. Refuses (False) if an import left a thread running: fork() copies one
    thread only, and a lock held by another would never be released."""
    import importlib

    for name in names:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except Exception:
            pass
    return threads_of_this_process() == 1


def zygote():
    """Serve "start a kernel" requests (one JSON line each on stdin: argv, env, cwd, log, preload)
    by forking this process, which has imported ipykernel and what the labs import (:func:`preload`)
    and nothing of the grader; answer each with the new process's pid (0: start it yourself). The
    child is a fresh launcher: it runs :func:`main` as if started by jupyter_client. Ends when stdin
    closes (its grader is gone)."""
    import traceback

    # Ends with its grader, even one killed with SIGKILL (stdin's EOF is not enough then: a grader's
    # other children may hold the pipe open).
    grader = os.getppid()
    autograder_isolation.die_with_parent(signal.SIGKILL)
    if os.getppid() != grader:
        sys.exit(0)
    # ipykernel and what its kernel imports as it starts (measured: the modules a started kernel has
    # that `import ipykernel.kernelapp` alone does not load)
    if not preload(
        [
            "ipykernel.kernelapp",
            "ipykernel.ipkernel",
            "ipykernel.zmqshell",
            "IPython.core.debugger",
            "IPython.core.completerlib",
            "IPython.core.logger",
            "IPython.core.oinspect",
            "IPython.extensions.storemagic",
            "IPython.utils.wildcard",
            "tornado.platform.asyncio",
            "tornado.queues",
            "tornado.locks",
            "tornado.gen",
            "ctypes.util",
            "faulthandler",
        ]
    ):
        print(
            "autograder zygote: a thread is running after importing ipykernel; refusing to fork",
            file=sys.stderr,
            flush=True,
        )
        sys.exit(3)
    def reap(*_):
        # Reaped here (not ignored) so that the kernels' CPU time counts towards this process's
        # children, and so towards the grader's: benchmarks measure it.
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass

    signal.signal(signal.SIGCHLD, reap)  # no zombies: the grader watches each kernel by pidfd
    import gc

    zygote_pid = os.getpid()
    commands = sys.stdin.buffer
    replies = sys.stdout.buffer
    for line in commands:
        request = json.loads(line)
        if not preload(request.get("preload", [])):
            # the grader starts this kernel the usual way; no more forks from here
            replies.write(b"0\n")
            replies.flush()
            break
        # What is imported so far (this request's imports too) is shared
        # with the kernel forked now: kept out of the collector's scans,
        # it is neither walked nor written to (copy-on-write) by it.
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                # the zygote: it dies with its grader
                autograder_isolation.die_with_parent(signal.SIGKILL)
                if os.getppid() != zygote_pid:
                    os._exit(0)
                os.setsid()  # its own process group, as jupyter_client gives a kernel it starts
                null = os.open(os.devnull, os.O_RDONLY)
                log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                os.dup2(null, 0)
                os.dup2(log, 1)
                os.dup2(log, 2)
                os.close(null)
                os.close(log)
                os.chdir(request["cwd"])
                os.environ.clear()
                os.environ.update(request["env"])
                sys.argv = request["argv"][1:]
                main()
                code = 0
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        replies.write(f"{pid}\n".encode())
        replies.flush()
    import shutil

    shutil.rmtree(os.path.dirname(os.path.abspath(__file__)), ignore_errors=True)  # its own folder


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import autograder_isolation  # noqa: E402  (copied beside this script; see the module docstring)

def die_with_the_grader():
    """A launcher jupyter_client started itself (not forked by the zygote, which sets the same)
    dies with the grading process that started it: a grading process killed with SIGKILL (its
    server killed, say) reaps nothing, and this launcher would keep its kernel running."""
    if not sys.platform.startswith("linux"):
        return
    try:
        autograder_isolation.die_with_parent(signal.SIGKILL)
    except OSError:
        return
    grader = os.environ.get("JPY_PARENT_PID", "")  # jupyter_client's launch_kernel sets it
    if grader.isdigit() and os.getppid() != int(grader):
        os._exit(0)  # the grading process died before the line above


if __name__ == "__main__":
    if sys.argv[1:] == ["--zygote"]:
        zygote()
    else:
        die_with_the_grader()
        main()
