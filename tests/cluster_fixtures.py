"""A tiny real git + DVC repository with a two-branch DAG (a → b@x, b@y → c@x, c@y → d) for the cluster runner."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

BIN = Path(sys.executable).parent

# Each stage: python step.py OUT SLEEP INPUTS...; OUT is the sha256 of the inputs, written through temp + rename.
# An input containing BAD is bad input: one line on stderr, exit 1.
STEP = '''\
import hashlib, os, sys, time
out, sleep, inputs = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
h = hashlib.sha256(out.encode())
for p in inputs:
    data = open(p, "rb").read()
    if b"BAD" in data:
        print(f"step.py: starting {out}", file=sys.stderr)
        sys.exit(f"step.py: bad input in {p}")
    h.update(data)
time.sleep(sleep)
os.makedirs(os.path.dirname(out), exist_ok=True)
tmp = f"{os.path.dirname(out)}/.{os.path.basename(out)}.{os.getpid()}.tmp"
with open(tmp, "w") as fh:
    fh.write(h.hexdigest() + "\\n")
os.replace(tmp, out)
'''


def dag_yaml(sleep_x: float = 2.0, sleep: float = 0.0) -> dict:
    """dvc.yaml of the diamond: b@x sleeps `sleep_x` seconds, every other stage `sleep`."""
    s = {"a": {"cmd": f"python step.py out/a.txt {sleep} data/seed.txt", "deps": ["step.py", "data/seed.txt"], "outs": ["out/a.txt"]},
         "b": {"foreach": {"x": {"sleep": sleep_x, "extra": "data/x.txt"}, "y": {"sleep": sleep, "extra": "data/y.txt"}},
               "do": {"cmd": "python step.py out/b_${key}.txt ${item.sleep} out/a.txt ${item.extra}",
                      "deps": ["step.py", "out/a.txt", "${item.extra}"], "outs": ["out/b_${key}.txt"]}},
         "c": {"foreach": ["x", "y"],
               "do": {"cmd": f"python step.py out/c_${{item}}.txt {sleep} out/b_${{item}}.txt",
                      "deps": ["step.py", "out/b_${item}.txt"], "outs": ["out/c_${item}.txt"]}},
         "d": {"cmd": f"python step.py out/d.txt {sleep} out/c_x.txt out/c_y.txt",
               "deps": ["step.py", "out/c_x.txt", "out/c_y.txt"], "outs": ["out/d.txt"]}}
    return {"stages": s}


def make_tiny_repo(path: Path, sleep_x: float = 2.0, sleep: float = 0.0) -> Path:
    """git init + dvc init + step.py + inputs + dvc.yaml, committed; nothing reproduced yet."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "step.py").write_text(STEP)
    (path / "data").mkdir(exist_ok=True)
    for name, text in (("seed", "seed 1\n"), ("x", "x input\n"), ("y", "y input\n")):
        (path / "data" / f"{name}.txt").write_text(text)
    (path / "dvc.yaml").write_text(yaml.safe_dump(dag_yaml(sleep_x, sleep), sort_keys=False))
    for cmd in (["git", "init", "-q", "-b", "main"], [str(BIN / "dvc"), "init", "-q"],
                [str(BIN / "dvc"), "config", "core.analytics", "false"], [str(BIN / "dvc"), "config", "core.check_update", "false"],
                ["git", "add", "-A"], ["git", "commit", "-q", "-m", "tiny"]):
        subprocess.run(cmd, cwd=path, check=True, capture_output=True)
    return path


def lock_outs(repo: Path) -> dict[str, list[tuple[str, str]]]:
    """Stage → [(out path, md5)] from dvc.lock."""
    lock = yaml.safe_load((repo / "dvc.lock").read_text())
    return {name: sorted((o["path"], o["md5"]) for o in st.get("outs", [])) for name, st in lock["stages"].items()}
