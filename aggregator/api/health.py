"""``GET /health`` and ``GET /key``: liveness and the public signing key."""

from __future__ import annotations

from flask import Blueprint, Response

from ..signing import current_key
from ..storage import current_storage
from .common import VERSION, json_response

__all__ = ["blueprint"]

blueprint = Blueprint("health", __name__)


@blueprint.get("/health")
def health() -> Response:
    """Ok when the database answers (503 storage-unavailable otherwise)."""
    storage = current_storage()
    storage.ping()
    return json_response({"status": "ok", "storage": storage.backend, "version": VERSION})


@blueprint.get("/key")
def key() -> Response:
    """The public key that signs survey definitions (the private key is never served)."""
    return json_response(current_key().public_document())
