"""Reading a zip or tar(.gz) upload into plain members, safely.

Nothing here trusts an archive's own account of itself: sizes are counted while
the bytes are read (a zip bomb stops at the cap, before memory runs out), the
number of members is bounded before zipfile parses its directory, and members
that are links, devices or names that escape the root are refused by name.
Nothing is ever written to disk.
"""

from __future__ import annotations

import gzip
import io
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from typing import IO, Any

from django.conf import settings

CHUNK = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")


class ArchiveProblem(Exception):
    """The archive, or one member (`member`), cannot be accepted."""

    def __init__(self, message: str, *, member: str | None = None) -> None:
        super().__init__(message)
        self.member = member


@dataclass(frozen=True)
class Member:
    name: str  # as the archive spells it, "/"-separated, no leading "./"
    data: bytes
    executable: bool = False
    is_dir: bool = False


@dataclass(frozen=True)
class Limits:
    total_bytes: int
    member_bytes: int
    members: int

    @classmethod
    def from_settings(cls) -> Limits:
        # Room for the tree's files, hidden tests, patches, task.json and directories.
        return cls(
            total_bytes=settings.TASKS_REPO_MAX_ARCHIVE_BYTES,
            member_bytes=max(settings.TASKS_REPO_MAX_FILE_BYTES, settings.TASKS_MAX_CODE_BYTES),
            members=2 * settings.TASKS_REPO_MAX_FILES + 1000,
        )


def read_members(data: bytes, *, limits: Limits | None = None) -> list[Member]:
    """Every member of a zip, tar or tar.gz archive, its bytes read under the limits."""
    limits = limits or Limits.from_settings()
    if data.startswith(ZIP_MAGICS):
        return _read_zip(data, limits)
    if data.startswith(GZIP_MAGIC):
        return _read_tar(gzip.GzipFile(fileobj=io.BytesIO(data)), limits)
    if len(data) >= 262 and data[257:262] == b"ustar":
        return _read_tar(io.BytesIO(data), limits)
    raise ArchiveProblem("Not a zip, tar or tar.gz archive (the first bytes match none of them).")


def check_member_name(raw: str) -> str:
    """The member's name without a leading `./`; ArchiveProblem if it could land outside the root."""
    if "\x00" in raw:
        raise ArchiveProblem("The member name contains a NUL character.", member=raw)
    if "\\" in raw:
        raise ArchiveProblem("The member name contains a backslash; archives use / between directories.", member=raw)
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
        raise ArchiveProblem("The member has an absolute path.", member=raw)
    if ".." in raw.split("/"):
        raise ArchiveProblem("The member's path contains '..'.", member=raw)
    name = raw
    while name.startswith("./"):
        name = name[2:]
    return name


class _Counter:
    """Counts the bytes of the whole archive as they are read."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.total = 0
        self.members = 0

    def member(self, name: str) -> None:
        self.members += 1
        if self.members > self.limits.members:
            raise ArchiveProblem(f"The archive has more than {self.limits.members} members.", member=name)

    def read(self, stream: IO[bytes], name: str) -> bytes:
        parts, size = [], 0
        while chunk := stream.read(CHUNK):
            size += len(chunk)
            self.total += len(chunk)
            if size > self.limits.member_bytes:
                raise ArchiveProblem(
                    f"The member is larger than {self.limits.member_bytes} bytes uncompressed.", member=name
                )
            if self.total > self.limits.total_bytes:
                raise ArchiveProblem(
                    f"The archive is larger than {self.limits.total_bytes} bytes uncompressed "
                    "(TASKS_REPO_MAX_ARCHIVE_BYTES).",
                    member=name,
                )
            parts.append(chunk)
        return b"".join(parts)


# -- zip ------------------------------------------------------------------------------------


def _zip_entry_count(data: bytes) -> int | None:
    """The entry count the end-of-central-directory record states (zip64 included), read
    before zipfile builds an object per entry; None if there is no such record."""
    tail_start = max(0, len(data) - (65535 + 22))
    at = data.rfind(b"PK\x05\x06", tail_start)
    if at < 0 or at + 22 > len(data):
        return None
    (count,) = struct.unpack("<H", data[at + 10 : at + 12])
    locator = at - 20
    if count == 0xFFFF and locator >= 0 and data[locator : locator + 4] == b"PK\x06\x07":
        (offset,) = struct.unpack("<Q", data[locator + 8 : locator + 16])
        if data[offset : offset + 4] == b"PK\x06\x06" and offset + 40 <= len(data):
            (count,) = struct.unpack("<Q", data[offset + 32 : offset + 40])
    return count


def _read_zip(data: bytes, limits: Limits) -> list[Member]:
    count = _zip_entry_count(data)
    if count is not None and count > limits.members:
        raise ArchiveProblem(f"The archive has {count} members; the limit is {limits.members}.")
    counter = _Counter(limits)
    members = []
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                counter.member(info.filename)
                name = check_member_name(info.filename)
                mode = info.external_attr >> 16
                kind = stat.S_IFMT(mode)
                if kind == stat.S_IFLNK:
                    raise ArchiveProblem("The member is a symbolic link; links are not allowed.", member=name)
                if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                    raise ArchiveProblem("The member is not a regular file or a directory.", member=name)
                if info.flag_bits & 0x1:
                    raise ArchiveProblem("The member is encrypted.", member=name)
                if info.is_dir():
                    members.append(Member(name, b"", is_dir=True))
                    continue
                with archive.open(info) as stream:
                    body = counter.read(stream, name)
                members.append(Member(name, body, executable=bool(mode & 0o111)))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, NotImplementedError) as exc:
        raise ArchiveProblem(f"The zip archive is corrupt or unsupported: {exc}.") from exc
    return members


# -- tar ------------------------------------------------------------------------------------


class _Bounded(io.RawIOBase):
    """A stream that refuses to hand out more than `limit` bytes: tarfile reads some
    headers (pax, GNU long names) whole into memory, so their size is bounded here."""

    def __init__(self, inner: Any, limit: int) -> None:
        self.inner, self.left = inner, limit

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        want = self.left + 1 if size is None or size < 0 else min(size, self.left + 1)
        chunk = self.inner.read(want)
        self.left -= len(chunk)
        if self.left < 0:
            raise ArchiveProblem("The archive is larger than the limit uncompressed.")
        return chunk


def _read_tar(stream: Any, limits: Limits) -> list[Member]:
    # Each member costs at least one 512-byte header beside its data.
    bounded = _Bounded(stream, limits.total_bytes + 1024 * (limits.members + 1))
    counter = _Counter(limits)
    members = []
    try:
        with tarfile.open(fileobj=bounded, mode="r|") as archive:
            for info in archive:
                counter.member(info.name)
                name = check_member_name(info.name)
                if info.issym():
                    raise ArchiveProblem("The member is a symbolic link; links are not allowed.", member=name)
                if info.islnk():
                    raise ArchiveProblem("The member is a hard link; links are not allowed.", member=name)
                if info.isdir():
                    members.append(Member(name.rstrip("/"), b"", is_dir=True))
                    continue
                if not info.isreg():
                    raise ArchiveProblem("The member is a device, a FIFO or another special file.", member=name)
                if info.size > limits.member_bytes:
                    raise ArchiveProblem(f"The member is larger than {limits.member_bytes} bytes.", member=name)
                extracted = archive.extractfile(info)
                body = counter.read(extracted, name) if extracted else b""
                members.append(Member(name, body, executable=bool(info.mode & 0o111)))
    except ArchiveProblem:
        raise
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise ArchiveProblem(f"The tar archive is corrupt or unsupported: {exc}.") from exc
    return members
