"""Hostile run: random signals, concurrent runs, tampered records and caches, a full disk.

Each trial runs ``diamondlab run`` (this checkout, through ``python -m
diamondlab``) in its own folder under a work folder and checks the exit
status against the documented ones (README, "Exit status"), the outputs
(complete per manifest.json, or the earlier state intact byte for byte),
that no temporary file or lock remains and that stderr holds a message
and no traceback (except exit 70).  Reproducible with ``--seed``.

    python .ci/hostile.py --trials 200 --seed 1 --out-json hostile.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

DOCUMENTED = {0, 1, 2, 70, 74, 130, 143}
SIGNALS = {"SIGINT": (signal.SIGINT, 130), "SIGTERM": (signal.SIGTERM, 143)}
KINDS = ("signal", "concurrent", "record", "cache", "fullfs")
TIMEOUT = 120


def base_cmd(out: Path, save: Path | None, steps: int, every: int, extra=()) -> list[str]:
    cmd = [sys.executable, "-m", "diamondlab", "run", "--shape", "24", "--steps", str(steps),
           "--backend", "cpu", "--no-progress", "--nt", "4", "--receiver", "3,3,3",
           "--source", "12,12,12", "--frequency", "0.05", "--snapshot-every", str(every),
           "--snapshot-format", "npz,vti", "--out", str(out)]
    if save is not None:
        cmd += ["--save", str(save)]
    return cmd + list(extra)


def env_with(cache: Path) -> dict:
    env = dict(os.environ)
    env["DIAMONDLAB_CACHE"] = str(cache)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("DIAMONDLAB_PROGRESS", None)
    return env


def tail(text: str, n: int = 600) -> str:
    return text[-n:]


# ---------------------------------------------------------------- checks

def load_ok(path: Path) -> str | None:
    """None when the file loads, else why not."""
    try:
        if path.suffix == ".npz":
            with np.load(path) as z:
                for k in z.files:
                    z[k]
        elif path.suffix == ".vti":
            lines = path.read_text(errors="replace").rstrip().splitlines()
            if not lines or lines[-1].strip() != "</VTKFile>":
                return f"{path.name}: last line is not </VTKFile>"
        elif path.suffix == ".json":
            json.loads(path.read_text())
    except Exception as exc:  # noqa: BLE001 - any failure to load is the finding
        return f"{path.name}: {type(exc).__name__}: {exc}"
    return None


def outputs_complete(out: Path) -> str | None:
    man = out / "manifest.json"
    if not man.is_file():
        return "no manifest.json"
    try:
        data = json.loads(man.read_text())
    except Exception as exc:  # noqa: BLE001
        return f"manifest.json unreadable: {exc}"
    files = data.get("files")
    if not isinstance(files, list):
        return "manifest.json has no file list"
    for name in files:
        p = out / name
        if not p.is_file():
            return f"manifest lists {name}, missing"
        why = load_ok(p)
        if why:
            return why
    rec = data.get("record")
    if rec and not data.get("failed"):
        why = load_ok(Path(rec)) if Path(rec).exists() else f"record {rec} missing"
        if why:
            return why
    return None


def digest_tree(*paths: Path) -> dict:
    out = {}
    for root in paths:
        if root.is_file():
            out[str(root)] = hashlib.sha256(root.read_bytes()).hexdigest()
        elif root.is_dir():
            for p in sorted(root.rglob("*")):
                if p.is_file():
                    out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def leftovers(folder: Path) -> list[str]:
    bad = []
    for p in folder.rglob("*"):
        n = p.name
        if (n.startswith(".") and ".tmp" in n) or n == ".diamondlab-staging" or n == ".diamondlab.lock":
            bad.append(str(p.relative_to(folder)))
    return bad


def no_outputs(out: Path) -> bool:
    return not out.exists() or not any(p.is_file() for p in out.rglob("*"))


def stderr_ok(rc: int, err: str) -> str | None:
    if rc == 70:
        return None
    if "Traceback" in err:
        return "traceback in stderr"
    if rc != 0 and not err.strip():
        return "no message on stderr"
    return None


# ---------------------------------------------------------------- trials

class Ctx:
    def __init__(self, root: Path, warm: Path, baseline: Path, steps: int, every: int):
        self.root, self.warm, self.baseline, self.steps, self.every = root, warm, baseline, steps, every


def run_proc(cmd, env, sig=None, delay=0.0):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sent = False
    if sig is not None:
        try:
            p.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            p.send_signal(sig)
            sent = True
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    return p.returncode, out, err, sent, time.monotonic() - t0


def trial_signal(ctx: Ctx, rng: random.Random, tdir: Path) -> dict:
    signame = rng.choice(sorted(SIGNALS))
    sig, want = SIGNALS[signame]
    delay = round(rng.uniform(0.0, 3.0), 3)
    fresh = rng.random() < 0.25
    overwrite = rng.random() < 0.4
    cache = tdir / "cache" if fresh else ctx.warm
    out, save = tdir / "run" / "out", tdir / "run" / "rec.npz"
    out.parent.mkdir(parents=True)
    before = {}
    extra = []
    if overwrite:
        shutil.copytree(ctx.baseline / "out", out)
        shutil.copy2(ctx.baseline / "rec.npz", save)
        before = digest_tree(out, save)
        extra = ["--overwrite"]
    cmd = base_cmd(out, save, ctx.steps, ctx.every, extra)
    rc, _, err, sent, wall = run_proc(cmd, env_with(cache), sig, delay)
    case = dict(variant=f"{signame}@{delay}s {'fresh' if fresh else 'warm'}-cache"
                        f"{' overwrite' if overwrite else ''}", cmd=cmd, rc=rc, signal_sent=sent,
                stderr_tail=tail(err), wall=round(wall, 2))
    reasons = []
    if rc == -sig:
        reasons.append(f"killed by {signame} (no handler yet: exit status {rc}, not {want})")
    elif rc < 0:
        reasons.append(f"crashed: died of {signal.Signals(-rc).name} after {signame} (expected {want})")
    elif rc not in DOCUMENTED:
        reasons.append(f"undocumented exit status {rc}")
    elif sent and rc not in (want, 0):
        reasons.append(f"exit {rc} after {signame}, expected {want}")
    elif not sent and rc != 0:
        reasons.append(f"exit {rc} without a signal")
    if rc == 0 or rc == want:
        why = outputs_complete(out)
        if why is not None:
            if overwrite:
                after = digest_tree(out, save)
                if after != before:
                    reasons.append(f"outputs incomplete ({why}) and earlier run changed")
            elif not no_outputs(out):
                reasons.append(f"outputs incomplete: {why}")
    if sent and rc == 0:
        case["note"] = "signal sent while running, yet exit 0 (landed in the final writes, or lost)"
    left = leftovers(tdir)
    if left and rc >= 0:
        reasons.append(f"leftovers: {left[:5]}")
    why = stderr_ok(rc, err)
    if why:
        reasons.append(why)
    case["reasons"] = reasons
    return case


def trial_concurrent(ctx: Ctx, rng: random.Random, tdir: Path) -> dict:
    out, save = tdir / "run" / "out", tdir / "run" / "rec.npz"
    out.parent.mkdir(parents=True)
    cmd = base_cmd(out, save, ctx.steps, ctx.every)
    env = env_with(ctx.warm)
    t0 = time.monotonic()
    ps = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
          for _ in range(2)]
    res = []
    for p in ps:
        try:
            o, e = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
        res.append((p.returncode, e))
    rcs = [r for r, _ in res]
    case = dict(variant="two at once", cmd=cmd, rc=rcs, stderr_tail=[tail(e, 300) for _, e in res],
                wall=round(time.monotonic() - t0, 2))
    reasons = []
    if sorted(rcs) != [0, 2]:
        reasons.append(f"exit statuses {rcs}, expected one 0 and one 2")
    for rc, e in res:
        if rc == 2 and "pid" not in e.lower() and "in use" not in e.lower():
            reasons.append("refusal does not name the holder")
        why = stderr_ok(rc, e)
        if why:
            reasons.append(why)
    if 0 in rcs:
        why = outputs_complete(out)
        if why:
            reasons.append(f"outputs incomplete: {why}")
    left = leftovers(tdir)
    if left:
        reasons.append(f"leftovers: {left[:5]}")
    case["reasons"] = reasons
    return case


def tamper_record(src: Path, dst: Path, how: str, rng: random.Random) -> str:
    data = src.read_bytes()
    if how == "truncate":
        n = rng.randrange(0, len(data))
        dst.write_bytes(data[:n])
        return f"truncated to {n} of {len(data)} bytes"
    if how == "flip":
        b = bytearray(data)
        pos = sorted(rng.sample(range(len(b)), 8))
        for i in pos:
            b[i] ^= 0xFF
        dst.write_bytes(bytes(b))
        return f"flipped bytes at {pos}"
    with np.load(src, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    if how == "drop_key":
        key = rng.choice(sorted(arrays))
        del arrays[key]
        np.savez(dst, **arrays)
        return f"dropped key {key}"
    keys = sorted(k for k, v in arrays.items() if v.ndim >= 1 and v.size > 1)
    key = rng.choice(keys)
    v = arrays[key]
    arrays[key] = v[tuple(slice(0, max(1, s - 1)) for s in v.shape)] if rng.random() < 0.5 else v.reshape(-1)
    np.savez(dst, **arrays)
    return f"changed shape of {key} {v.shape} -> {arrays[key].shape}"


def trial_record(ctx: Ctx, rng: random.Random, tdir: Path) -> dict:
    how = rng.choice(["truncate", "flip", "drop_key", "shape"])
    rec = tdir / "bad.npz"
    tdir.mkdir(parents=True, exist_ok=True)
    what = tamper_record(ctx.baseline / "rec.npz", rec, how, rng)
    out = tdir / "run" / "out"
    cmd = [sys.executable, "-m", "diamondlab", "run", "--initial", str(rec), "--steps", "8",
           "--backend", "cpu", "--no-progress", "--out", str(out)]
    rc, _, err, _, wall = run_proc(cmd, env_with(ctx.warm))
    case = dict(variant=f"{how}: {what}", cmd=cmd, rc=rc, stderr_tail=tail(err), wall=round(wall, 2))
    reasons = []
    if rc != 2:
        reasons.append(f"exit {rc}, expected 2")
    if not err.strip():
        reasons.append("no message on stderr")
    if "Traceback" in err:
        reasons.append("traceback in stderr")
    if rc == 2 and not no_outputs(out):
        reasons.append("refused run left outputs")
    left = leftovers(tdir)
    if left:
        reasons.append(f"leftovers: {left[:5]}")
    case["reasons"] = reasons
    return case


def trial_cache(ctx: Ctx, rng: random.Random, tdir: Path) -> dict:
    cache = tdir / "cache"
    shutil.copytree(ctx.warm, cache)
    kernels = cache / "kernels"
    targets = {
        "kernel_py": sorted(p for p in kernels.rglob("*.py") if "__pycache__" not in p.parts),
        "nbi": sorted(kernels.rglob("__pycache__/*.nbi")),
        "nbc": sorted(kernels.rglob("__pycache__/*.nbc")),
        "autotune": [cache / "autotune.json"],
    }
    how = rng.choice(sorted(k for k, v in targets.items() if v))
    target = rng.choice(targets[how])
    if how == "autotune":
        target.write_text(rng.choice(['{"broken": ', "\x00\xff garbage", "[1, 2, 3]", '{"x": {"nt": -1}}']))
        extra = ["--dts", "auto"]
    else:
        data = bytearray(target.read_bytes())
        junk = bytes(rng.randrange(256) for _ in range(64))
        if rng.random() < 0.5 or not data:
            data = bytearray(junk)
        else:
            i = rng.randrange(len(data))
            data[i:i + 64] = junk
        target.write_bytes(bytes(data))
        extra = []
    out, save = tdir / "run" / "out", tdir / "run" / "rec.npz"
    out.parent.mkdir(parents=True)
    cmd = base_cmd(out, save, ctx.steps, ctx.every, extra)
    rc, _, err, _, wall = run_proc(cmd, env_with(cache))
    case = dict(variant=f"{how}: {target.relative_to(cache)}", cmd=cmd, rc=rc, stderr_tail=tail(err),
                wall=round(wall, 2))
    reasons = []
    if rc != 0:
        reasons.append(f"exit {rc}, expected 0")
    if not any("warning" in ln and any(w in ln for w in ("cache", "rebuil", "dropped"))
               for ln in err.lower().splitlines()):
        reasons.append("no cache warning on stderr")
    if "Traceback" in err and rc != 70:
        reasons.append("traceback in stderr")
    if rc == 0:
        why = outputs_complete(out)
        if why:
            reasons.append(f"outputs incomplete: {why}")
    left = leftovers(tdir)
    if left:
        reasons.append(f"leftovers: {left[:5]}")
    case["reasons"] = reasons
    return case


def trial_fullfs(ctx: Ctx, rng: random.Random, tdir: Path) -> dict:
    mnt = tdir / "small"
    mnt.mkdir(parents=True)
    size = rng.choice(["100k", "200k", "400k"])
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if m.returncode != 0:
        return dict(variant="mount failed", cmd=[], rc=None, reasons=[f"mount: {m.stderr.strip()}"])
    try:
        out, save = mnt / "out", mnt / "rec.npz"
        cmd = base_cmd(out, save, ctx.steps, ctx.every)
        rc, _, err, _, wall = run_proc(cmd, env_with(ctx.warm))
        reasons = []
        if rc not in (0, 2, 74):
            reasons.append(f"exit {rc}, expected 0, 2 or 74")
        why = stderr_ok(rc, err)
        if why:
            reasons.append(why)
        if rc == 2 and not no_outputs(out):
            reasons.append("refused run left outputs")
        if rc in (0, 74) and (out / "manifest.json").exists():
            data = json.loads((out / "manifest.json").read_text())
            for name in data.get("files", []):
                w = load_ok(out / name) if (out / name).exists() else f"{name} missing"
                if w:
                    reasons.append(f"listed output bad: {w}")
                    break
        left = leftovers(mnt)
        if left:
            reasons.append(f"leftovers: {left[:5]}")
        return dict(variant=f"tmpfs {size}", cmd=cmd, rc=rc, stderr_tail=tail(err),
                    wall=round(wall, 2), reasons=reasons)
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


TRIALS = {"signal": trial_signal, "concurrent": trial_concurrent, "record": trial_record,
          "cache": trial_cache, "fullfs": trial_fullfs}
WEIGHTS = {"signal": 40, "concurrent": 12, "record": 20, "cache": 18, "fullfs": 10}


def can_mount(root: Path) -> str | None:
    d = root / "mount-probe"
    d.mkdir()
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(d)],
                       capture_output=True, text=True)
    if m.returncode == 0:
        subprocess.run(["umount", str(d)], capture_output=True)
        return None
    return (m.stderr or m.stdout).strip() or f"mount exit {m.returncode}"


def prepare(root: Path, steps: int, every: int) -> tuple[Path, Path]:
    warm, base = root / "warm-cache", root / "baseline"
    base.mkdir(parents=True)
    cmd = base_cmd(base / "out", base / "rec.npz", steps, every)
    r = subprocess.run(cmd, env=env_with(warm), capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"baseline run failed ({r.returncode}): {r.stderr[-2000:]}")
    # an auto-tuned entry so that a tampered autotune.json is read
    r = subprocess.run(base_cmd(root / "tune" / "out", None, 120, 120, ["--dts", "auto"]),
                       env=env_with(warm), capture_output=True, text=True)
    if r.returncode != 0:
        print(f"note: --dts auto warm-up exited {r.returncode}: {r.stderr[-300:]}", file=sys.stderr)
    shutil.rmtree(root / "tune", ignore_errors=True)
    return warm, base


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock, printed)")
    ap.add_argument("--out-json", type=Path, default=None)
    ap.add_argument("--steps", type=int, default=200, help="steps per run (default 200)")
    ap.add_argument("--snapshot-every", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=1, help="trials run at once (default 1)")
    ap.add_argument("--workdir", type=Path, default=None, help="kept; default a temporary folder, removed")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    a = ap.parse_args(argv)
    seed = a.seed if a.seed is not None else int(time.time())
    print(f"seed {seed}", flush=True)
    root = a.workdir or Path(tempfile.mkdtemp(prefix="diamondlab-hostile-"))
    root.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    mount_err = can_mount(root)
    kinds = [k for k in KINDS if not (k == "fullfs" and mount_err)]
    if mount_err:
        print(f"fullfs skipped: mount -t tmpfs not permitted here ({mount_err})", flush=True)
    warm, base = prepare(root, a.steps, a.snapshot_every)
    ctx = Ctx(root, warm, base, a.steps, a.snapshot_every)
    master = random.Random(seed)
    plan = [(i, master.choices(kinds, [WEIGHTS[k] for k in kinds])[0], master.randrange(2**32))
            for i in range(a.trials)]

    def one(item):
        i, kind, s = item
        tdir = root / f"t{i:04d}"
        tdir.mkdir()
        try:
            case = TRIALS[kind](ctx, random.Random(s), tdir)
        except Exception as exc:  # noqa: BLE001 - a harness error is recorded, not fatal
            case = dict(variant="harness error", cmd=[], rc=None, reasons=[f"harness: {exc!r}"])
        case.update(trial=i, kind=kind, seed=s, passed=not case["reasons"])
        mark = "ok  " if case["passed"] else "FAIL"
        print(f"{mark} t{i:04d} {kind:10s} rc={case['rc']} {case['variant']}"
              + ("" if case["passed"] else f"  <- {'; '.join(case['reasons'])}"), flush=True)
        if case["passed"] and not a.keep:
            shutil.rmtree(tdir, ignore_errors=True)
        return case

    with ThreadPoolExecutor(max(1, a.jobs)) as ex:
        results = list(ex.map(one, plan))
    wall = time.monotonic() - t0

    summary = {k: {"passed": 0, "failed": 0} for k in KINDS}
    for r in results:
        summary[r["kind"]]["passed" if r["passed"] else "failed"] += 1
    print(f"\n{'kind':12s}{'trials':>8s}{'passed':>8s}{'failed':>8s}")
    for k in KINDS:
        s = summary[k]
        note = "  (skipped: mount not permitted)" if k == "fullfs" and mount_err else ""
        print(f"{k:12s}{s['passed'] + s['failed']:8d}{s['passed']:8d}{s['failed']:8d}{note}")
    tot_p = sum(s["passed"] for s in summary.values())
    print(f"{'total':12s}{len(results):8d}{tot_p:8d}{len(results) - tot_p:8d}")
    print(f"wall {wall:.1f} s, seed {seed}, work folder {root}")
    report = dict(seed=seed, trials=a.trials, steps=a.steps, snapshot_every=a.snapshot_every, jobs=a.jobs,
                  wall_s=round(wall, 1), fullfs_skipped=mount_err, summary=summary,
                  failures=[r for r in results if not r["passed"]], results=results)
    if a.out_json:
        a.out_json.write_text(json.dumps(report, indent=1, default=str))
    if not a.keep and a.workdir is None and all(r["passed"] for r in results):
        shutil.rmtree(root, ignore_errors=True)
    return 0 if tot_p == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
