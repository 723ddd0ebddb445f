"""Scale-out: run the stale stages of the DVC pipeline on a Dask cluster; dvc.lock stays the source of truth.

Workers run each stage's command in the repository (a filesystem they share) as DVC would (its shell, cwd = the stage's
wdir, DVC_ROOT/DVC_STAGE set); the client records every finished stage with `dvc commit` one at a time, so dvc.lock is
written by one process only. Stages that talk to Label Studio run on the client.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiermap.formats.base import InputError

CLIENT_COMMANDS = ("tiermap annotate push", "tiermap annotate pull")  # need the dataset's Label Studio: never on a worker
SPEC_RULE = "local[:N] | tcp://HOST:PORT | slurm"
OK = ("ok", "unchanged")  # a stage's results its dependants may run on


class ClusterError(InputError):
    """Bad input to `tiermap repro --cluster` (a cluster spec, a target): one line."""


@dataclass
class Stage:
    """One executable stage of the expanded pipeline (foreach/matrix items are separate stages, `name@key`)."""

    name: str
    cmds: list[str]
    wdir: str
    outs: list[str]                      # non-persistent outputs: removed before the command runs, as DVC does
    persist: list[str] = field(default_factory=list)
    preds: list[str] = field(default_factory=list)
    downstream: bool = False             # not stale itself, only below a stale stage: runs only if its inputs changed

    @property
    def on_client(self) -> bool:
        """True for stages that talk to Label Studio (push, pull)."""
        return any(c.strip().startswith(CLIENT_COMMANDS) for c in self.cmds)


@dataclass
class Plan:
    """The stale stages in dependency order and the edges between them."""

    stages: dict[str, Stage]
    order: list[str]


@dataclass
class Outcome:
    """What became of each stage of a plan."""

    done: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)   # stage -> its one-line error
    skipped: list[str] = field(default_factory=list)       # dependants of a failed stage, not run
    unchanged: list[str] = field(default_factory=list)     # below a stale stage whose outputs came out the same: not run
    seconds: dict[str, float] = field(default_factory=dict)
    wall: float = 0.0
    dashboard: str | None = None


def _matches(name: str, target: str) -> bool:
    """A target names a stage (`sequence@room0-baseline`) or every item of a foreach/matrix stage (`sequence`)."""
    return name == target or name.startswith(target + "@")


def plan(repo: Path | str, targets: list[str] | None = None, force: bool = False) -> Plan:
    """The stale stages (dvc status) among the targets and their upstream, plus everything downstream of a stale one."""
    import networkx as nx
    from dvc.repo import Repo

    with contextlib.chdir(repo), Repo(".") as r:  # stage addresses (`b@x`, `sub/dvc.yaml:s`) are relative to the cwd
        graph = r.index.graph  # edges: stage -> the stage it depends on
        by_name = {s.addressing: s for s in graph.nodes if s.cmd}
        wanted = set(by_name)
        if targets:
            wanted = set()
            for t in targets:
                hit = {n for n in by_name if _matches(n, t)}
                if not hit:
                    raise ClusterError(f"`{t}` is not a stage of dvc.yaml (stages: {', '.join(sorted({n.split('@')[0] for n in by_name}))})")
                for n in hit:
                    wanted |= {n} | {s.addressing for s in nx.descendants(graph, by_name[n]) if s.cmd}
        stale = set(wanted) if force else {n for n in r.status(targets=sorted(wanted)) if n in wanted}
        direct = set(stale)
        dag = nx.DiGraph()
        dag.add_nodes_from(wanted)
        dag.add_edges_from((b.addressing, a.addressing) for a, b in graph.edges
                           if a.addressing in wanted and b.addressing in wanted)  # pred -> dependant
        for n in list(stale):
            stale |= nx.descendants(dag, n)
        stages = {}
        for n in stale:
            s = by_name[n]
            cmds = s.cmd if isinstance(s.cmd, list) else [s.cmd]
            stages[n] = Stage(n, cmds, s.wdir, [str(o.fs_path) for o in s.outs if not o.persist],
                              [str(o.fs_path) for o in s.outs if o.persist], sorted(p for p in dag.predecessors(n) if p in stale),
                              downstream=n not in direct)
        order = [n for n in nx.lexicographical_topological_sort(dag) if n in stale]
    return Plan(stages, order)


def _clear(out: str, persist: bool) -> None:
    """Remove an output (unless persistent) and partial temp files a killed writer left beside it."""
    p = Path(out)
    for tmp in p.parent.glob(f".{p.name}.*") if p.parent.is_dir() else []:
        if tmp.name.endswith((".tmp", ".partial", ".old")):
            shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink(missing_ok=True)
    if not persist and (p.exists() or p.is_symlink()):
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()


def _die_with_parent() -> None:
    """In the stage's process: get SIGKILL when the worker that started it dies (Linux), so no orphan keeps writing."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _shell(cmd: str) -> list[str]:
    """The command line DVC uses: $SHELL (or /bin/sh) -c, without the user's rc files."""
    sh = os.getenv("SHELL") or "/bin/sh"
    opts = {"bash": ["--noprofile", "--norc"], "zsh": ["--no-rcs"]}.get(os.path.basename(sh), [])
    return [sh, *opts, "-c", cmd]


