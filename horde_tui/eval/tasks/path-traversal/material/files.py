"""Download handlers for the document portal."""

import os

UPLOADS = "/srv/portal/uploads"
AVATARS = "/srv/portal/avatars"


def serve_download(params: dict) -> bytes:
    """GET /download?name=report.pdf: a file from the uploads folder."""
    path = os.path.join(UPLOADS, params["name"])
    with open(path, "rb") as fh:
        return fh.read()


def serve_avatar(params: dict) -> bytes:
    """GET /avatar?user=alice: the user's avatar picture."""
    name = os.path.basename(params["user"]) + ".png"
    path = os.path.join(AVATARS, name)
    with open(path, "rb") as fh:
        return fh.read()
