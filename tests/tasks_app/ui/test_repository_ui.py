"""Repository tasks in the curator UI: archive uploads, the version page (tree, tests,
hidden files, patches as side-by-side diffs) and the diff between two versions."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tasks_app.models import Task
from tests.tasks_app import repository_sample as sample
from tests.tasks_app.api.test_repository_api import SLUG, changed_members

pytestmark = pytest.mark.django_db


def upload_sample(client) -> None:
    response = client.post(reverse("ui:archive-create"), {"archive": SimpleUploadedFile("t.zip", sample.zip_bytes())})
    assert response.status_code == 302


def test_an_archive_uploaded_in_the_ui_lands_on_its_version_page(curator, client_for):
    client = client_for(curator)
    page = client.get(reverse("ui:archive-create"))
    assert page.status_code == 200 and b'enctype="multipart/form-data"' in page.content
    response = client.post(reverse("ui:archive-create"), {"archive": SimpleUploadedFile("t.zip", sample.zip_bytes())})
    assert response.status_code == 302
    assert response["Location"] == reverse("ui:version-detail", args=[SLUG, 1])


def test_a_bad_archive_in_the_ui_shows_the_member_at_fault(curator, client_for):
    entries = {**sample.members(), "repo/.git/HEAD": b"ref: refs/heads/main\n"}
    client = client_for(curator)
    response = client.post(
        reverse("ui:archive-create"), {"archive": SimpleUploadedFile("t.zip", sample.zip_bytes(entries))}
    )
    assert response.status_code == 400
    assert b"repo/.git/HEAD" in response.content and Task.objects.count() == 0


def test_the_version_page_shows_the_tree_the_tests_the_hidden_files_and_the_patches_as_diffs(curator, client_for):
    client = client_for(curator)
    upload_sample(client)
    html = client.get(reverse("ui:version-detail", args=[SLUG, 1])).content.decode()
    for path in ("textstats/words.py", "assets/logo.png", "scripts/run_tests.sh", "tests/test_words.py"):
        assert f"<code>{path}</code>" in html
    assert f"{len(sample.members()['repo/textstats/words.py'])} bytes" in html
    for node in sample.task_meta()["fail_to_pass"] + sample.task_meta()["pass_to_pass"]:
        assert node in html
    assert "<code>tests/test_whitespace.py</code>" in html and "def test_counts_words_across_newlines_and_tabs" in html
    assert "python -m compileall -q textstats" in html
    # The reference as a side-by-side diff: the old line removed-or-changed left, the fix right.
    assert 'class="diff-replace"' in html and "return text.split()" in html
    assert "special-cases" in html and "badge-role-adversarial" in html
    assert "protected</span>" in html  # tests/test_words.py is protected by default


def test_the_diff_between_two_versions_shows_the_manifest_tests_and_hidden_files_that_changed(curator, client_for):
    client = client_for(curator)
    upload_sample(client)
    response = client.post(
        reverse("ui:archive-version", args=[SLUG]),
        {"archive": SimpleUploadedFile("t.tgz", sample.tar_bytes(changed_members())), "base_number": "1"},
    )
    assert response.status_code == 302
    html = client.get(reverse("ui:version-diff", args=[SLUG]) + "?left=1&right=2").content.decode()
    assert "File tree (manifest)" in html and "CHANGES.md" in html
    assert "Tests that must keep passing (pass_to_pass)" in html and "test_it_is_new" in html
    assert "Hidden test file tests/test_whitespace.py" in html
    assert "<strong>Patch reference (reference)</strong>: unchanged" in html


def test_the_edit_button_of_a_repository_task_leads_to_the_archive_upload(curator, client_for):
    client = client_for(curator)
    upload_sample(client)
    assert client.get(reverse("ui:task-edit", args=[SLUG]))["Location"] == reverse("ui:archive-version", args=[SLUG])
    assert (
        reverse("ui:archive-version", args=[SLUG]).encode()
        in client.get(reverse("ui:task-detail", args=[SLUG])).content
    )


def test_a_trainer_cannot_upload_an_archive(trainer, client_for):
    response = client_for(trainer).post(reverse("ui:archive-create"), {"archive": SimpleUploadedFile("t.zip", b"")})
    assert response.status_code == 403
