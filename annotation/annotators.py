"""Annotator accounts: one Label Studio seat each; real annotators' passwords are printed once and never stored."""
from __future__ import annotations

import secrets
from collections.abc import Callable

from annotation import ls_server
from tiermap.formats.base import SchemaError
from tiermap.formats.layout import DatasetPaths


def default_emails(n: int) -> list[str]:
    """annotator1@tiermap.local … annotatorN@tiermap.local (simulated annotators)."""
    return [f"annotator{i}@tiermap.local" for i in range(1, n + 1)]


def add_users(ds: DatasetPaths, emails: list[str], simulated: bool = False, reset_password: bool = False,
              log: Callable[[str], None] = print) -> dict[str, str]:
    """Give every new annotator a seat (and a started server); returns email → password for new or reset accounts."""
    bad = [e for e in emails if not ls_server.EMAIL_RE.match(e)]
    if bad:
        raise SchemaError("<users>", "email", "plain e-mail addresses", bad[0])
    out: dict[str, str] = {}
    for email in dict.fromkeys(emails):
        password = secrets.token_urlsafe(12)
        if ls_server.read_credentials(ds).seat(email) is None:
            ls_server.add_seat(ds, email, password, simulated=simulated, log=log)
            out[email] = password
        elif reset_password:
            ls_server.reset_password(ds, email, password)
            out[email] = password
    ls_server.start(ds, log=log)
    return out


def ensure_simulated(ds: DatasetPaths, n: int, log: Callable[[str], None] = print) -> dict[str, str]:
    """Seats for simulated annotators 1..n (created if missing); email → password (kept for them only)."""
    emails = default_emails(n)
    add_users(ds, emails, simulated=True, log=log)
    stored = ls_server.read_simulated(ds)
    missing = [e for e in emails if e not in stored]
    if missing:
        raise ls_server.LabelStudioError(f"{missing[0]} has a seat but is not a simulated annotator (no stored password)")
    return {e: stored[e] for e in emails}
