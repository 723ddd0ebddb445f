"""Annotator accounts: created over the API, passwords set locally (API-created users have none)."""
from __future__ import annotations

import secrets

from annotation import ls_server
from annotation.ls_client import LabelStudio
from tiermap import schema


def default_emails(n: int) -> list[str]:
    """annotator1@tiermap.local … annotatorN@tiermap.local."""
    return [f"annotator{i}@tiermap.local" for i in range(1, n + 1)]


def add_users(ds: schema.DatasetPaths, ls: LabelStudio, emails: list[str]) -> dict[str, str]:
    """Create missing accounts and give each a password (kept in credentials.json); returns email → password."""
    bad = [e for e in emails if "@" not in e or any(c in e for c in " '\"\\")]
    if bad:
        raise schema.SchemaError("<users>", "email", "plain e-mail addresses", bad[0])
    existing = {u["email"] for u in ls.users()}
    for i, e in enumerate(emails, 1):
        if e not in existing:
            ls.create_user(e, first_name=e.split("@")[0].capitalize())
    cred = ls_server.read_credentials(ds)
    known = dict(cred.annotators or {})
    todo = {e: known.get(e) or secrets.token_urlsafe(10) for e in emails}
    lines = ["from users.models import User", "from organizations.models import Organization", "org = Organization.objects.first()"]
    for e, pw in todo.items():
        lines += [f"u = User.objects.get(email={e!r})", f"u.set_password({pw!r})", "u.active_organization = org", "u.save()",
                  "org.add_user(u) if not org.has_user(u) else None"]
    ls_server.django_shell(ls_server.label_studio_bin(), ls_server.server_env(ls_server.server_dir(ds), ds.dir.resolve(), cred), lines)
    cred.annotators = {**known, **todo}
    ls_server.write_credentials(ds, cred)
    return todo
