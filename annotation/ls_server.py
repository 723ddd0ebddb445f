"""Label Studio servers per dataset: one server (a *seat*) per annotator, offline, secrets outside any served root.

Why one server per annotator: the community edition has no roles, and its organizations do not isolate either
(1.23.2: `AnnotationAPI` uses `Annotation.objects.all()`, `Project.has_permission` is true for every user who was
never removed from the project's organization, and a user may PATCH its own `active_organization`). A seat is its
own Django process and SQLite database, holding the annotator, the admin and a copy of the project, so nothing an
annotator can do reaches another annotator's work.

Layout (datasets/<d>/labelstudio/, mode 0700, ignored by git):
    credentials.json   LSCredentials (mode 0600): per seat the admin password, API token, URL and pid
    simulated.json     passwords of simulated annotators only (mode 0600); real annotators' passwords are not stored
    seats/seat-<n>/    one Label Studio data dir per seat: sqlite, .env (SECRET_KEY), media, export, server.log
The served file root (LOCAL_FILES_DOCUMENT_ROOT) is datasets/<d>/crops/: only the images annotators must see.
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import requests

from tiermap import atomic
from tiermap.formats.base import SchemaError
from tiermap.formats.labelstudio import (
    CREDENTIALS_FILE,
    SIMULATED_FILE,
    LSCredentials,
    LSSeat,
    read_ls_credentials,
    read_simulated_passwords,
    write_ls_credentials,
    write_simulated_passwords,
)
from tiermap.formats.layout import DatasetPaths

LS_VERSION = "1.23.2"
ADMIN_EMAIL = "admin@tiermap.local"
_REPO = Path(__file__).resolve().parents[1]
# get_env() in Label Studio falls back to these bare names, so a stray one in the shell changes its behaviour.
_SCRUB = ("USERNAME", "PASSWORD", "HOST", "PORT", "DEBUG", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
          "http_proxy", "https_proxy", "all_proxy", "LABEL_STUDIO_API_KEY")
EMAIL_RE = re.compile(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+$")
Log = Callable[[str], None]


class LabelStudioError(RuntimeError):
    """Label Studio is missing, unreachable or refused a request."""


def server_dir(ds: DatasetPaths) -> Path:
    """datasets/<d>/labelstudio/: seats' data dirs and credentials (never tracked: it holds a `*` .gitignore)."""
    return ds.dir / "labelstudio"


def credentials_path(ds: DatasetPaths) -> Path:
    """The credentials file of a dataset's seats."""
    return server_dir(ds) / CREDENTIALS_FILE


def simulated_path(ds: DatasetPaths) -> Path:
    """Passwords of simulated annotators (demo and tests)."""
    return server_dir(ds) / SIMULATED_FILE


def seat_dir(ds: DatasetPaths, seat: LSSeat) -> Path:
    """A seat's Label Studio data dir."""
    return server_dir(ds) / "seats" / seat.slug


def document_root(ds: DatasetPaths) -> Path:
    """The only folder Label Studio serves files from: the crops annotators look at."""
    return ds.dir / "crops"


def _ensure_private_dir(ds: DatasetPaths) -> Path:
    d = server_dir(ds)
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o700)
    gi = d / ".gitignore"
    if not gi.is_file():
        gi.write_text("# Label Studio data and secrets: never tracked\n*\n")
    return d


def read_credentials(ds: DatasetPaths) -> LSCredentials:
    """The dataset's seats (none yet: an empty record)."""
    path = credentials_path(ds)
    return read_ls_credentials(path) if path.is_file() else LSCredentials(admin_email=ADMIN_EMAIL)


def write_credentials(ds: DatasetPaths, cred: LSCredentials) -> Path:
    """Write credentials atomically, readable by the owner only."""
    _ensure_private_dir(ds)
    return write_ls_credentials(cred, credentials_path(ds))


def read_simulated(ds: DatasetPaths) -> dict[str, str]:
    """email → password of simulated annotators."""
    return read_simulated_passwords(simulated_path(ds))


def seat_of(ds: DatasetPaths, annotator: str) -> LSSeat:
    """The seat of one annotator; a clear error when there is none."""
    seat = read_credentials(ds).seat(annotator)
    if seat is None:
        raise LabelStudioError(f"{credentials_path(ds)}: no seat for {annotator!r} (add it with `tiermap annotate users add {annotator}`)")
    return seat


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