def run_stage(stage: Stage, root: str, env: dict[str, str], *preds: dict[str, Any]) -> dict[str, Any]:
    """Run one stage's commands (on a worker); skipped when a predecessor did not succeed. Returns status, error, seconds."""
    if any(p.get("status") not in OK for p in preds):
        return {"stage": stage.name, "status": "skipped"}
    t0 = time.perf_counter()
    for out in stage.outs:
        _clear(out, persist=False)
    for out in stage.persist:
        _clear(out, persist=True)
    full = {**os.environ, **env, "DVC_ROOT": root, "DVC_STAGE": stage.name}
    for cmd in stage.cmds:
        res = subprocess.run(_shell(cmd), cwd=stage.wdir, env=full, text=True, capture_output=True,
                             preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        if res.returncode != 0:
            lines = [ln.strip() for ln in (res.stderr or res.stdout or "").splitlines() if ln.strip()]
            return {"stage": stage.name, "status": "failed", "seconds": time.perf_counter() - t0,
                    "error": f"{stage.name}: exit {res.returncode}: {lines[-1] if lines else cmd}"}
    return {"stage": stage.name, "status": "ok", "seconds": time.perf_counter() - t0}


def stage_env() -> dict[str, str]:
    """What the stage commands need from the client: this venv's bin first on PATH, PYTHONPATH (a worktree's code), offline DVC."""
    env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]), "DVC_NO_ANALYTICS": "1"}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def parse_spec(spec: str) -> tuple[str, Any]:
    """`local[:N]` → ("local", N or None); `tcp://host:port` → ("tcp", address); `slurm` → ("slurm", None)."""
    if m := re.fullmatch(r"local(?::(\d+))?", spec):
        n = int(m.group(1)) if m.group(1) else None
        if n == 0:
            raise ClusterError("--cluster local:N needs N >= 1 workers")
        return "local", n
    if re.fullmatch(r"tcp://[^\s:/]+:\d+", spec):
        return "tcp", spec
    if spec == "slurm":
        return "slurm", None
    raise ClusterError(f"unknown --cluster `{spec}` (expected {SPEC_RULE})")


def slurm_cluster(cluster: dict[str, Any]) -> Any:
    """A dask-jobqueue SLURMCluster from the params.yaml `cluster:` block (not yet scaled)."""
    from dask_jobqueue import SLURMCluster

    kw = {k: v for k, v in cluster.items() if k != "jobs" and v not in (None, [])}
    return SLURMCluster(**kw)


@contextlib.contextmanager
def connect(spec: str, cluster: dict[str, Any] | None = None) -> Iterator[Any]:
    """A distributed Client on the cluster the spec names (local processes, an existing scheduler, or Slurm jobs)."""
    from distributed import Client, LocalCluster

    kind, arg = parse_spec(spec)
    if kind == "tcp":
        with Client(arg, timeout="10s") as client:
            yield client
        return
    if kind == "local":
        lc = LocalCluster(n_workers=arg or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                          dashboard_address=":0", silence_logs=40)
    else:
        lc = slurm_cluster(cluster or {})
        lc.scale(jobs=int((cluster or {}).get("jobs", 1)))
    with lc, Client(lc) as client:
        yield client


def is_stale(repo: Path | str, name: str) -> bool:
    """What `dvc repro` asks before a stage below one that ran: did its dependencies (or command, params) change?"""
    import logging

    from dvc.repo import Repo

    logging.getLogger("dvc").setLevel(logging.WARNING)
    with contextlib.chdir(repo), Repo(".") as r:
        return name in r.status(targets=[name])


