"""Pools over REST: make one, preview it, freeze it (twice: the same snapshot), list
and diff snapshots; curators act, trainers read."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.trainer_bridge.test_pools import _approved

pytestmark = pytest.mark.django_db


@pytest.fixture
def approved(curator, reviewer):
    return [_approved(curator, reviewer, f"task-{i}", tags=("arithmetic",) if i % 2 else ("strings",))
            for i in range(4)]  # fmt: skip


def test_a_curator_makes_previews_and_freezes_a_pool(approved, curator, reviewer, trainer, api_as):
    client = api_as(curator, ["read", "write"])
    made = client.post(reverse("api-pools"), {"slug": "mix", "criteria": {"max_size": 2, "seed": 1}}, format="json")
    assert made.status_code == 201 and made.json()["criteria"]["max_size"] == 2
    preview = client.get(reverse("api-pool-preview", args=["mix"])).json()
    assert preview["matched"]["count"] == 4 and preview["selected"]["by_tag"] == {"arithmetic": 1, "strings": 1}
    frozen = client.post(reverse("api-snapshots", args=["mix"]))
    assert frozen.status_code == 201 and frozen.json()["size"] == 2
    again = client.post(reverse("api-snapshots", args=["mix"]))
    assert again.status_code == 200 and again.json()["hash"] == frozen.json()["hash"]

    _approved(curator, reviewer, "task-late", tags=("strings",))
    client.post(reverse("api-pools"), {"slug": "all", "criteria": {}}, format="json")
    first = client.post(reverse("api-snapshots", args=["all"])).json()["hash"]
    reader = api_as(trainer, ["read"])
    assert [p["slug"] for p in reader.get(reverse("api-pools")).json()] == ["all", "mix"]
    assert reader.post(reverse("api-pools"), {"slug": "mine"}, format="json").status_code == 403
    _approved(curator, reviewer, "task-later", tags=("strings",))
    second = client.post(reverse("api-snapshots", args=["all"])).json()["hash"]
    diff = reader.get(reverse("api-snapshot-diff", args=["all"]), {"from": first, "to": second}).json()
    assert diff == {"added": ["task-later"], "removed": [], "changed": []}
    assert [s["hash"] for s in reader.get(reverse("api-snapshots", args=["all"])).json()] == [second, first]


def test_bad_pool_requests_get_the_error_shape(approved, curator, api_as):
    client = api_as(curator, ["read", "write"])
    bad = client.post(reverse("api-pools"), {"slug": "x", "criteria": {"bands": ["EASY"]}}, format="json")
    assert bad.status_code == 400 and "bands" in bad.json()["error"]["details"]
    assert client.post(reverse("api-pools"), {"criteria": {}}, format="json").status_code == 400
    odd = client.post(reverse("api-pools"), {"slug": "Has Spaces", "criteria": {}}, format="json")
    assert odd.status_code == 400 and "slug" in odd.json()["error"]["details"]
    client.post(reverse("api-pools"), {"slug": "x", "criteria": {}}, format="json")
    taken = client.post(reverse("api-pools"), {"slug": "x", "criteria": {}}, format="json")
    assert taken.status_code == 400 and "exists already" in taken.json()["error"]["message"]
    nope = client.get(reverse("api-pool-preview", args=["nope"]))
    assert nope.status_code == 404, nope.content
    missing = client.get(reverse("api-snapshot-diff", args=["x"]), {"from": "a"})
    assert missing.status_code == 400 and "to" in missing.json()["error"]["details"]
