"""factory_boy factories and small builders shared by the suites."""

from __future__ import annotations

from typing import Any

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from tasks_app.content import VersionContent
from tasks_app.services import task_create

PASSWORD = "correct-horse-battery"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.test")

    @factory.post_generation
    def roles(self, create: bool, extracted: Any, **kwargs: Any) -> None:
        self.set_password(PASSWORD)
        self.save()
        for role in extracted or ():
            self.groups.add(Group.objects.get_or_create(name=role)[0])  # a transactional test flushes the seeded groups


def content_data(**overrides: Any) -> dict[str, Any]:
    """A valid assertions-kind version as raw input, with overrides."""
    data: dict[str, Any] = {
        "statement": "Return the sum of `a` and `b`.",
        "entry_point": "add",
        "starter_code": "def add(a, b):\n    ...\n",
        "suite_kind": "assertions",
        "visible_tests": ["assert add(1, 2) == 3"],
        "hidden_tests": ["assert add(-1, 1) == 0", "assert add(10, 5) == 15"],
        "solutions": [
            {"role": "reference", "label": "ref", "code": "def add(a, b):\n    return a + b\n"},
            {"role": "adversarial", "label": "off-by-one", "code": "def add(a, b):\n    return a + b + 1\n"},
        ],
        "time_limit_s": 5,
        "memory_limit_mb": 128,
    }
    data.update(overrides)
    return data


def make_task(
    *, owner: Any, slug: str = "add-two", title: str = "Add two numbers", tags: Any = ("arithmetic",), **overrides: Any
) -> Any:
    return task_create(
        actor=owner,
        slug=slug,
        title=title,
        tags=list(tags),
        content=VersionContent.parse(content_data(**overrides)),
        changelog="First.",
    )
