"""Link previews: the chat server fetches a pasted URL and shows its title."""

import re
import urllib.request
from urllib.parse import urlparse

WEBHOOK_HOSTS = {"hooks.example.com"}


def link_preview(url: str) -> str:
    """The <title> of the page a user pasted into the chat."""
    with urllib.request.urlopen(url, timeout=5) as response:
        page = response.read(65536).decode("utf-8", "replace")
    match = re.search(r"<title>(.*?)</title>", page, re.S)
    return match.group(1).strip() if match else url


def send_webhook(url: str, body: bytes) -> int:
    """Deliver an event to a configured webhook (allow-listed hosts only)."""
    parts = urlparse(url)
    if parts.scheme != "https" or parts.hostname not in WEBHOOK_HOSTS:
        raise ValueError("webhook host not allowed")
    request = urllib.request.Request(url, data=body, method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.status
