"""The htmx behaviour in a real (headless) browser: what the test Client cannot show."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from tasks_app.models import State, Task
from tests.factories import make_task
from tests.tasks_app.ui.browser import Browser
from tests.tasks_app.ui.conftest import in_review

pytestmark = [
    pytest.mark.slow,
    # `make test` installs Chromium: a missing browser fails, unless TEST_ALLOW_MISSING=chromium.
    pytest.mark.chromium,
    # The live server runs in another thread, so these tests commit; serialized
    # rollback restores the role groups that a data migration created.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


@pytest.fixture
def browser_as(live_server: Any) -> Iterator[Any]:
    opened: list[Browser] = []

    def start(user: Any) -> Browser:
        client = Client()
        client.force_login(user)
        browser = Browser()
        opened.append(browser)
        browser.set_cookie(url=live_server.url, name="sessionid", value=client.cookies["sessionid"].value)
        return browser

    yield start
    for browser in opened:
        browser.close()


def test_typing_in_the_search_box_updates_the_results_in_place(browser_as, live_server, curator):
    make_task(owner=curator, slug="add-two", title="Add two numbers")
    make_task(owner=curator, slug="reverse-list", title="Reverse a list")
    browser = browser_as(curator)
    browser.open(live_server.url + "/")
    browser.evaluate("window.__same_page = true")
    browser.evaluate(
        "(() => { const q = document.getElementById('f-q'); q.value = 'reverse';"
        " q.dispatchEvent(new Event('input', {bubbles: true})); })()"
    )
    browser.wait_for("document.querySelectorAll('#results code.slug').length === 1")
    assert browser.evaluate("document.querySelector('#results code.slug').textContent") == "reverse-list"
    assert browser.evaluate("window.__same_page") is True  # no full reload happened
    assert "q=reverse" in browser.evaluate("location.search")  # the URL was pushed
    assert browser.evaluate("document.getElementById('result-count').textContent.trim()") == "1 task matches"
    assert browser.errors == []


def test_an_invalid_filter_from_htmx_shows_the_message_in_the_results(browser_as, live_server, curator):
    make_task(owner=curator)
    browser = browser_as(curator)
    browser.open(live_server.url + "/")
    browser.evaluate(
        "(() => { const s = document.getElementById('f-sort'); s.add(new Option('x', 'sideways'));"
        " s.value = 'sideways'; s.dispatchEvent(new Event('change', {bubbles: true})); })()"
    )
    message = browser.wait_for("document.querySelector('#results .banner-error')?.textContent")
    assert "Unknown sort 'sideways'" in message
    assert browser.evaluate("!!document.querySelector('header.site-header')")  # the page around it stays


def test_add_another_solution_appends_an_empty_row(browser_as, live_server, curator):
    browser = browser_as(curator)
    browser.open(live_server.url + "/new/")
    assert browser.evaluate("document.querySelectorAll('.solution-row').length") == 3
    browser.evaluate("document.getElementById('add-solution').click()")
    browser.wait_for("document.querySelectorAll('.solution-row').length === 4")
    assert browser.evaluate("location.pathname") == "/new/"
    assert browser.evaluate("document.getElementById('add-solution').getAttribute('hx-get')").endswith("index=4")
    browser.evaluate("document.getElementById('add-solution').click()")
    browser.wait_for("document.querySelectorAll('[name=\"solutions-4-code\"]').length === 1")


def test_code_fields_are_highlighted_in_the_tasks_language_as_the_curator_types(browser_as, live_server, curator):
    browser = browser_as(curator)
    browser.open(live_server.url + "/new/")
    browser.wait_for("document.querySelectorAll('.code-editor .code-layer').length >= 4")
    typed = (
        "(() => { const form = document.querySelector('textarea[name=starter_code]').form;"
        " form.elements.language.value = 'cpp17';"
        " form.elements.language.dispatchEvent(new Event('change', {bubbles: true}));"
        " const area = form.elements.starter_code; area.value = 'int main() { return 0; } // <b>done</b>';"
        " area.dispatchEvent(new Event('input', {bubbles: true})); })()"
    )
    browser.evaluate(typed)
    layer = "document.querySelector('textarea[name=starter_code]').previousElementSibling"
    browser.wait_for(f"{layer}.dataset.language === 'cpp17'")
    keywords = browser.evaluate(f"[...{layer}.querySelectorAll('.hl-k')].map(s => s.textContent)")
    assert keywords == ["int", "return"]
    assert browser.evaluate(f"{layer}.querySelector('.hl-c').textContent") == "// <b>done</b>"  # text, never markup
    assert browser.evaluate(f"{layer}.querySelectorAll('b').length") == 0
    assert browser.evaluate(f"{layer}.getAttribute('aria-hidden')") == "true"  # the textarea stays the field
    # A solution row added by htmx is highlighted too, in the same language.
    browser.evaluate("document.getElementById('add-solution').click()")
    browser.wait_for("document.querySelectorAll('.solution-row').length === 4")
    browser.wait_for(
        "document.querySelector('[name=\"solutions-3-code\"]').parentNode.classList.contains('code-editor')"
    )
    assert browser.errors == []


def test_review_buttons_swap_the_row_for_an_error_then_for_the_decision(browser_as, live_server, curator, reviewer):
    in_review(owner=curator)
    browser = browser_as(reviewer)
    browser.open(live_server.url + "/review/")
    # htmx wires up swapped-in content when it settles; a click before that is
    # an ordinary form submission (which works too, but is not what this checks).
    browser.evaluate("document.body.addEventListener('htmx:afterSettle', () => { window.__settled = true; })")
    browser.evaluate("document.querySelector('#review-add-two button[value=rejected]').click()")
    browser.wait_for("window.__settled === true")
    message = browser.evaluate("document.querySelector('#review-add-two .errorlist')?.textContent")
    assert "A note is required to reject." in message
    assert Task.objects.get(slug="add-two").state == State.VERIFIED
    browser.evaluate("document.querySelector('#review-add-two button[value=approved]').click()")
    done = browser.wait_for("document.querySelector('#review-add-two .banner-success')?.textContent")
    assert "is now approved" in done
    assert browser.evaluate("location.pathname") == "/review/"
    assert Task.objects.get(slug="add-two").state == State.APPROVED
