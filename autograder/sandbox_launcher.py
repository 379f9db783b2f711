"""Start an IPython kernel for grading, inside limits the student's code cannot lift.

Copied next to the kernel's connection file and run as a script (so the kernel never has the
autograder package on its path). Before the kernel starts it:

* caps the address space (``RLIMIT_AS``), so a memory blow-up raises ``MemoryError`` or ends this
  kernel, never the grader;
* installs an audit hook (``sys.addaudithook``: it cannot be removed from Python) that refuses
  to open or list files of the course (solutions, hidden tests, reference code, other
  submissions, the gradebook), to start processes, and to signal any process but itself.

This is a fence against a student reading the answers or crashing the grader, not a security
boundary against native code (``ctypes``); run graders in containers for that.
"""
import json
import os
import resource
import sys


def _inside(path, roots):
    return any(path == root or path.startswith(root + os.sep) for root in roots)


def main():
    settings = json.loads(os.environ.pop("BPE_LABS_SANDBOX"))
    memory = int(settings["memory_bytes"])
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    denied = [os.path.realpath(p) for p in settings["denied"]]
    allowed = [os.path.realpath(p) for p in settings["allowed"]]
    own_pid = os.getpid()

    def refuse(what):
        raise PermissionError(f"not allowed while grading: {what}")

    def audit(event, args):
        if event in ("open", "os.listdir", "os.scandir", "os.chdir", "os.remove", "os.rename", "shutil.rmtree"):
            target = args[0] if args else None
            if isinstance(target, int) or target is None:
                return
            if isinstance(target, bytes):
                target = os.fsdecode(target)
            path = os.path.realpath(os.path.join(os.getcwd(), os.fspath(target)))
            if _inside(path, denied) and not _inside(path, allowed):
                refuse(f"{event} {target}")
            if path.startswith("/proc/") and not path.startswith(("/proc/self", f"/proc/{own_pid}")):
                refuse(f"{event} {target}")
        elif event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "pty.spawn"):
            refuse(event)
        elif event in ("os.kill", "os.killpg") and args and args[0] not in (own_pid, 0):
            refuse(event)

    sys.addaudithook(audit)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]

    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
