from __future__ import annotations

import pytest
import yaml
from openapi_spec_validator import validate
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_the_openapi_schema_is_valid_and_lists_the_endpoints():
    response = APIClient().get("/api/v1/schema/")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    validate(schema)
    paths = schema["paths"]
    for path in (
        "/api/v1/tasks/",
        "/api/v1/tasks/{slug}/versions/",
        "/api/v1/tasks/{slug}/transitions/",
        "/api/v1/tasks/{slug}/diff/",
        "/api/v1/import/",
        "/api/v1/tokens/",
    ):
        assert path in paths, path
    assert schema["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"


def test_the_interactive_docs_are_served_without_a_cdn(db):
    html = APIClient().get("/api/v1/docs/").content.decode()
    assert "swagger-ui" in html and "cdn" not in html.lower()


def test_the_schema_is_served_as_json_on_request(db):
    response = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200 and response.json()["openapi"].startswith("3.")
