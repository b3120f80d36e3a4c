from __future__ import annotations

import re
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from tasks_app.highlighting import HIGHLIGHT_MAX_CHARS, highlight_code
from tasks_app.markdown import render_markdown
from tests.factories import make_task


def text_of(html: str) -> str:
    """The page's text: its tags gone and its entities read back."""
    return unescape(re.sub(r"<[^>]+>", "", html))


def test_markdown_keeps_formatting_code_and_tables():
    html = render_markdown(
        "# Title\n\n```python\nprint(1)\n```\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n[docs](https://example.org)"
    )
    assert "<h1>Title</h1>" in html
    assert '<code class="language-python">print(1)' in html
    assert "<table>" in html and '<td style="text-align:right">2</td>' in html
    assert '<a href="https://example.org" rel="noopener noreferrer nofollow">docs</a>' in html


def test_markdown_strips_scripts_event_handlers_and_javascript_links():
    html = render_markdown(
        "Hi <script>alert('x')</script>\n\n<img src=x onerror=alert(1)>\n\n"
        '[click](javascript:alert(1)) <a href="JaVaScRiPt:alert(2)">b</a> <p onclick="x()" style="color:red">p</p>'
        '\n\n<iframe src="https://evil.test"></iframe>'
    )
    lowered = html.lower()
    assert "<script" not in lowered and "alert('x')" not in lowered
    assert "onerror" not in lowered and "onclick" not in lowered and "<img" not in lowered
    assert "javascript:" not in lowered and "<iframe" not in lowered and "color:red" not in lowered


def test_the_detail_page_renders_the_statement_as_sanitised_html(client_for, curator):
    make_task(owner=curator, statement="Use **bold**. <script>steal()</script>")
    response = client_for(curator).get(reverse("ui:task-detail", args=["add-two"]))
    html = response.content.decode()
    assert "<strong>bold</strong>" in html
    assert "steal()" not in html


def test_the_detail_page_shows_tests_solutions_limits_hash_and_history(client_for, curator):
    task = make_task(owner=curator)
    html = client_for(curator).get(reverse("ui:task-detail", args=["add-two"])).content.decode()
    assert "assert add(1, 2) == 3" in html
    assert "<details>" in html and "assert add(10, 5) == 15" in html.split("<details>")[1]
    assert "return a + b + 1" in text_of(html) and "off-by-one" in html
    assert '<span class="hl-k">return</span>' in html  # the solutions are highlighted in their language
    assert "5 s wall time, 128 MB memory" in html
    assert task.latest_version.content_hash in html
    assert "Created." in html  # the first audit record


def test_posts_without_a_csrf_token_are_refused(curator):
    task = make_task(owner=curator)
    client = Client(enforce_csrf_checks=True)
    client.force_login(curator)
    response = client.post(reverse("ui:task-transition", args=[task.slug]), {"to_state": "submitted"})
    assert response.status_code == 403
    task.refresh_from_db()
    assert task.state == "draft"


def test_the_base_layout_has_the_navigation_for_the_roles(client_for, admin_user):
    admin_user.is_staff = True
    admin_user.save()
    html = client_for(admin_user).get(reverse("ui:task-list")).content.decode()
    for expected in ("New task", "Review queue", "/api/v1/docs/", "Admin", "Log out", '<main id="main"'):
        assert expected in html
    assert 'action="/accounts/logout/"' in html


@pytest.mark.parametrize(
    ("language", "source", "keyword"),
    [("cpp17", "int main() { return 0; }\n", "int"), ("go", "package main\n\nfunc main() {}\n", "func"),
     ("rust", "fn main() {}\n", "fn"), ("java", "public class Main {}\n", "public"),
     ("php", "<?php\necho 1;\n", "echo"), ("csharp", "class P { static void Main() {} }\n", "class")],
)  # fmt: skip
def test_code_is_highlighted_in_its_language(language, source, keyword):
    html = str(highlight_code(source, language))
    assert f'data-language="{language}"' in html and f">{keyword}</span>" in html
    assert text_of(html) == source


def test_highlighted_code_is_escaped_and_a_huge_or_unknown_source_is_plain():
    hostile = '</code></pre><script>alert(1)</script>\nx = "<b>"\n'
    html = str(highlight_code(hostile, "python"))
    assert "<script>" not in html and "<b>" not in html and text_of(html) == hostile
    assert 'class="code">' in str(highlight_code("x" * (HIGHLIGHT_MAX_CHARS + 1), "python"))
    assert str(highlight_code("<x>", "cobol")) == '<pre><code class="code">&lt;x&gt;</code></pre>'