def server_env(data_dir: Path, doc_root: Path, email: str, password: str, token: str) -> dict[str, str]:
    """Environment for every label-studio command: offline, no prompts, legacy tokens on, only `doc_root` served."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env.update({
        "LABEL_STUDIO_BASE_DATA_DIR": str(Path(data_dir).resolve()), "DJANGO_DB": "sqlite",
        "LABEL_STUDIO_USERNAME": email, "LABEL_STUDIO_PASSWORD": password, "LABEL_STUDIO_USER_TOKEN": token,
        "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true", "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
        "LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED": "true", "LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT": str(Path(doc_root).resolve()),
        "LABEL_STUDIO_LATEST_VERSION_CHECK": "false", "LABEL_STUDIO_COLLECT_ANALYTICS": "false",
        "SENTRY_DSN": "", "FRONTEND_SENTRY_DSN": "", "FEATURE_FLAGS_OFFLINE": "true",
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    })
    return env


def seat_env(ds: DatasetPaths, seat: LSSeat, admin_email: str = ADMIN_EMAIL) -> dict[str, str]:
    """The environment of one seat's label-studio commands."""
    return server_env(seat_dir(ds, seat), document_root(ds), admin_email, seat.admin_password, seat.token)


def template_dir(ls_bin: Path) -> Path:
    """A migrated data dir kept beside the server's venv (starting from a copy takes ~3 s instead of ~25 s)."""
    return ls_bin.resolve().parent.parent / f"tiermap-template-{LS_VERSION}"


def ensure_template(ls_bin: Path, log: Log = print) -> Path:
    """Create the migrated template data dir once (`label-studio init`)."""
    tpl = template_dir(ls_bin)
    if (tpl / "label_studio.sqlite3").is_file():
        return tpl
    log(f"preparing a Label Studio template (database migrations, ~25 s, once): {tpl}")
    with atomic.atomic_dir(tpl) as tmp:
        env = server_env(tmp, tmp, ADMIN_EMAIL, "template-" + secrets.token_hex(8), "t" + secrets.token_hex(19))
        res = subprocess.run([str(ls_bin), "init", "--enable-legacy-api-token", "--data-dir", str(tmp)],
                             env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
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


def _set_annotator_lines(email: str, password: str) -> list[str]:
    """Django lines that create (or find) the annotator, set its password and put it in the seat's organization."""
    return ["from users.models import User", "from organizations.models import Organization",
            "org = Organization.objects.first()",
            f"u = User.objects.filter(email={email!r}).first() or User.objects.create_user(email={email!r}, "
            f"username={email.split('@')[0]!r}, first_name={email.split('@')[0].capitalize()!r})",
            f"u.set_password({password!r}); u.active_organization = org; u.save()",
            "org.add_user(u) if not org.has_user(u) else None",
            "print('SEATUSER=%d' % u.id)"]


def add_seat(ds: DatasetPaths, annotator: str, password: str, simulated: bool = False, log: Log = print) -> LSSeat:
    """A new seat for one annotator: a server data dir from the template with fresh secrets, the annotator's account."""
    if not EMAIL_RE.match(annotator):
        raise SchemaError("<users>", "email", "a plain e-mail address", annotator)
    cred = read_credentials(ds)
    if cred.seat(annotator) is not None:
        raise LabelStudioError(f"{annotator} already has a seat (use --reset-password for a new password)")
    ls_bin = label_studio_bin()
    tpl = ensure_template(ls_bin, log)
    n = max((int(s.slug.split("-")[1]) for s in cred.seats), default=0) + 1
    seat = LSSeat(annotator=annotator, slug=f"seat-{n}", admin_password=secrets.token_urlsafe(12),
                         token=secrets.token_hex(20), simulated=simulated)
    _ensure_private_dir(ds)
    document_root(ds).mkdir(parents=True, exist_ok=True)
    with atomic.atomic_dir(seat_dir(ds, seat)) as tmp:
        tmp.chmod(0o700)
        shutil.copy2(tpl / "label_studio.sqlite3", tmp / "label_studio.sqlite3")
        for sub in ("media", "export"):
            (tmp / sub).mkdir()
        atomic.write_text(tmp / ".env", f"SECRET_KEY={secrets.token_urlsafe(50)}\n", mode=0o600)
        env = server_env(tmp, document_root(ds), cred.admin_email, seat.admin_password, seat.token)
        out = django_shell(ls_bin, env, [
            "from users.models import User", "from rest_framework.authtoken.models import Token",
            f"a = User.objects.get(email={ADMIN_EMAIL!r})", f"a.email = {cred.admin_email!r}",
            f"a.set_password({seat.admin_password!r}); a.save()",
            f"Token.objects.filter(user=a).update(key={seat.token!r})",
            *_set_annotator_lines(annotator, password)])
    seat.user_id = _seat_user(out)
    cred.seats.append(seat)
    write_credentials(ds, cred)
    if simulated:
        _keep_simulated(ds, annotator, password)
    return seat


def reset_password(ds: DatasetPaths, annotator: str, password: str) -> None:
    """Give an annotator a new password on its seat (stored only for simulated annotators)."""
    seat = seat_of(ds, annotator)
    django_shell(label_studio_bin(), seat_env(ds, seat, read_credentials(ds).admin_email), _set_annotator_lines(annotator, password))
    if seat.simulated:
        _keep_simulated(ds, annotator, password)


def _keep_simulated(ds: DatasetPaths, annotator: str, password: str) -> None:
    """Store a simulated annotator's password (owner-only file); real annotators' passwords never get here."""
    write_simulated_passwords(simulated_path(ds), {**read_simulated(ds), annotator: password})


def _seat_user(out: str) -> int:
    m = re.search(r"SEATUSER=(\d+)", out)
    if m is None:
        raise LabelStudioError("label-studio shell did not report the annotator's user id")
    return int(m.group(1))


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (label-studio silently moves to the next port when its port is busy)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str, timeout: float = 2.0) -> bool:
    """True when the server answers /health with UP."""
    if not url:
        return False
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


