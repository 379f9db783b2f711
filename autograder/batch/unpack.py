"""An LMS's submissions zip, graded as it comes: ``bpe-labs grade submissions.zip``.

Canvas (*Download Submissions*) and Moodle (*Download all submissions*) hand the instructor one zip.
It is unpacked into ``OUT/unpacked/<zip name>/``, under the names the LMS wrote (grading/identity.py
reads the student from them), and that folder is graded. Unpacking with ``python -m zipfile -e``
turned
``María José Núñez_501_…`` into ``Mar├¡a Jos├⌐ N├║├▒ez_501_…``: a zip without the UTF-8 flag holds
the names' bytes as the LMS wrote them, and Python reads those as cp437. Here a name is decoded as
the zip says:

* the UTF-8 flag (general purpose bit 11): UTF-8;
* else Info-ZIP's Unicode Path field (0x7075), which carries the UTF-8 name beside the old one;
* else the bytes as UTF-8 when they are valid UTF-8 (what Canvas and Moodle write without the flag;
  a cp437 name with accents is practically never valid UTF-8), else cp437, the format's own;
* control characters and bytes that are no text: escaped (grading/names.py), never written as they
are.

A zip inside the zip (a student who handed in a zip) is unpacked too: its notebooks take the outer
file's name as a prefix (``jdoe_101_9001_lab.zip`` holding ``toy_bpe.ipynb`` gives
``jdoe_101_9001_lab_toy_bpe.ipynb``), so that the LMS's prefix still names the student. Nothing is
written outside the folder (``..`` and absolute paths are dropped), and the cost is bounded before
anything is written: at most :data:`MAX_MEMBERS` entries and :data:`MAX_BYTES` unpacked.
"""
from __future__ import annotations

import io
import shutil
import struct
import tempfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from autograder.grading.folder import NothingToGrade
from autograder.grading.names import escaped

UTF8_FLAG = 0x800
UNICODE_PATH_FIELD = 0x7075
MAX_MEMBERS = 20_000
MAX_BYTES = 4 * 1024**3  # unpacked, nested zips included
MAX_DEPTH = 3  # a zip in a zip in a zip
SKIPPED = ("__MACOSX",)


class BadArchive(NothingToGrade):
    """The zip cannot be unpacked (damaged, too large, or no notebook in it); the message says
    what to do."""


def _unicode_path(info: zipfile.ZipInfo) -> str | None:
    """The UTF-8 name of Info-ZIP's Unicode Path extra field, if the entry has one that matches
    its name."""
    extra = info.extra
    while len(extra) >= 4:
        kind, size = struct.unpack("<HH", extra[:4])
        body, extra = extra[4:4 + size], extra[4 + size:]
        if kind == UNICODE_PATH_FIELD and len(body) >= 5 and body[0] == 1:
            (crc,) = struct.unpack("<I", body[1:5])
            if crc == zlib.crc32(_raw_name(info)):
                try:
                    return body[5:].decode("utf-8")
                except UnicodeDecodeError:
                    return None
    return None


def _raw_name(info: zipfile.ZipInfo) -> bytes:
    """The name's bytes as the zip holds them (zipfile decoded them as UTF-8 or cp437)."""
    if info.flag_bits & UTF8_FLAG:
        return info.orig_filename.encode("utf-8", "surrogateescape")
    return info.orig_filename.encode("cp437")


def decoded_name(info: zipfile.ZipInfo) -> str:
    """The entry's name as the zip says to read it (see the module's text), control characters
    escaped.

    >>> info = zipfile.ZipInfo("Mar\\u00eda_501_assignsubmission_file_toy_bpe.ipynb")
    >>> info.flag_bits |= UTF8_FLAG
    >>> decoded_name(info)
    'María_501_assignsubmission_file_toy_bpe.ipynb'
    """
    raw = _raw_name(info)
    if info.flag_bits & UTF8_FLAG:
        name = raw.decode("utf-8", "surrogateescape")
    else:
        name = _unicode_path(info) or ""
        if not name:
            try:
                name = raw.decode("utf-8")
            except UnicodeDecodeError:
                name = raw.decode("cp437")
    return escaped(name)


def _safe_parts(name: str) -> list[str]:
    """The path's parts, without ``..``, ``.``, empty parts or a drive: never outside the folder."""
    parts = [part for part in PurePosixPath(name.replace("\\", "/")).parts
             if part not in ("", ".", "..", "/") and not part.endswith(":")]
    return [part[:200] for part in parts]


class _Budget:
    def __init__(self) -> None:
        self.members, self.bytes = 0, 0

    def take(self, info: zipfile.ZipInfo, where: str) -> None:
        self.members += 1
        self.bytes += info.file_size
        if self.members > MAX_MEMBERS or self.bytes > MAX_BYTES:
            raise BadArchive(
                f"{where} holds more than {MAX_MEMBERS} files or {MAX_BYTES // 1024**3} GB "
                "unpacked: unpack it yourself and grade the folder"
            )


def _unpack(archive: zipfile.ZipFile, into: Path, prefix: list[str], budget: _Budget,
            depth: int, where: str) -> None:
    for info in archive.infolist():
        if info.is_dir():
            continue
        parts = _safe_parts(decoded_name(info))
        if not parts or parts[0] in SKIPPED or parts[-1].startswith("._"):
            continue
        budget.take(info, where)
        if prefix:  # inside a nested zip: the outer file's name first, in one flat name
            parts = prefix[:-1] + [f"{prefix[-1]}_{'_'.join(parts)}"]
        target = into.joinpath(*parts)
        with archive.open(info) as member:
            data = member.read(MAX_BYTES - budget.bytes + info.file_size + 1)
        if parts[-1].lower().endswith(".zip") and depth < MAX_DEPTH:
            try:
                with zipfile.ZipFile(io.BytesIO(data)) as inner:
                    _unpack(inner, into, parts[:-1] + [parts[-1][:-4]], budget, depth + 1, where)
                continue
            except zipfile.BadZipFile:
                pass  # kept as it is: its row says it could not be opened
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def unpack_submissions(zip_path: Path, out_dir: Path) -> Path:
    """``zip_path`` unpacked into ``OUT/unpacked/<its name>/`` (what was there before is replaced:
    an unchanged file is graded again only if it changed, resume.py); that folder. Raises
    :class:`BadArchive` before anything is written to OUT for a zip that cannot be read, is too
    large, or holds no notebook."""
    zip_path = Path(zip_path)
    target = Path(out_dir) / "unpacked" / zip_path.stem
    staging = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=_existing_parent(Path(out_dir))))
    try:
        try:
            with zipfile.ZipFile(zip_path) as archive:
                _unpack(archive, staging, [], _Budget(), 1, str(zip_path))
        except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError) as error:
            raise BadArchive(f"{zip_path} could not be unpacked ({error}): download it again "
                             "from the LMS") from None
        if not any(path.suffix.lower() == ".ipynb" for path in staging.rglob("*")):
            raise BadArchive(f"{zip_path} holds no notebook (.ipynb): is it the assignment's "
                             "submissions download?")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _existing_parent(path: Path) -> Path:
    """``path``, or its nearest existing parent (a staging folder on the same file system)."""
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return path
