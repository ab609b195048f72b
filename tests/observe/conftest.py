"""The server's fixtures, for the tests of observation through the HTTP server."""

from tests.server.conftest import client, new_app, server_app

__all__ = ["client", "new_app", "server_app"]
