"""A Docker image per prepared environment, so that a session on Docker is a container
of that image and its tree is copy-on-write: the image's layer below, the container's
own writable layer above, which receives only what the session changes.

The image is the sandbox image with one layer more, holding the prepared tree twice:
- at /repo, the session's working tree, every file and directory writable by any uid.
  A session runs as a uid drawn when it starts (host-wide unique, as for bwrap), which
  no image can own files as; the container is that session's alone.
- at /base, read-only, as on bubblewrap: what a session's changes are read against for
  a fork or a verdict (harness/session_tree.py). Two copies cost the tree's size once
  more on disk, never in memory: containers share the image's page cache.
The same layer closes the sandbox image's other world-writable directories, so the
container's writable layer holds the tree's changes and nothing else (/tmp stays a
tmpfs), and tells git that /repo, owned by root, is the session's repository.

Built once per (environment, base image) and reused: tagged
taskplatform-session-env:<digest[:24]>, labelled with the environment's full digest,
the base image's id (a new base image makes a new image) and the cache it was built
for. Builders of one environment take turns on an flock in the environment's
directory, so two workers never build it twice. `prune_environment_images` removes
the images of environments a cache evicted, never one a container uses.
"""

from __future__ import annotations

import fcntl
import os
import socket
import stat
import tarfile
import tempfile
from collections import Counter
from io import BytesIO
from pathlib import Path
from typing import Any, BinaryIO

from evaluation.sandbox.docker_owners import LABEL
from evaluation.sandbox.errors import SandboxFailure
from evaluation.sandbox.sessions.environments import PreparedEnvironment

REPOSITORY = "taskplatform-session-env"
KIND = "session-environment"
KIND_LABEL = f"{LABEL}.kind"
ENVIRONMENT_LABEL = f"{LABEL}.environment"
BASE_LABEL = f"{LABEL}.base"
CACHE_LABEL = f"{LABEL}.cache"
WORKING_TREE = "repo"  # /repo: the supervisor's REPO
BASE_TREE = "base"  # /base: the supervisor's BASE
# The sandbox image's world-writable directories besides /tmp (a tmpfs in every session):
# made root's alone, or a session could fill the disk through them.
CLOSED_DIRECTORIES = ("var/tmp", "run/lock", "scratch")
# git refuses a repository another uid owns ("dubious ownership"); this one is the session's.
GIT_CONFIG = b"[safe]\n\tdirectory = /repo\n"
DOCKERFILE = "FROM {base}\nCOPY rootfs/ /\n"

counters: Counter[str] = Counter()  # built, reused: for the tests and the benchmark


def image_tag(digest: str) -> str:
    return f"{REPOSITORY}:{digest[:24]}"


def cache_label(root: Path) -> str:
    """Which cache an image was built for: its host and directory. Replicas that share an
    engine but not a file system (containers) each prune only their own images."""
    return f"{socket.gethostname()}:{Path(root).absolute()}"


