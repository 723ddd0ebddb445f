"""A local Label Studio server per dataset: offline settings, data under the dataset, secrets outside git.

The server runs from its own venv (label-studio pins Django, pyarrow<25, openai<2, … which clash with the
project's packages), so tiermap only starts its executable and talks to it over HTTP.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import requests

from tiermap import atomic, schema

LS_VERSION = "1.23.2"
ADMIN_EMAIL = "admin@tiermap.local"
_REPO = Path(__file__).resolve().parents[1]
# get_env() in Label Studio falls back to these bare names, so a stray one in the shell changes its behaviour.
_SCRUB = ("USERNAME", "PASSWORD", "HOST", "PORT", "DEBUG", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
          "http_proxy", "https_proxy", "all_proxy", "LABEL_STUDIO_API_KEY")


class LabelStudioError(RuntimeError):
    """Label Studio is missing, unreachable or refused a request."""


@dataclass
class Credentials:
    """Admin login and the running server's address; kept in the git-ignored server folder (mode 0600)."""

    email: str
    password: str
    token: str
    url: str = ""
    pid: int = 0
    annotators: dict[str, str] | None = None


def server_dir(ds: schema.DatasetPaths) -> Path:
    """datasets/<d>/labelstudio/: sqlite DB, media, credentials (never tracked: it holds a `*` .gitignore)."""
    return ds.dir / "labelstudio"


def credentials_path(ds: schema.DatasetPaths) -> Path:
    """The credentials file of a dataset's server."""
    return server_dir(ds) / "credentials.json"


def read_credentials(ds: schema.DatasetPaths) -> Credentials:
    """Credentials of the dataset's server; a clear error when it was never served."""
    path = credentials_path(ds)
    if not path.is_file():
        raise LabelStudioError(f"{path}: no Label Studio credentials (start one with `tiermap annotate serve --dataset {ds.name}`)")
    data = schema.read_json(path)
    try:
        return Credentials(**data)
    except TypeError as err:
        raise schema.SchemaError(path, "<root>", f"Label Studio credentials ({err})") from None


def write_credentials(ds: schema.DatasetPaths, cred: Credentials) -> Path:
    """Write credentials atomically, readable by the owner only."""
    return atomic.write_text(credentials_path(ds), json.dumps(asdict(cred), indent=2), mode=0o600)


def label_studio_bin() -> Path:
    """The label-studio executable: $TIERMAP_LABEL_STUDIO, the repo's .venv-ls, or PATH."""
    env = os.environ.get("TIERMAP_LABEL_STUDIO")
    candidates = [Path(env)] if env else [_REPO / ".venv-ls" / "bin" / "label-studio"]
    found = shutil.which("label-studio")
    candidates += [Path(found)] if found else []
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise LabelStudioError("label-studio is not installed: run `make setup` (it creates .venv-ls with "
                           f"label-studio=={LS_VERSION}) or set TIERMAP_LABEL_STUDIO to its executable")


def server_env(data_dir: Path, document_root: Path, cred: Credentials) -> dict[str, str]:
    """Environment for every label-studio command: offline, no prompts, legacy tokens on, local files served."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    data_dir, document_root = Path(data_dir).resolve(), Path(document_root).resolve()
    env.update({
        "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir), "DJANGO_DB": "sqlite",
        "LABEL_STUDIO_USERNAME": cred.email, "LABEL_STUDIO_PASSWORD": cred.password, "LABEL_STUDIO_USER_TOKEN": cred.token,
        "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true", "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
        "LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED": "true", "LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT": str(document_root),
        "LABEL_STUDIO_LATEST_VERSION_CHECK": "false", "LABEL_STUDIO_COLLECT_ANALYTICS": "false",
        "SENTRY_DSN": "", "FRONTEND_SENTRY_DSN": "", "FEATURE_FLAGS_OFFLINE": "true",
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    })
    return env


def template_dir(ls_bin: Path) -> Path:
    """A migrated data dir kept beside the server's venv (starting from a copy takes ~3 s instead of ~25 s)."""
    return ls_bin.resolve().parent.parent / f"tiermap-template-{LS_VERSION}"


