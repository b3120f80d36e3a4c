"""The demo: fixed users with known passwords, and the sample catalogue loaded for them.

Only for embedded (development) installs; the seed_demo command refuses
elsewhere unless forced, since known passwords must never reach production.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from tasks_app.catalogue.loading import LoadReport, catalogue_load
from tasks_app.catalogue.repository_entries import repository_entries
from tasks_app.roles import ADMIN, CURATOR, REVIEWER, ROLES, TRAINER, ensure_role_groups


@dataclass(frozen=True)
class DemoUser:
    username: str
    password: str
    roles: tuple[str, ...]
    superuser: bool = False


DEMO_USERS: tuple[DemoUser, ...] = (
    DemoUser("curator", "curator-demo", (CURATOR,)),
    DemoUser("curator2", "curator2-demo", (CURATOR,)),
    DemoUser("reviewer", "reviewer-demo", (REVIEWER,)),
    DemoUser("reviewer2", "reviewer2-demo", (REVIEWER, CURATOR)),
    DemoUser("trainer", "trainer-demo", (TRAINER,)),
    DemoUser("admin", "admin-demo", (ADMIN,), superuser=True),
)
CATALOGUE_OWNER = "curator"
CATALOGUE_REVIEWER = "reviewer"


@dataclass(frozen=True)
class DemoUserResult:
    spec: DemoUser
    user: Any
    created: bool

    @property
    def roles(self) -> tuple[str, ...]:
        """The roles the user holds now (possibly more than the demo gives), plus 'superuser'."""
        held = set(self.user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        names = tuple(role for role in ROLES if role in held)
        return (*names, "superuser") if self.user.is_superuser else names


@dataclass(frozen=True)
class DemoSeedResult:
    users: list[DemoUserResult]
    catalogue: LoadReport
    repositories: LoadReport


def demo_users_ensure() -> list[DemoUserResult]:
    """Create the demo users that are missing and give every demo user its roles.

    Only ever adds: an existing user keeps its password and every group or
    flag it already has.
    """
    ensure_role_groups()
    groups = {group.name: group for group in Group.objects.filter(name__in=ROLES)}
    user_model = get_user_model()
    results = []
    for spec in DEMO_USERS:
        user = user_model.objects.filter(username=spec.username).first()
        created = user is None
        if created:
            user = user_model(username=spec.username, is_superuser=spec.superuser, is_staff=spec.superuser)
            user.set_password(spec.password)
            user.save()
        elif spec.superuser and not (user.is_superuser and user.is_staff):
            user.is_superuser = user.is_staff = True
            user.save(update_fields=["is_superuser", "is_staff"])
        user.groups.add(*(groups[role] for role in spec.roles))
        # has_role caches roles on the instance; drop any cache from before the groups changed.
        user.__dict__.pop("_platform_roles", None)
        results.append(DemoUserResult(spec=spec, user=user, created=created))
    return results


@transaction.atomic
def demo_seed() -> DemoSeedResult:
    """Ensure the demo users, then load the catalogue owned by the curator and reviewed by the
    reviewer: the program tasks, then the repository tasks (reported apart)."""
    users = demo_users_ensure()
    by_name = {result.spec.username: result.user for result in users}
    owner, reviewer = by_name[CATALOGUE_OWNER], by_name[CATALOGUE_REVIEWER]
    report = catalogue_load(owner=owner, reviewer=reviewer)
    repositories = catalogue_load(
        owner=owner, reviewer=reviewer, entries=repository_entries(), label="repository catalogue"
    )
    return DemoSeedResult(users=users, catalogue=report, repositories=repositories)
