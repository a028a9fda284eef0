"""`store/share.py`: a run's post-mortem for an issue carries none of this machine's
secrets, paths or names, nor the target's code, and lists what it masked."""

from __future__ import annotations

import re
import secrets
import socket
from pathlib import Path

import pytest
from conftest import Horde
from support.rundir import RunDir

from horde_tui.store.mask import Masker
from horde_tui.store.share import QUOTE_OMITTED, share_document

RUN = "20260102-120000-aaaa"
USER = "quinlan-ops"
"""The user name, given to `getpass.getuser` through LOGNAME (it reads that first)."""


def masked_list(document: str) -> dict[str, int]:
    """The `## Masked` section: kind -> count."""
    tail = document.split("\n## Masked\n", 1)[1]
    return {m[1]: int(m[2]) for m in re.finditer(r"^- (.+): (\d+)$", tail, re.M)}


def test_share_leaves_none_of_the_planted_secrets_and_lists_each_kind(
    horde: Horde, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOGNAME", USER)
    host = socket.gethostname()
    token = secrets.token_urlsafe(32)
    planted = {
        "home path": f"{Path.home()}/projects/acme/.env",
        "tmp path": "/tmp/acme-build-7/creds.json",
        "user": USER,
        "host": host,
        "sk key": "sk-proj-" + "Q7x" * 12,
        "bearer": "eyJhbGciOiJIUzI1NiJ9.c3ViIjoi",
        "aws": "AKIAIOSFODNN7EXAMPLE",
        "gateway token": token,
        "hex": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "code quote": "SECRET_KEY = 'hunter2-prod'",
    }
    run = RunDir(horde.root, RUN)
    (run.path / "gateway.token").write_text(token + "\n")
    (run.path / "TASK.md").write_text(
        f"# Task\n\nReview the service checked out at {planted['home path']} as {USER}.\n"
    )
    horde("member-1", "idea", run=RUN, text=f"Check the build output in {planted['tmp path']}")
    horde("member-2", "idea", run=RUN, text=f"Ask {host} why {planted['aws']} is in the env")
    (run.path / "POSTMORTEM.md").write_text(
        "# Post-mortem\n\n"
        f"- member-1 pasted `{planted['sk key']}` and the gateway's {token} into a message.\n"
        f"- app.py:13: {planted['code quote']}\n"
        "- the /users route answers JSON; member-3 retried sql-injection checks.\n"
    )
    (run.path / "REPORT.md").write_text(
        "# Report\n\n"
        f"- curl -H 'Authorization: Bearer {planted['bearer']}' gave 200\n"
        f"- session {planted['hex']}\n"
    )

    document = share_document(run.path)

    left = [kind for kind, value in planted.items() if value in document]
    assert left == [], document
    assert str(tmp_path) not in document
    assert "the /users route answers JSON; member-3 retried sql-injection checks" in document
    assert "Check the build output in [path]" in document
    assert QUOTE_OMITTED in document
    assert masked_list(document) == {
        "API key (sk-)": 1,
        "AWS access key id": 1,
        "absolute path": 2,
        "bearer token": 1,
        "gateway token": 1,
        "host name": 1,
        "long hex value": 1,
        "quote of the target's code": 1,
        "user name": 1,
    }


def test_a_run_not_finalized_says_so_and_masks_nothing_it_does_not_hold(horde: Horde) -> None:
    run = RunDir(horde.root, RUN)
    document = share_document(run.path)
    assert "_No POSTMORTEM.md: the run has not finalized._" in document
    assert "_No ideas in this run._" in document
    assert document.endswith("## Masked\n\n_Nothing._\n")


def test_the_public_masker_keeps_routes_identifiers_and_digests_of_words(tmp_path: Path) -> None:
    """What looks like a secret only by length stays: a route, a relative path, a long
    identifier; a high-entropy base64 value goes."""
    mask = Masker(tmp_path / ".horde", public=True)
    kept = "GET /users?name=x, /api/delete, src/components/UserProfileSettings2.tsx, " + (
        "test_the_masker_hides_keys_tokens_and_paths"
    )
    assert mask(kept) == kept
    value = secrets.token_urlsafe(32)
    while not any(c.isdigit() for c in value):
        value = secrets.token_urlsafe(32)  # the rule wants a digit, as real tokens have
    assert mask(f"key {value} here") == "key [masked] here"
    assert mask.counts["long base64 value"] == 1


def test_a_path_after_a_colon_goes_and_a_generic_user_name_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`PATH=/usr/bin:/tmp/acme/bin` holds two paths; the user `root` (or `ubuntu`, a CI
    `runner`) names nobody, and masking it would turn "the root cause" into noise."""
    monkeypatch.setenv("LOGNAME", "root")
    mask = Masker(tmp_path / ".horde", public=True)
    assert mask("PATH=/usr/bin:/tmp/acme/bin") == "PATH=[path]:[path]"
    assert mask("the root cause was a retry loop") == "the root cause was a retry loop"