def commit(repo: Path | str, names: list[str]) -> None:
    """Record finished stages in dvc.lock (`dvc commit -f`), in this process, one call at a time."""
    import logging

    from dvc.repo import Repo

    logging.getLogger("dvc").setLevel(logging.WARNING)  # no "Updating lock file" per stage in the progress output
    with contextlib.chdir(repo), Repo(".") as r:
        for n in names:
            r.commit(n, force=True)


Progress = Callable[[dict[str, int], str], None]


def execute(repo: Path | str, p: Plan, client: Any, retries: int = 2, on_event: Progress | None = None) -> Outcome:
    """Submit the plan's worker stages with their predecessors' futures as dependencies; run client stages here; commit each."""
    from distributed import wait

    root = str(Path(repo).resolve())
    env, out, t0 = stage_env(), Outcome(dashboard=getattr(client, "dashboard_link", None)), time.perf_counter()
    futures: dict[str, Any] = {}
    results: dict[str, dict[str, Any]] = {}
    pending = list(p.order)

    def report(msg: str) -> None:
        if on_event:
            running = sum(1 for n, f in futures.items() if n not in results and all(q in results for q in p.stages[n].preds))
            on_event({"done": len(results), "running": running, "waiting": len(p.order) - len(results) - running,
                      "total": len(p.order)}, msg)

    def finish(name: str, res: dict[str, Any]) -> None:
        results[name] = res
        if res["status"] == "ok":
            commit(root, [name])
            out.done.append(name)
            out.seconds[name] = res["seconds"]
            report(f"{name} done ({res['seconds']:.1f} s)")
        elif res["status"] == "failed":
            out.failed[name] = res["error"]
            report(f"FAILED {res['error']}")
        elif res["status"] == "unchanged":
            out.unchanged.append(name)
            report(f"{name} unchanged: its inputs came out the same, not run")
        else:
            out.skipped.append(name)

    def settled(st: Stage) -> bool:
        """A stage below stale ones is decided once they finished: not run when DVC sees nothing changed for it."""
        if not st.downstream or not all(q in results for q in st.preds):
            return False
        if all(results[q]["status"] in OK for q in st.preds) and not is_stale(root, st.name):
            finish(st.name, {"stage": st.name, "status": "unchanged"})
            pending.remove(st.name)
            return True
        st.downstream = False
        return False

    while len(results) < len(p.order):
        for name in list(pending):  # submit every worker stage whose predecessors are submitted (Dask orders them)
            st = p.stages[name]
            if st.downstream and not settled(st):
                continue
            if name not in pending or st.on_client or not all(q in futures or q in results for q in st.preds):
                continue
            deps = [futures[q] if q in futures else results[q] for q in st.preds]
            futures[name] = client.submit(run_stage, st, root, env, *deps, key=f"stage-{name}-{time.time_ns()}",
                                          pure=False, retries=retries)
            pending.remove(name)
        for name in list(pending):  # client stages run here once their predecessors finished
            st = p.stages[name]
            if name in pending and st.on_client and not st.downstream and all(q in results for q in st.preds):
                pending.remove(name)
                report(f"{name} running on the client")
                finish(name, run_stage(st, root, env, *(results[q] for q in st.preds)))
        live = [f for n, f in futures.items() if n not in results]
        if not live:
            if pending and not any(all(q in results for q in p.stages[n].preds) for n in pending):
                raise RuntimeError(f"cluster runner stuck with {pending}")  # pragma: no cover - a bug, not input
            continue
        report("")
        wait(live, return_when="FIRST_COMPLETED")
        for name, f in futures.items():
            if name not in results and f.done():
                finish(name, f.result())
    out.wall = time.perf_counter() - t0
    return out


def repro(repo: Path | str, spec: str, targets: list[str] | None = None, force: bool = False, cluster: dict[str, Any] | None = None,
          on_start: Callable[[Plan, str | None], None] | None = None, on_event: Progress | None = None) -> Outcome:
    """Plan, connect and run: the library behind `tiermap repro --cluster`."""
    parse_spec(spec)
    p = plan(repo, targets, force)
    if not p.order:
        if on_start:
            on_start(p, None)
        return Outcome()
    with connect(spec, cluster) as client:
        if on_start:
            on_start(p, client.dashboard_link)
        return execute(repo, p, client, on_event=on_event)