def ensure_template(ls_bin: Path, log=print) -> Path:  # type: ignore[no-untyped-def]
    """Create the migrated template data dir once (`label-studio init`)."""
    tpl = template_dir(ls_bin)
    if (tpl / "label_studio.sqlite3").is_file():
        return tpl
    log(f"preparing a Label Studio template (database migrations, ~25 s, once): {tpl}")
    with atomic.atomic_dir(tpl) as tmp:
        cred = Credentials(ADMIN_EMAIL, "template-" + secrets.token_hex(8), "t" + secrets.token_hex(19))
        res = subprocess.run([str(ls_bin), "init", "--enable-legacy-api-token", "--data-dir", str(tmp)],
                             env=server_env(tmp, tmp, cred), capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if res.returncode != 0:
            raise LabelStudioError(f"`label-studio init` failed: {(res.stderr or res.stdout).strip().splitlines()[-1:]}")
    return tpl


def django_shell(ls_bin: Path, env: dict[str, str], lines: list[str]) -> str:
    """Run Python lines in Label Studio's Django shell (no HTTP); returns its output."""
    res = subprocess.run([str(ls_bin), "shell"], input="\n".join(lines) + "\n", env=env, capture_output=True, text=True)
    if res.returncode != 0 or "Traceback" in res.stdout + res.stderr:
        tail = [ln for ln in (res.stdout + res.stderr).splitlines() if ln.strip()][-1:]
        raise LabelStudioError(f"label-studio shell failed: {tail[0] if tail else res.returncode}")
    return res.stdout


def init_data_dir(ds: schema.DatasetPaths, ls_bin: Path, log=print) -> Credentials:  # type: ignore[no-untyped-def]
    """A new server folder from the template with fresh secrets: SECRET_KEY, admin password and API token."""
    data = server_dir(ds)
    tpl = ensure_template(ls_bin, log)
    cred = Credentials(ADMIN_EMAIL, secrets.token_urlsafe(12), secrets.token_hex(20))
    with atomic.atomic_dir(data) as tmp:
        tmp.chmod(0o700)  # holds the secrets
        shutil.copy2(tpl / "label_studio.sqlite3", tmp / "label_studio.sqlite3")
        for sub in ("media", "export"):
            (tmp / sub).mkdir()
        (tmp / ".gitignore").write_text("# Label Studio data and secrets: never tracked\n*\n")
        atomic.write_text(tmp / ".env", f"SECRET_KEY={secrets.token_urlsafe(50)}\n", mode=0o600)
        django_shell(ls_bin, server_env(tmp, ds.dir.resolve(), cred), [
            "from users.models import User",
            "from rest_framework.authtoken.models import Token",
            f"u = User.objects.get(email={ADMIN_EMAIL!r})",
            f"u.set_password({cred.password!r}); u.save()",
            f"Token.objects.filter(user=u).update(key={cred.token!r})",
        ])
        atomic.write_text(tmp / "credentials.json", json.dumps(asdict(cred), indent=2), mode=0o600)
    return cred


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (label-studio silently moves to the next port when its port is busy)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str, timeout: float = 2.0) -> bool:
    """True when the server answers /health with UP."""
    try:
        r = requests.get(f"{url}/health", timeout=timeout, proxies={"http": "", "https": ""})
        return r.ok and r.json().get("status") == "UP"
    except (requests.RequestException, ValueError):
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return pid > 0
    except OSError:
        return False


def start(ds: schema.DatasetPaths, port: int | None = None, timeout: float = 120.0, log=print) -> Credentials:  # type: ignore[no-untyped-def]
    """Start the dataset's server in the background (reusing a running one); returns credentials with url and pid."""
    ls_bin = label_studio_bin()
    if credentials_path(ds).is_file():
        cred = read_credentials(ds)
        if cred.pid and _alive(cred.pid) and healthy(cred.url):
            return cred
    else:
        cred = init_data_dir(ds, ls_bin, log)
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    data = server_dir(ds).resolve()
    log_file = open(data / "server.log", "ab")
    # Its own process group, so stop() ends the Django server and its children together.
    proc = subprocess.Popen([str(ls_bin), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(port)],
                            env=server_env(data, ds.dir.resolve(), cred), stdout=log_file, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True, cwd=data)
    log_file.close()
    deadline = time.monotonic() + timeout
    while not healthy(url, timeout=1.0):
        if proc.poll() is not None:
            raise LabelStudioError(f"Label Studio exited with code {proc.returncode} while starting; see {data / 'server.log'}")
        if time.monotonic() > deadline:
            _kill_group(proc.pid)
            raise LabelStudioError(f"Label Studio did not answer {url}/health within {timeout:.0f} s; see {data / 'server.log'}")
        time.sleep(0.3)
    cred.url, cred.pid = url, proc.pid
    write_credentials(ds, cred)
    return cred


def _kill_group(pid: int, grace: float = 15.0) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = 0 if _alive(pid) else pid
        if done:
            return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop(ds: schema.DatasetPaths) -> bool:
    """Stop the dataset's server if it runs; True when one was stopped."""
    if not credentials_path(ds).is_file():
        return False
    cred = read_credentials(ds)
    if not (cred.pid and _alive(cred.pid)):
        return False
    _kill_group(cred.pid)
    cred.pid = 0
    write_credentials(ds, cred)
    return True


def serve_forever(ds: schema.DatasetPaths, port: int | None = None, log=print) -> None:  # type: ignore[no-untyped-def]
    """Start the server and block until Ctrl-C, then stop it."""
    cred = start(ds, port, log=log)
    log(f"Label Studio for dataset {ds.name!r}: {cred.url}  (admin {cred.email}; password and token in {credentials_path(ds)})")
    log("Ctrl-C stops it.")
    try:
        while _alive(cred.pid):
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        stop(ds)
    sys.stdout.flush()
