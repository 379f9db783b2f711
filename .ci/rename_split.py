"""Rewrite old module paths and variable names after the engine/course split (issue 13).

The split moved the BPE course out of the engine: ``autograder.reference`` ->
``bpe_labs.reference``, ``autograder.standins``, ``.hidden``, ``.build``,
``.examples``, ``.solutions`` likewise; the course guard from ``autograder.course``
to ``autograder.batch.guard``; and the engine's environment variables ``BPE_LABS_*``
-> ``AUTOGRADER_*`` (the course's own, BPE_LABS_DATA and BPE_LABS_HOME, stay). Run
it again after merging a branch that still uses the old names: it is idempotent, and
touches only files git tracks (plus new untracked ones), never this script.

Usage: python .ci/rename_split.py [--check]
(from the repository root; --check lists, changes nothing)
"""
import re
import subprocess
import sys
from pathlib import Path

MODULES = ("reference", "standins", "hidden", "build", "examples", "solutions")
ENGINE_VARIABLES = ("ISOLATION", "ZYGOTE", "SANDBOX", "RESUME_KEY", "GRADESCOPE_ROOT", "VENV")

RULES = [
    # dotted module paths in imports, notebook metadata ("references"), docs; slashed file paths
    *[(rf"\bautograder\.{name}\b", f"bpe_labs.{name}") for name in MODULES],
    *[(rf"\bautograder/{name}\b", f"bpe_labs/{name}") for name in MODULES],
    # pathlib paths in tests
    *[(rf'"autograder" / "{name}(?=(\.py)?")', f'"bpe_labs" / "{name}') for name in MODULES],
    # the engine's environment variables
    *[(rf"\bBPE_LABS_{name}\b", f"AUTOGRADER_{name}") for name in ENGINE_VARIABLES],
    # the course guard moved from autograder/course.py
    # (now the Course object) to autograder/batch/guard.py
    (
        r"\bfrom autograder\.course import "
        r"(?=(CourseChanged|CourseGuard|course_files|fingerprint|digest)\b)",
        "from autograder.batch.guard import ",
    ),
    # engine-internal names that said "BPE"
    (r"\bbpe_labs_student\b", "autograder_student"),
    (r"\b_bpe_labs_codec\b", "_autograder_codec"),
    (r"\bbpe_isolation\b", "autograder_isolation"),
    (r"\bbpe_preload\b", "autograder_preload"),
    (r"\bbpe-labs-sandbox\b", "autograder-sandbox"),
    (r"/opt/bpe-labs-venv\b", "/opt/autograder-venv"),
    (r"\bbpe-labs (sandbox|zygote):", r"autograder \1:"),
    (r"bpe-labs-stand-in\b", "autograder-stand-in"),  # after "\\x00" in codec.py: no word boundary
]
# The checkout's root is the course's now: tests, benchmarks and CI scripts take it from there (the
# engine has no root of its own: it gets the course's folders from the Course object).
OUTSIDE_ENGINE = [
    (
        r"from autograder import REPO_ROOT, (.+)",
        r"from bpe_labs import ROOT as REPO_ROOT\nfrom autograder import \1",
    ),
    (r"from autograder import REPO_ROOT$", "from bpe_labs import ROOT as REPO_ROOT"),
]
SUFFIXES = {".py", ".ipynb", ".md", ".yml", ".yaml", ".toml", ".txt", ".cfg", ".sh", ""}
SKIP = {Path(".ci/rename_split.py")}


def files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    return [Path(name) for name in listed
            if Path(name).suffix in SUFFIXES and Path(name) not in SKIP and Path(name).is_file()
            and not Path(name).is_symlink()]


def rewrite(text: str, path: Path = Path()) -> str:
    rules = RULES if path.parts[:1] == ("autograder",) else RULES + OUTSIDE_ENGINE
    for pattern, replacement in rules:
        text = re.sub(pattern, replacement, text, flags=re.M)
    return text


def main(check: bool) -> int:
    changed = []
    for path in files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        new = rewrite(text, path)
        if new != text:
            changed.append(path)
            if not check:
                path.write_text(new, encoding="utf-8")
    for path in changed:
        print(f"{'would rewrite' if check else 'rewrote'} {path}")
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv[1:]))
