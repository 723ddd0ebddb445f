"""A small HTTP client for the Label Studio REST API (admin token or an annotator's login session)."""
from __future__ import annotations

import json
import time
from typing import Any

import requests

from annotation.ls_server import LabelStudioError


class LabelStudio:
    """Label Studio over HTTP; every failure becomes one LabelStudioError line naming the URL and the request."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 120.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.http = requests.Session()
        self.http.trust_env = False  # proxy variables must not catch 127.0.0.1
        if token:
            self.http.headers["Authorization"] = f"Token {token}"

    @classmethod
    def login(cls, url: str, email: str, password: str) -> LabelStudio:
        """A client acting as one user through the web login (what an annotator's browser does)."""
        ls = cls(url)
        ls.request("GET", "/user/login/", raw=True)
        r = ls.request("POST", "/user/login/", raw=True, allow_redirects=False,
                       data={"email": email, "password": password, "csrfmiddlewaretoken": ls.http.cookies.get("csrftoken", "")},
                       headers={"Referer": f"{ls.url}/user/login/"})
        if r.status_code != 302:
            raise LabelStudioError(f"{ls.url}: login as {email} failed (HTTP {r.status_code}); reset the password with "
                                   "`tiermap annotate users add` or check credentials.json")
        ls.http.headers.update({"X-CSRFToken": ls.http.cookies.get("csrftoken", ""), "Referer": ls.url})
        return ls

    def request(self, method: str, path: str, raw: bool = False, **kw: Any) -> Any:
        """One API call; JSON answer (or the response when raw)."""
        try:
            r = self.http.request(method, self.url + path, timeout=self.timeout, **kw)
        except requests.ConnectionError:
            raise LabelStudioError(f"Label Studio at {self.url} is not reachable ({method} {path}); start it with "
                                   "`tiermap annotate serve` and re-run: finished work is kept") from None
        except requests.Timeout:
            raise LabelStudioError(f"Label Studio at {self.url} did not answer {method} {path} within {self.timeout:.0f} s") from None
        if raw:
            return r
        self._check(r, method, path)
        return r.json() if r.content else None

    def _check(self, r: requests.Response, method: str, path: str) -> None:
        """One line for a rejected token or any other HTTP error."""
        if r.status_code == 401:
            raise LabelStudioError(f"Label Studio at {self.url} rejected the API token (HTTP 401 on {path}): use the token "
                                   "in datasets/<d>/labelstudio/credentials.json or pass --token")
        if not r.ok:
            raise LabelStudioError(f"Label Studio at {self.url}: {method} {path} -> HTTP {r.status_code}: {r.text[:200]!r}")

    # ------------------------------------------------------------ projects, storage, tasks
    def whoami(self) -> dict[str, Any]:
        """The authenticated user (checks the token)."""
        return self.request("GET", "/api/current-user/whoami")

    def projects(self) -> list[dict[str, Any]]:
        """All projects visible to the user."""
        out, page = [], 1
        while True:
            data = self.request("GET", "/api/projects", params={"page": page, "page_size": 100})
            rows = data["results"] if isinstance(data, dict) else data
            out += rows
            if not isinstance(data, dict) or not data.get("next"):
                return out
            page += 1

    def create_project(self, **fields: Any) -> dict[str, Any]:
        """Create a project."""
        return self.request("POST", "/api/projects", json=fields)

    def update_project(self, pid: int, **fields: Any) -> dict[str, Any]:
        """Change a project's fields."""
        return self.request("PATCH", f"/api/projects/{pid}", json=fields)

    def local_storages(self, pid: int) -> list[dict[str, Any]]:
        """Local-files storages of a project."""
        return self.request("GET", "/api/storages/localfiles", params={"project": pid})

    def add_local_storage(self, pid: int, path: str, title: str) -> dict[str, Any]:
        """Allow serving files under `path` (an absolute subfolder of the document root) to this project."""
        return self.request("POST", "/api/storages/localfiles", json={"project": pid, "path": path, "title": title,
                                                                      "use_blob_urls": False, "regex_filter": ""})

    def import_tasks(self, pid: int, tasks: list[dict[str, Any]]) -> list[int]:
        """Import tasks (one transaction on the server); their new ids."""
        return self.request("POST", f"/api/projects/{pid}/import", params={"return_task_ids": "true"}, json=tasks)["task_ids"]

    def update_task(self, tid: int, data: dict[str, Any]) -> dict[str, Any]:
        """Replace a task's data."""
        return self.request("PATCH", f"/api/tasks/{tid}", json={"data": data})

    def export_bytes(self, pid: int) -> bytes:
        """The full JSON export of a project (every task with annotations), as the server sent it."""
        path = f"/api/projects/{pid}/export"
        r = self.request("GET", path, raw=True, params={"exportType": "JSON", "download_all_tasks": "true"})
        self._check(r, "GET", path)
        return r.content

    def export(self, pid: int) -> list[dict[str, Any]]:
        """The full JSON export, parsed."""
        return json.loads(self.export_bytes(pid))

    def import_predictions(self, pid: int, predictions: list[dict[str, Any]]) -> None:
        """Attach predictions (pre-annotations) to tasks."""
        self.request("POST", f"/api/projects/{pid}/import/predictions", json=predictions)

    # ------------------------------------------------------------ users and annotations
    def users(self) -> list[dict[str, Any]]:
        """Users of the organisation."""
        return self.request("GET", "/api/users/")

    def create_user(self, email: str, first_name: str = "") -> dict[str, Any]:
        """Create a user in the caller's organisation."""
        return self.request("POST", "/api/users/", json={"email": email, "username": email.split("@")[0], "first_name": first_name})

    def annotate(self, tid: int, result: list[dict[str, Any]], lead_time: float = 0.0, attempts: int = 4) -> dict[str, Any]:
        """Submit an annotation as the logged-in user.

        A server error (Label Studio's sqlite can be briefly locked under concurrent annotators) is retried, but only
        after checking that the annotation was not stored anyway, so a retry never duplicates it.
        """
        path = f"/api/tasks/{tid}/annotations/"
        for attempt in range(attempts):
            r = self.request("POST", path, raw=True, json={"result": result, "lead_time": lead_time})
            if r.status_code < 500 or attempt == attempts - 1:
                break
            me = self.whoami().get("id")
            mine = [a for a in self.request("GET", path) or [] if a.get("completed_by") == me]
            if mine:
                return mine[-1]
            time.sleep(0.5 * 2**attempt)
        self._check(r, "POST", path)
        return r.json()
