"""The content-addressed store of repository files: each distinct file's bytes once."""

from __future__ import annotations

from collections.abc import Mapping

from tasks_app.models import Blob

# Digests looked up per query, well under PostgreSQL's parameter limit.
LOOKUP_CHUNK = 1000


def blobs_store(*, blobs: Mapping[str, bytes]) -> int:
    """Store the bytes not stored yet, keyed by SHA-256 (the caller computed the keys from
    these very bytes). Bytes already held are not sent again. Returns how many were new."""
    digests = sorted(blobs)
    held: set[str] = set()
    for start in range(0, len(digests), LOOKUP_CHUNK):
        chunk = digests[start : start + LOOKUP_CHUNK]
        held.update(Blob.objects.filter(sha256__in=chunk).values_list("sha256", flat=True))
    missing = [Blob(sha256=d, size=len(blobs[d]), data=blobs[d]) for d in digests if d not in held]
    # ignore_conflicts: a concurrent upload of the same file is the same row.
    Blob.objects.bulk_create(missing, ignore_conflicts=True, batch_size=200)
    return len(missing)
