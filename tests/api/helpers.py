"""What every API test reads with: the mount point, a JSON GET, the error envelope."""

from __future__ import annotations

from typing import Any

from django.test import Client

API = "/api/v1"


def get_json(client: Client, url: str, status: int = 200) -> Any:
    response = client.get(url)
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    return response.json()


def assert_envelope(body: Any, status: int, code: str | None = None) -> None:
    """The one error envelope: {"error": {"status", "code", "message"}}."""
    assert set(body) == {"error"}
    assert body["error"]["status"] == status
    assert body["error"]["code"] == code if code is not None else body["error"]["code"]
    assert body["error"]["message"]
