"""Playwright journeys: Debian's Chromium, headless, against pytest-django's live server.

- `browser` is one Chromium per test (see there why not per session); a test opens
  fresh contexts with `new_page()`, or `signed_in(user)`: a context already holding
  a session cookie made with Django's test client, so a journey that is not about
  logging in starts on its first real page. `page` is a page signed in as nobody.
- `shots` saves a screenshot per key step under tests/e2e/output/<test name>/NN-step.png
  (the folder is ignored by git and emptied at the start of each test); a failed
  journey also leaves each page's last state there as failed-N.png.
- Playwright's `expect` waits up to STEP_TIMEOUT_MS for each condition, and longer
  where a journey says so; no journey sleeps.
- Every page records uncaught JavaScript errors and answers of 500 or above;
  `page_problems` lists them and a journey asserts there are none.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connections
from django.test import Client

from tests.components import chromium_path

CHROMIUM = chromium_path() or "/usr/bin/chromium"  # $E2E_CHROMIUM, else the first on the PATH
OUTPUT = Path(__file__).resolve().parent / "output"
# Generous: two slow cores are shared with other test runs, and the journeys wait on
# real workers and sandboxes. Playwright returns as soon as a condition holds.
STEP_TIMEOUT_MS = 30_000
FAILED = pytest.StashKey[bool]()


# What every journey module marks itself with. The live server answers from another
# thread, so the tests commit; serialized rollback restores the seeded rows (role
# groups) afterwards. A missing browser fails, unless TEST_ALLOW_MISSING=chromium.
JOURNEY = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.chromium,
]


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """One headless Chromium for the test.

    Playwright's sync API keeps its asyncio loop marked as running on this thread
    for as long as Playwright is started, and Django then refuses ORM calls from
    this thread as if they came from async code. The tests are plain sequential
    code that never shares a connection with that loop, so Django is told to allow
    them, for this test only; and Playwright is started per test, not per session,
    so the loop is gone before the test database is flushed and for every other
    suite of the run. (A test that starts Celery workers asks for `workers` before
    any page, so their environment is taken before this setting.)
    """
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=STEP_TIMEOUT_MS)
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()
            # While Playwright ran, the test's ORM calls went through connections of
            # their own (Django keeps connections per context, and Playwright's loop
            # gives the test another); close them, or they outlive the test database.
            connections.close_all()


class PageProblems(list):
    """Uncaught page errors and 5xx answers seen by every page of a test."""

    def watch(self, page: Any) -> Any:
        # Counts htmx's settled swaps, so a journey can wait for swapped-in content to
        # be wired up before it clicks in it (see `after_htmx_swap`).
        page.add_init_script(
            "document.addEventListener('htmx:afterSettle', () => { window.__settled = (window.__settled || 0) + 1; });"
        )
        page.on("pageerror", lambda error: self.append(f"page error on {page.url}: {error}"))
        page.on(
            "response",
            lambda response: self.append(f"{response.status} from {response.url}") if response.status >= 500 else None,
        )
        page.set_default_timeout(STEP_TIMEOUT_MS)
        return page


@pytest.fixture
def page_problems() -> PageProblems:
    return PageProblems()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


@pytest.fixture
def output_dir(request: pytest.FixtureRequest) -> Path:
    """tests/e2e/output/<test name>/, emptied first."""
    folder = OUTPUT / re.sub(r"[^\w.-]+", "_", request.node.name)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def new_page(
    browser: Any, live_server: Any, page_problems: PageProblems, output_dir: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Any]]:
    """new_page(**context_options) -> a page in a fresh browser context (no cookies).
    When the test fails, each page's last state is saved as failed-N.png."""
    contexts: list[Any] = []

    def open_page(**options: Any) -> Any:
        context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900}, **options)
        contexts.append(context)
        return page_problems.watch(context.new_page())

    yield open_page
    failed = request.node.stash.get(FAILED, False)
    for number, context in enumerate(contexts, start=1):
        if failed:
            for page in context.pages:
                try:
                    page.screenshot(path=str(output_dir / f"failed-{number}.png"), full_page=True, timeout=10_000)
                except Exception as exc:  # the test's own failure is what gets reported
                    print(f"no screenshot of {page.url}: {exc}")
        context.close()


@pytest.fixture
def page(new_page: Callable[..., Any]) -> Any:
    """A page signed in as nobody."""
    return new_page()


@pytest.fixture
def signed_in(new_page: Callable[..., Any], live_server: Any) -> Callable[[Any], Any]:
    """signed_in(user) -> a page whose context holds `user`'s session cookie."""

    def open_as(user: Any) -> Any:
        client = Client()
        client.force_login(user)
        page = new_page()
        cookie = {"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}
        page.context.add_cookies([cookie])
        return page

    return open_as


@pytest.fixture
def shots(output_dir: Path) -> Callable[..., Path]:
    """shots(page, "step-name", upto=None) -> the path of a PNG of the whole page, or of
    the page from its top to the bottom of the element `upto` (a locator)."""
    taken: list[Path] = []

    def shoot(page: Any, step: str, *, upto: Any = None) -> Path:
        path = output_dir / f"{len(taken) + 1:02d}-{step}.png"
        clip = None
        if upto is not None:
            box = upto.bounding_box()
            scroll_y = page.evaluate("window.scrollY")
            clip = {"x": 0, "y": 0, "width": page.viewport_size["width"], "height": box["y"] + scroll_y + box["height"]}
        page.screenshot(path=str(path), full_page=True, clip=clip)
        taken.append(path)
        return path

    return shoot


def settled_count(page: Any) -> int:
    return page.evaluate("window.__settled || 0")


def after_htmx_swap(page: Any, action: Callable[[], Any]) -> None:
    """Do `action` (a click that makes htmx swap something in) and return once that
    swap has settled: before then, the new content's forms are not yet htmx's."""
    before = settled_count(page)
    action()
    page.wait_for_function("n => (window.__settled || 0) > n", arg=before)