def running(seat: LSSeat) -> bool:
    """Whether a seat's server process is alive and healthy."""
    return bool(seat.pid) and _alive(seat.pid) and healthy(seat.url)


def start(ds: DatasetPaths, timeout: float = 120.0, log: Log = print) -> LSCredentials:
    """Start every seat's server that is not running (all at once); returns the credentials with URLs and pids."""
    ls_bin = label_studio_bin()
    cred = read_credentials(ds)
    document_root(ds).mkdir(parents=True, exist_ok=True)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    for seat in cred.seats:
        if running(seat):
            continue
        port = free_port()
        seat.url = f"http://127.0.0.1:{port}"
        data = seat_dir(ds, seat).resolve()
        with open(data / "server.log", "ab") as log_file:
            # Its own process group, so stop() ends the Django server and its children together.
            procs[seat.annotator] = subprocess.Popen(
                [str(ls_bin), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(port)],
                env=seat_env(ds, seat, cred.admin_email), stdout=log_file, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True, cwd=data)
        seat.pid = procs[seat.annotator].pid
    deadline = time.monotonic() + timeout
    waiting = dict(procs)
    try:
        while waiting:
            for who, proc in list(waiting.items()):
                seat = cred.seat(who)
                assert seat is not None
                if healthy(seat.url, timeout=1.0):
                    del waiting[who]
                elif proc.poll() is not None:
                    raise LabelStudioError(f"Label Studio of {who} exited with code {proc.returncode} while starting; "
                                           f"see {seat_dir(ds, seat) / 'server.log'}")
            if waiting and time.monotonic() > deadline:
                raise LabelStudioError(f"Label Studio of {', '.join(waiting)} did not answer /health within {timeout:.0f} s")
            time.sleep(0.3)
    except BaseException:
        for proc in procs.values():
            _kill_group(proc.pid)
        raise
    write_credentials(ds, cred)
    if procs:
        log(f"started {len(procs)} Label Studio seat(s) for dataset {ds.name!r}")
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


def stop(ds: DatasetPaths, annotator: str | None = None) -> int:
    """Stop the dataset's running seats (or one annotator's); how many were stopped."""
    if not credentials_path(ds).is_file():
        return 0
    cred = read_credentials(ds)
    n = 0
    for seat in cred.seats:
        if annotator not in (None, seat.annotator) or not (seat.pid and _alive(seat.pid)):
            continue
        _kill_group(seat.pid)
        seat.pid = 0
        n += 1
    write_credentials(ds, cred)
    return n


def serve_forever(ds: DatasetPaths, log: Log = print) -> None:
    """Start every seat and block until Ctrl-C, then stop them."""
    cred = start(ds, log=log)
    for seat in cred.seats:
        log(f"  {seat.annotator}: {seat.url}")
    log("Ctrl-C stops them.")
    try:
        while any(_alive(s.pid) for s in cred.seats):
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        stop(ds)
    sys.stdout.flush()
