"""What a repository version's page shows, gathered once for the template."""

from __future__ import annotations

from typing import Any

from django import template

from tasks_app.diff import patch_files
from tasks_app.repository.content import RepositoryContent
from tasks_app.repository.paths import is_protected

register = template.Library()


@register.simple_tag
def repository_view(version: Any) -> dict[str, Any]:
    """The tree listing (protected files marked), the tests, and each patch split into
    files of side-by-side rows. No file bytes: the listing is the manifest."""
    repo = RepositoryContent.from_stored(version.repository)
    files = [
        {
            "path": f.path,
            "size": f.size,
            "executable": f.executable,
            "protected": is_protected(f.path, repo.protected_paths),
        }
        for f in repo.files
    ]
    patches = [
        {"solution": s, "files": patch_files(s.code)}
        for s in sorted(version.solutions.all(), key=lambda s: (s.role, s.label))
    ]
    return {
        "files": files,
        "total_bytes": repo.total_bytes,
        "setup_commands": repo.setup_commands,
        "fail_to_pass": repo.fail_to_pass,
        "pass_to_pass": repo.pass_to_pass,
        "hidden_test_files": repo.hidden_test_files,
        "protected_paths": repo.protected_paths,
        "patches": patches,
    }
