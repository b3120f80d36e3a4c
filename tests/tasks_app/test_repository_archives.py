"""Reading repository-task archives safely: the layout, links, escapes, caps and bombs."""

from __future__ import annotations

import io
import json
import tarfile
import tracemalloc
import zipfile

import pytest

from tasks_app.content import VersionContent
from tasks_app.errors import ValidationFailed
from tasks_app.repository.archive import archive_task
from tasks_app.services.repository import archive_content
from tests.tasks_app import repository_sample as sample


def refused(data: bytes) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as caught:
        archive_content(archive_task(data))
    return caught.value


def member_key(name: str) -> str:
    return f"archive[{json.dumps(name)}]"


def tar_with(extra: tarfile.TarInfo, data: bytes = b"") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, body in sample.members().items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
        archive.addfile(extra, io.BytesIO(data) if data else None)
    return out.getvalue()


def test_zip_tar_gz_plain_tar_and_a_wrapping_directory_all_give_the_same_version():
    expected = VersionContent.parse(sample.content_data()).content_hash()
    for data in (
        sample.zip_bytes(),
        sample.tar_bytes(),
        sample.tar_bytes(gz=False),
        sample.tar_bytes(prefix="textstats-task/"),
    ):
        laid_out = archive_task(data)
        assert laid_out.slug == "textstats-whitespace"
        assert VersionContent.parse(laid_out.content).content_hash() == expected


def test_the_executable_bit_and_binary_files_survive_the_archive():
    content = VersionContent.parse(archive_task(sample.zip_bytes()).content)
    manifest = content.repository.manifest()
    assert manifest["scripts/run_tests.sh"]["executable"] is True
    assert content.repository.blobs[manifest["assets/logo.png"]["sha256"]].startswith(b"\x89PNG")


def test_hidden_tests_stay_out_of_the_tree():
    content = VersionContent.parse(archive_task(sample.zip_bytes()).content)
    assert "tests/test_whitespace.py" not in content.repository.manifest()
    assert dict(content.repository.hidden_test_files)["tests/test_whitespace.py"].startswith("from textstats")


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("/etc/passwd", "absolute"),
        ("../evil.py", "'..'"),
        ("repo/../../evil.py", "'..'"),
        ("repo/.git/config", ".git"),
        ("stray.txt", "Not part of the layout"),
        ("patches/other.diff", "Not part of the layout"),
    ],
)
def test_it_refuses_a_bad_member_name_naming_the_member(name, words):
    entries = {**sample.members(), name: b"x = 1\n"}
    for data in (sample.zip_bytes(entries), sample.tar_bytes(entries)):
        error = refused(data)
        assert any(words in " ".join(m) for m in error.details.values()), error.details
        assert name.lstrip("./") in error.message or name in error.message


@pytest.mark.parametrize(
    ("kind", "words"),
    [(tarfile.SYMTYPE, "symbolic link"), (tarfile.LNKTYPE, "hard link"), (tarfile.CHRTYPE, "device")],
)
def test_it_refuses_links_and_devices_in_a_tar(kind, words):
    info = tarfile.TarInfo("repo/textstats/link.py")
    info.type = kind
    info.linkname = "/etc/passwd"
    error = refused(tar_with(info))
    assert words in " ".join(error.details[member_key("repo/textstats/link.py")])


def test_it_refuses_a_symlink_in_a_zip():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, body in sample.members().items():
            archive.writestr(name, body)
        link = zipfile.ZipInfo("repo/escape")
        link.external_attr = 0o120777 << 16
        archive.writestr(link, "/etc/passwd")
    error = refused(out.getvalue())
    assert "symbolic link" in " ".join(error.details[member_key("repo/escape")])


def test_a_zip_bomb_is_refused_at_the_cap_without_reading_it_into_memory(settings):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("repo/bomb.txt", "w", force_zip64=True) as member:
            zeros = bytes(1024 * 1024)
            for _ in range(400):  # 400 MB of zeros, under half a megabyte compressed
                member.write(zeros)
        for name, body in sample.members().items():
            archive.writestr(name, body)
    data = out.getvalue()
    assert len(data) < 1024 * 1024
    tracemalloc.start()
    try:
        error = refused(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "larger than" in " ".join(error.details[member_key("repo/bomb.txt")])
    assert peak < 64 * 1024 * 1024


def test_many_small_members_are_refused_at_the_cap(settings):
    settings.TASKS_REPO_MAX_FILES = 10  # the archive may then hold 1020 members
    entries = {**sample.members(), **{f"repo/many/{i}.txt": b"" for i in range(1100)}}
    assert "members" in refused(sample.zip_bytes(entries)).message
    assert "members" in refused(sample.tar_bytes(entries)).message


def test_the_total_uncompressed_size_is_counted_across_members(settings):
    settings.TASKS_REPO_MAX_ARCHIVE_BYTES = 2000
    entries = {**sample.members(), **{f"repo/pad/{i}.txt": b"y" * 300 for i in range(10)}}
    assert "larger than 2000 bytes uncompressed" in refused(sample.tar_bytes(entries)).message


def test_a_gzip_bomb_tar_is_refused_by_its_member_size():
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        info = tarfile.TarInfo("repo/huge.bin")
        info.size = 300 * 1024 * 1024
        archive.addfile(info, io.BytesIO(bytes(info.size)))
    error = refused(out.getvalue())
    assert "larger than" in " ".join(error.details[member_key("repo/huge.bin")])


def test_not_an_archive_corrupt_archives_and_a_missing_task_json_are_refused():
    assert "Not a zip" in refused(b"hello, world").message
    assert "corrupt" in refused(sample.zip_bytes()[:300]).message
    assert "corrupt" in refused(sample.tar_bytes()[:300]).message
    without = {k: v for k, v in sample.members().items() if k != "task.json"}
    assert "no task.json" in refused(sample.zip_bytes(without)).message


def test_task_json_problems_name_task_json_and_content_problems_name_the_member():
    entries = sample.members()
    meta = json.loads(entries["task.json"])
    assert (
        "task.json.surprise"
        in refused(sample.zip_bytes({**entries, "task.json": json.dumps({**meta, "surprise": 1}).encode()})).details
    )
    empty_f2p = json.dumps({**meta, "fail_to_pass": []}).encode()
    assert "task.json.fail_to_pass" in refused(sample.zip_bytes({**entries, "task.json": empty_f2p})).details
    broken = entries["patches/reference.diff"].replace(b'-    return text.split(" ")', b"-    return None")
    error = refused(sample.zip_bytes({**entries, "patches/reference.diff": broken}))
    assert "does not apply" in " ".join(error.details[member_key("patches/reference.diff")])


def test_a_file_listed_twice_is_refused():
    data = sample.tar_bytes({**sample.members(), "repo/./README.md": b"again"})
    assert "twice" in refused(data).message
