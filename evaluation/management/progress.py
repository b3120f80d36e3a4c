"""The progress bar the long-running commands draw on standard error."""

from __future__ import annotations

from typing import TextIO


def progress_bar(stream: TextIO, done: int, total: int, unit: str, width: int = 40) -> None:
    filled = width * done // total if total else width
    stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {unit}")
    if done >= total:
        stream.write("\n")
    stream.flush()