def environment_image(client: Any, environment: PreparedEnvironment, base_image: str) -> str:
    """The id of `environment`'s image on `base_image` (an image id), built now if there
    is none. The caller holds the environment (`acquire`), so it is not evicted meanwhile."""
    tag = image_tag(environment.digest)
    found = _current(client, tag, environment.digest, base_image)
    if found is None:
        fd = os.open(environment.root / "image.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            found = _current(client, tag, environment.digest, base_image)  # built while we waited?
            if found is None:
                counters["built"] += 1
                return _build(client, environment, base_image, tag)
        finally:
            os.close(fd)
    counters["reused"] += 1
    return found


def _current(client: Any, tag: str, digest: str, base_image: str) -> str | None:
    import docker.errors

    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    labels = image.labels or {}
    if labels.get(ENVIRONMENT_LABEL) != digest or labels.get(BASE_LABEL) != base_image:
        return None  # another base image (or a digest prefix shared by chance): build it anew
    return image.id


def _build(client: Any, environment: PreparedEnvironment, base_image: str, tag: str) -> str:
    import docker.errors

    labels = {KIND_LABEL: KIND, ENVIRONMENT_LABEL: environment.digest, BASE_LABEL: base_image,
              CACHE_LABEL: cache_label(environment.root.parent)}  # fmt: skip
    # On disk, not in memory: a prepared tree may be hundreds of megabytes.
    with tempfile.TemporaryFile(prefix="session-env-context-") as context:
        write_context(context, environment.tree, base_image)
        context.seek(0)
        try:
            image, _log = client.images.build(fileobj=context, custom_context=True, tag=tag, labels=labels,
                                              rm=True, forcerm=True, pull=False, network_mode="none")  # fmt: skip
        except (docker.errors.BuildError, docker.errors.APIError) as exc:
            raise SandboxFailure(f"the environment's image could not be built: {exc}", anomaly="start_failed") from exc
    return image.id


def write_context(handle: BinaryIO, tree: Path, base_image: str) -> None:
    """The build context: a Dockerfile and rootfs/, copied over the base image's root."""
    with tarfile.open(fileobj=handle, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add_bytes(tar, "Dockerfile", DOCKERFILE.format(base=base_image).encode(), 0o644)
        _add_directory(tar, "rootfs", 0o755)
        made = {"rootfs"}
        for directory in (*CLOSED_DIRECTORIES, "etc"):
            parts = directory.split("/")
            for depth in range(1, len(parts) + 1):
                name = "rootfs/" + "/".join(parts[:depth])
                if name not in made:
                    _add_directory(tar, name, 0o755)
                    made.add(name)
        _add_bytes(tar, "rootfs/etc/gitconfig", GIT_CONFIG, 0o644)
        _add_tree(tar, tree, f"rootfs/{BASE_TREE}", writable=False)
        _add_tree(tar, tree, f"rootfs/{WORKING_TREE}", writable=True)


def _entry(name: str, kind: bytes, mode: int, mtime: float = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.mtime = int(mtime)
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _add_directory(tar: tarfile.TarFile, name: str, mode: int, mtime: float = 0) -> None:
    tar.addfile(_entry(name, tarfile.DIRTYPE, mode, mtime))


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    info = _entry(name, tarfile.REGTYPE, mode)
    info.size = len(data)
    tar.addfile(info, BytesIO(data))


def _add_tree(tar: tarfile.TarFile, root: Path, prefix: str, *, writable: bool) -> None:
    """`root` under `prefix`, in a stable order, links as links, every file as a file of
    its own (tarfile would make a second path to one inode a hard link, which would give
    /repo and /base one file, and one mode)."""
    _add_directory(tar, prefix, 0o777 if writable else 0o755, os.lstat(root).st_mtime)
    pending = [""]
    while pending:
        relative = pending.pop()
        with os.scandir(root / relative if relative else root) as scanner:
            entries = sorted(scanner, key=lambda entry: entry.name)
        for entry in entries:
            path = f"{relative}/{entry.name}" if relative else entry.name
            name = f"{prefix}/{path}"
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                _add_directory(tar, name, 0o777 if writable else 0o755, info.st_mtime)
                pending.append(path)
            elif stat.S_ISLNK(info.st_mode):
                link = _entry(name, tarfile.SYMTYPE, 0o777, info.st_mtime)
                link.linkname = os.readlink(entry.path)
                tar.addfile(link)
            elif stat.S_ISREG(info.st_mode):
                mode = info.st_mode & 0o777
                item = _entry(name, tarfile.REGTYPE, (mode | 0o666) if writable else mode, info.st_mtime)
                item.size = info.st_size
                with open(entry.path, "rb") as data:
                    tar.addfile(item, data)
            # fifos and sockets: a frozen tree has none a session could use


def prune_environment_images(client: Any, keep: set[str], *, cache: str | None = None) -> list[str]:
    """Remove the session-environment images (of `cache` only, a `cache_label`, when it
    is given) whose environment is not in `keep`, or that a newer build replaced; never
    one a container uses, running or not. Returns the digests of those removed."""
    wanted = [f"{KIND_LABEL}={KIND}"] + ([f"{CACHE_LABEL}={cache}"] if cache is not None else [])
    images = client.api.images(filters={"label": wanted})
    used = {container.get("ImageID") for container in client.api.containers(all=True)}
    removed = []
    for image in images:
        labels = image.get("Labels") or {}
        digest = labels.get(ENVIRONMENT_LABEL, "")
        current = image_tag(digest) in (image.get("RepoTags") or [])
        if (digest in keep and current) or image["Id"] in used:
            continue
        try:
            # Not forced: a container made since the list above keeps its image.
            client.api.remove_image(image["Id"])
        except Exception:  # noqa: S112 - in use after all, or removed by another host
            continue
        removed.append(digest)
    return removed
