"""`diamondlab bench` on the CPU, repeated while JupyterLab's page of a notebook is open in Chromium.

    python .ci/bench-beside-browser.py [--notebook 07_roofline_and_parallel_levels.ipynb] [--runs 5]
        [--shape 128] [--orders 2 8] [--during] [--figures 07 04]

Issue 29 asks that five repeated runs on a 2-core machine, with a browser drawing the page, give medians
within 15 % of each other, and that a run under load says it was disturbed.  This starts JupyterLab on a
copy of the notebook, opens it in headless Chromium (the browser test's flags), runs every cell and waits
until the kernel is idle (the figures drawn), then runs ``diamondlab bench --backend cpu`` ``--runs``
times, one process each, with the page still open; ``--during`` starts the bench runs as soon as Run All
is pressed instead, while the kernel computes and the browser draws (the load a student's own Run All
puts beside a measurement).  One JSON line per run and order (DiamondTorre's and stepwise's medians in G
cell updates/s, their spreads, the share of the CPU other processes took, the flag), then the medians'
largest over smallest per order and algorithm.

``--figures 07 04`` measures the notebooks' own figures instead: with the page still open, each named
notebook runs ``--runs`` times from top to bottom in a fresh kernel (nbclient, full sizes), and a cell added
at its end writes every measured point of its figures (notebook 07: Fig. 1's two points, the order and size
sweep's rows, the threads' levels; notebook 04: the tuning panel's rows); then each point's medians over the
runs, largest over smallest.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_browser import ARGS, CHROMIUM, _free_port, _open_and_run, _wait_until_every_cell_ran  # noqa: E402


def serve(notebook: str, folder: Path):
    """JupyterLab on a copy of ``notebook`` in ``folder``: ``(process, url, token)``."""
    shutil.copy(ROOT / "notebooks" / notebook, folder / notebook)
    shutil.copytree(ROOT / "notebooks" / "records", folder / "records")
    port, token = _free_port(), "diamondlab-bench"
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", f"--port={port}",
           "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={folder}",
           "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=folder)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
            return proc, url, token
        except OSError:
            time.sleep(0.3)
    proc.terminate()
    raise SystemExit("jupyter lab did not start")


def bench(shape: int, orders: list[int], out: Path) -> list[dict]:
    """One ``diamondlab bench --backend cpu`` process; its rows."""
    cmd = [sys.executable, "-m", "diamondlab", "bench", "--backend", "cpu", "--shape", str(shape),
           "--orders", *map(str, orders), "--no-model", "--json", str(out)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    text = out.read_text()
    try:
        rows = json.loads(text)
    except json.JSONDecodeError:  # one row a line
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return rows if isinstance(rows, list) else rows.get("rows", [rows])


#: the cell added at the end of a notebook: its figures' measured points as JSON lines, one a point
FIGURE_POINTS = {
    "07": """
import json
points = [(f"Fig. 1 {name}", rate, flag) for (name, _, rate), flag in zip(mine, flags)]
points += [(f"sweep {r.label}", r.measured, r.flag) for r in rows]
points += [(f"{lv.threads} threads {alg}", getattr(lv, alg), lv.flag) for lv in levels
           for alg in ("diamondtorre", "stepwise")]
print("\\n".join(json.dumps({"point": k, "gcells": float(v), "flag": f}) for k, v, f in points))
""",
    "04": """
import json
print("\\n".join(json.dumps({"point": r.label, "gcells": float(r.measured), "flag": r.flag})
                for r in panel.rows))
""",
}


def notebook_points(name: str, folder: Path) -> list[dict]:
    """Notebook ``name`` (its number) run top to bottom in a fresh kernel: its figures' points."""
    import nbformat
    from nbclient import NotebookClient

    path = next((ROOT / "notebooks").glob(f"{name}_*.ipynb"))
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(FIGURE_POINTS[name]))
    NotebookClient(nb, timeout=1200, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    text = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("output_type") == "stream")
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def figures(names: list[str], runs: int, folder: Path) -> None:
    """Each notebook's figures ``runs`` times: every point's medians, largest over smallest."""
    for name in names:
        seen: dict[str, list[float]] = {}
        flagged: dict[str, int] = {}
        for run in range(runs):
            for p in notebook_points(name, folder):
                seen.setdefault(p["point"], []).append(p["gcells"])
                flagged[p["point"]] = flagged.get(p["point"], 0) + bool(p["flag"])
                print(json.dumps({"notebook": name, "run": run, **p}), flush=True)
        worst = 0.0
        for point, rates in seen.items():
            spread = max(rates) / min(rates) - 1
            worst = max(worst, spread)
            print(f"notebook {name} {point}: {[round(r, 3) for r in rates]} G/s, largest over smallest "
                  f"{spread:+.1%}, flagged in {flagged[point]} of {len(rates)} runs", flush=True)
        within = sum(max(r) / min(r) - 1 <= 0.15 for r in seen.values())
        print(f"notebook {name}: {within} of {len(seen)} points within 15 %, the widest {worst:+.1%}",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notebook", default="07_roofline_and_parallel_levels.ipynb")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--shape", type=int, default=128)
    ap.add_argument("--orders", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--during", action="store_true", help="bench while Run All computes and draws")
    ap.add_argument("--figures", nargs="+", choices=sorted(FIGURE_POINTS), default=None,
                    help="run these notebooks --runs times (page open) and compare their figures' points")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    assert CHROMIUM and ARGS
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        proc, url, token = serve(args.notebook, folder)
        try:
            with sync_playwright() as p:
                browser, page = _open_and_run(p, f"{url}/lab/tree/{args.notebook}?reset&token={token}")
                if not args.during:
                    _wait_until_every_cell_ran(page, 600)
                if args.figures:
                    shutil.copytree(ROOT / "notebooks" / "records", folder / "run" / "records")
                    figures(args.figures, args.runs, folder / "run")
                    browser.close()
                    return
                rows = []
                for run in range(args.runs):
                    for row in bench(args.shape, args.orders, folder / f"bench{run}.json"):
                        kept = {k: row.get(k) for k in ("order", "dts", "nt", "diamondtorre", "stepwise",
                                                        "spreads", "busy", "pace", "flag")}
                        rows.append({"run": run, **kept})
                        print(json.dumps(rows[-1]), flush=True)
                browser.close()
        finally:
            proc.terminate()
    for order in args.orders:
        for alg in ("diamondtorre", "stepwise"):
            medians = [r[alg] for r in rows if r["order"] == order and r[alg] is not None]
            if medians:
                spread = (max(medians) - min(medians)) / min(medians)
                print(f"NO={order} {alg}: medians {[round(m, 3) for m in medians]} G/s, "
                      f"largest over smallest {spread:+.1%}", flush=True)


if __name__ == "__main__":
    main()
