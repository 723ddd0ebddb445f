"""Talking to a seat's Label Studio: the admin side through label-studio-sdk, an annotator through the web login."""
from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import httpx
import requests

from annotation.ls_server import LabelStudioError
from tiermap.formats.labelstudio import LSSeat

T = TypeVar("T")


@contextmanager
def _sdk_quiet() -> Iterator[None]:
    """Silence the SDK models' serializer warnings (they mistype some of Label Studio's fields, int vs str)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def _dump(obj: Any) -> dict[str, Any]:
    """An SDK model (or a dict) as a plain dict."""
    if isinstance(obj, dict):
        return obj
    with _sdk_quiet():
        return obj.model_dump(mode="json")


class Admin:
    """The admin of one seat, through label-studio-sdk; every failure is one LabelStudioError line naming the server."""

    def __init__(self, seat: LSSeat, timeout: float = 120.0) -> None:
        from label_studio_sdk import LabelStudio

        if not seat.url:
            raise LabelStudioError(f"the Label Studio seat of {seat.annotator} was never started: run `tiermap annotate serve`")
        self.seat, self.url = seat, seat.url
        # No keep-alive: Django's dev server adds ~45 ms per call on a reused connection (Nagle / delayed ACK).
        http = httpx.Client(timeout=timeout, trust_env=False, limits=httpx.Limits(max_keepalive_connections=0))
        self.sdk = LabelStudio(base_url=seat.url, api_key=seat.token, httpx_client=http)

    def call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one SDK call, translating connection and HTTP errors."""
        from label_studio_sdk.core.api_error import ApiError

        try:
            with _sdk_quiet():
                return fn(*args, **kwargs)
        except httpx.TransportError:
            raise LabelStudioError(f"Label Studio of {self.seat.annotator} at {self.url} is not reachable ({what}); start it with "
                                   "`tiermap annotate serve` and re-run: finished work is kept") from None
        except ApiError as err:
            if err.status_code == 401:
                raise LabelStudioError(f"Label Studio at {self.url} rejected the admin token (HTTP 401 on {what}): "
                                       "the seat's credentials.json does not match its server") from None
            raise LabelStudioError(f"Label Studio at {self.url}: {what} -> HTTP {err.status_code}: {str(err.body)[:200]!r}") from None

    # ------------------------------------------------------------ projects and storage
    def projects(self) -> list[dict[str, Any]]:
        """Every project of the seat."""
        return [_dump(p) for p in self.call("list projects", lambda: list(self.sdk.projects.list(page_size=100)))]

    def create_project(self, **fields: Any) -> int:
        """Create a project; its id."""
        return int(self.call("create project", self.sdk.projects.create, **fields).id)

    def update_project(self, pid: int, **fields: Any) -> None:
        """Change a project's fields."""
        self.call(f"update project {pid}", self.sdk.projects.update, pid, **fields)

    def local_storages(self, pid: int) -> list[dict[str, Any]]:
        """Local-files storages of a project."""
        return [_dump(s) for s in self.call("list storages", self.sdk.import_storage.local.list, project=pid)]

    def add_local_storage(self, pid: int, path: str, title: str) -> None:
        """Allow serving files under `path` (an absolute subfolder of the document root) to this project."""
        self.call("add storage", self.sdk.import_storage.local.create, project=pid, path=path, title=title,
                  use_blob_urls=False, regex_filter="")

    # ------------------------------------------------------------ tasks, predictions, exports, users
    def import_tasks(self, pid: int, tasks: list[dict[str, Any]]) -> list[int]:
        """Import tasks (one transaction on the server); their new ids."""
        res = self.call("import tasks", self.sdk.projects.import_tasks, pid, request=tasks, return_task_ids=True)
        return [int(i) for i in res.task_ids or []]

    def update_task(self, tid: int, data: dict[str, Any]) -> None:
        """Replace a task's data."""
        self.call(f"update task {tid}", self.sdk.tasks.update, str(tid), data=data)

    def import_predictions(self, pid: int, predictions: list[dict[str, Any]]) -> None:
        """Attach predictions (pre-annotations) to tasks."""
        self.call("import predictions", self.sdk.projects.import_predictions, pid, request=predictions)

    def export_bytes(self, pid: int) -> bytes:
        """The full JSON export of a project (every task with its annotations), as the server sent it."""
        return self.call("export", lambda: b"".join(self.sdk.projects.exports.download_sync(pid, export_type="JSON",
                                                                                            download_all_tasks=True)))

    def export(self, pid: int) -> list[dict[str, Any]]:
        """The full JSON export, parsed."""
        return json.loads(self.export_bytes(pid))

    def users(self) -> list[dict[str, Any]]:
        """Users of the seat (admin, annotator, and any account someone added)."""
        return [_dump(u) for u in self.call("list users", self.sdk.users.list)]


class AnnotatorSession:
    """One user logged in through the web form, as an annotator's browser is (the SDK has no password login)."""

    def __init__(self, url: str, timeout: float = 120.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.http = requests.Session()
        self.http.trust_env = False  # proxy variables must not catch 127.0.0.1

    @classmethod
    def login(cls, url: str, email: str, password: str) -> AnnotatorSession:
        """Log in with e-mail and password."""
        me = cls(url)
        me.request("GET", "/user/login/", raw=True)
        r = me.request("POST", "/user/login/", raw=True, allow_redirects=False,
                       data={"email": email, "password": password, "csrfmiddlewaretoken": me.http.cookies.get("csrftoken", "")},
                       headers={"Referer": f"{me.url}/user/login/"})
        if r.status_code != 302:
            raise LabelStudioError(f"{me.url}: login as {email} failed (HTTP {r.status_code}); issue a new password with "
                                   "`tiermap annotate users add --reset-password`")
        me.http.headers.update({"X-CSRFToken": me.http.cookies.get("csrftoken", ""), "Referer": me.url})
        return me

    def request(self, method: str, path: str, raw: bool = False, **kw: Any) -> Any:
        """One call; JSON answer (or the response when raw)."""
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
        if not r.ok:
            raise LabelStudioError(f"Label Studio at {self.url}: {method} {path} -> HTTP {r.status_code}: {r.text[:200]!r}")

    def whoami(self) -> dict[str, Any]:
        """The logged-in user."""
        return self.request("GET", "/api/current-user/whoami")

    def annotate(self, tid: int, result: list[dict[str, Any]], lead_time: float = 0.0, attempts: int = 4) -> dict[str, Any]:
        """Submit an annotation as the logged-in user.

        A server error (Label Studio's sqlite can be briefly locked) is retried, but only after checking that the
        annotation was not stored anyway, so a retry never duplicates it.
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
