"""Write the notebooks ``notebooks/00_*.ipynb`` .. ``09_*.ipynb`` (thin: the logic is in the package).

This file is their one source: edit a notebook here, then run
``python assets/make_notebooks.py`` (``tests/test_assets.py`` fails while a
committed notebook's cells differ from what this writes).  Every notebook
reads ``DIAMONDLAB_SMALL=1`` (set by the test suite) to shrink its grids,
and runs top to bottom on a CPU in well under a minute at its default
sizes.  Outputs are not stored, and are kept out where users run the
notebooks: :func:`strip_outputs` clears what JupyterLab saves (outputs,
execution counts, widget state); the docs build renders stripped copies
(:func:`copy_stripped`, from ``docs/conf.py``), and ``--strip`` makes this
file a git clean filter (``.gitattributes`` names it; the README says how to
turn it on), so that a notebook run and saved is committed without them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]
SMALL = 'import os\nSMALL = os.environ.get("DIAMONDLAB_SMALL") == "1"   # the tests set it: tiny sizes\n'


def _nb(cells) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [new_markdown_cell(c[2:]) if c.startswith("#!") else new_code_cell(c)
                for c in cells]
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:02d}"  # stable ids: regenerating changes nothing that did not change
    return nb


def md(text: str) -> str:
    return "#!" + text.strip()


#: How the paper notebooks open: what LRnLA stands for and the full citation of paper 000.
CITATION = """LRnLA stands for *locally recursive, non-locally asynchronous* algorithms.
This notebook follows Levchenko, Perepelkina and Zakirov, "DiamondTorre
Algorithm for High-Performance Wave Modeling", *Computation* 4(3):29, 2016
(paper 000)"""


NOTEBOOKS = {
    "00_quickstart.ipynb": [
        md("""
# 00 · Quick start: DiamondTorre against stepwise time stepping

This notebook runs the 3D acoustic wave equation with both algorithms of
diamondlab on the same grid, checks that they agree bit for bit, and looks at
the geometry that makes DiamondTorre fast.  It runs on a CPU in well under a
minute; set the environment variable `DIAMONDLAB_SMALL=1` for a tiny grid
(the test suite does).
"""),
        'import os\nimport numpy as np\nimport diamondlab as dl\n\n'
        'SMALL = os.environ.get("DIAMONDLAB_SMALL") == "1"\nN = 32 if SMALL else 128\nORDER = 4\n'
        'print(dl.__version__, "grid", (N, N, N), "NO =", ORDER)',
        md("""
## The geometry of one sweep

A diamond tile of size DTS holds `2 R^2` columns (`R = ShS * DTS`, `ShS = NO/2`).
A torre sweeps it through `Nt` steps, leaning `ShS` cells in x per step;
stages of torres run from the right boundary to the left.
"""),
        'sched = dl.stage_schedule(order=ORDER, size=2, nt=8, nx=N, ny=N)\n'
        'print(f"R = {sched.tile.radius}, {sched.tile.ncells} columns per tile, "\n'
        '      f"{sched.nstages} stages, {sched.ntorres} torres, "\n'
        '      f"{int(sched.boundary.sum())} of them cut by the boundary")\n'
        'print("every (x, y, step) once:", len(sched.vertices()) == N * N * 8)\n'
        'print("in-place replay problems:", sched.replay_in_place()[:3])',
        md("""
Locality (paper 000, section 5): cell updates per value moved to or from memory.
Stepwise time stepping cannot exceed 1/3; a row of DiamondTorres approaches
`DTS / (4 - 1/DTS)`.
"""),
        'from diamondlab.geometry import locality\n'
        'for shape in ("naive", "stepwise_row", "stepwise_layer", "diamond_tile"):\n'
        '    print(f"{shape:>15}: {locality(shape, ORDER, 2):.3f}")\n'
        'for dts in (1, 2, 4, 8):\n'
        '    print(f"      torre_row: DTS={dts}, Nt={4 * dts}: '
        '{locality(\'torre_row\', ORDER, dts, 4 * dts):.3f}")',
        md("## Run both algorithms on one grid"),
        'results = {}\n'
        'for algorithm in ("stepwise", "diamondtorre"):\n'
        '    sim = dl.Simulation((N, N, N), ORDER, backend="cpu", algorithm=algorithm)\n'
        '    sim.run(sim.nt)                      # compile (once per order) and warm up\n'
        '    stats = sim.run(2 * sim.nt)\n'
        '    results[algorithm] = sim\n'
        '    print(f"{algorithm:>12}: {stats.gcells_per_second:.3f} G cell updates/s '
        '(DTS={sim.size}, Nt={sim.nt})")\n'
        'same = all(np.array_equal(a, b) for a, b in zip(results["stepwise"].fields, '
        'results["diamondtorre"].fields, strict=True))\n'
        'print("bit for bit equal:", same)',
        md("The field is a NumPy array in (x, y, z) order: here its profile along x through the centre."),
        'u = results["diamondtorre"].field\n'
        'profile = u[:, N // 2, N // 2]\n'
        'print(np.array2string(profile[::max(1, N // 16)], precision=3))',
    ],
    "01_lrnla_concepts.ipynb": [
        md("""
# 01 · LRnLA concepts: conoids, the DiamondTorre prism, locality

The dependency graph of the 3D wave equation lives in (x, y, z, t); DiamondTorre
draws it in (x, y, t) and lets every vertex stand for a whole z column
(paper 000, section 4).  A diamond *tile* of size DTS has radius `R = ShS·DTS`
(`ShS = NO/2`).  Its **influence conoid** grows by `ShS` per step; the
**dependence conoid** of a tile `Nt·ShS` further along x shrinks towards it.
Their intersection is the **DiamondTorre** prism: everything in it can be
computed from data already inside it or below it.  All figures are drawn
from `diamondlab.geometry`; rotate them with the mouse.
"""),
        md("""
## First in one dimension: diamonds in x-t

Before the 3D torre, the idea in one space dimension.  Each vertex `(x, t)`
reads level `t-1` at `x-ShS .. x+ShS` and level `t-2` at `x`.  Cut x-t into
diamonds whose sides have the slope `ShS` and every diamond reads only from
the diamonds below it (green) and is read only by those above it (yellow):
nothing it needs is computed after it, so a whole diamond runs in one go,
its data in fast memory (paper 000, sections 3-4, Fig. 4).  Drag the
diamond's size and the picked vertex; a larger NO makes the slope steeper.
"""),
        "from diamondlab.widgets.lrnla import xt_app\n\nxt = xt_app(order=2, width_cells=8)\nxt",
        "# the same from Python: smaller diamonds, NO=4\nno, diagonal, x, t = xt.controls\n"
        "diagonal.value, no.value = 6, 4\nprint(xt.figure.layout.title.text)",
        md("""
## In 3D: the torre
"""),
        SMALL + "from diamondlab.viz import lrnla\n\nNT = 4 if SMALL else 6\n"
        "lrnla.conoid_figure(order=2, size=2, nt=NT)",
        md("""
Higher orders reach further per step (`ShS = NO/2`), so the same DTS makes a
wider tile and a steeper lean:
"""),
        "lrnla.conoid_figure(order=4, size=1, nt=NT)",
        md("""
## Locality and asynchrony (paper 000, section 5)

*Locality*: cell updates per value moved to or from memory.  No stepwise
algorithm exceeds 1/3; a row of torres approaches `DTS / (4 - 1/DTS)`.
*Asynchrony*: how many updates may run at once (a stage has plenty).
The exact count on the torre's own vertices is in the title.
"""),
        "lrnla.locality_figure(order=2, size=4, nt=16, shape=(256, 256, 256))",
        md("""
## Try it

Change NO, DTS and Nt: both figures follow (invalid combinations are
explained, not raised).
"""),
        "from diamondlab.widgets.lrnla import shapes_app\n\napp = shapes_app(order=2, size=2, nt=8)\napp",
        "# the same from Python (what a test does)\nno, dts, nt = app.controls\ndts.value = 3\n"
        "print(app.panel.conoids.layout.title.text)",
    ],
    "02_diamondtorre_stages.ipynb": [
        md("""
# 02 · DiamondTorre stages

A **stage** is a row of torres with the same x, spaced `2R` in y; they do
not depend on each other, so they run concurrently (CUDA blocks, CPU
threads).  The next stage is shifted by `-R` in x and `+R` in y; stages run
from the right (+x) boundary to the left, and after all of them every cell
has advanced `Nt` steps (paper 000, section 6, figures 6, 8 and 9).
"""),
        SMALL + "import diamondlab as dl\nfrom diamondlab.viz.stages import SweepPicture\n\n"
        "NX, NY = (16, 12) if SMALL else (28, 20)\n"
        "sched = dl.stage_schedule(order=2, size=2, nt=4, nx=NX, ny=NY)\n"
        "picture = SweepPicture(sched)\n"
        "print(f'{sched.nstages} stages, {sched.ntorres} torres, '\n"
        "      f'{int(sched.boundary.sum())} boundary torres')",
        md("""
One stage alone: a row of torres with the same x, spaced `2R` in y.  Their
bases touch, yet they never read each other's values, so they run at once.
"""),
        "from diamondlab.viz.stages import stage_row_figure\n\nstage_row_figure(picture, sched.nstages // 2)",
        md("""
The sweep after half of its stages: done stages coloured by stage, the
current stage in red, one of its torres in purple with the torres it reads
from (green) and those that will read from it (yellow).  The dependencies are
counted exactly on the schedule's vertices.
"""),
        "picture.figure(sched.nstages // 2)",
        md("The map of time levels at the same moment (paper 000, figure 9):"),
        "from diamondlab.viz.lrnla import time_levels_figure\n\n"
        "time_levels_figure(sched, sched.nstages // 2)",
        md("""
## Stage explorer

Step with the slider or press play: the 3D sweep and the time-level map
advance together.  The *order* menu plays the sweep stage by stage, as the
paper's CUDA scheme launches it (section 6), or in diagonal bands of torres,
the order in which diamondlab's one-launch sweep hands torres out (the band
the CUDA engine uses for this NO and DTS is marked): inside a band the
stages follow each other, and a torre starts once the two it reads from are
done, so several stages are in flight at once.
"""),
        "from diamondlab.widgets import RunConfig, StageExplorer\n\n"
        "explorer = StageExplorer(RunConfig(order=2, size=2, nt=4, shape=(NX, NY, 16)))\nexplorer.widget",
        "explorer.stage.value = explorer.stage.max   # the last stage (what play ends on)\n"
        "print(explorer.picture.caption(explorer.stage.value))",
        md("""
Every torre reads only from earlier stages, never from its own: the sweep is
valid and each stage is asynchronous.
"""),
        "from diamondlab.viz.stages import torre_dependencies\n\n"
        "deps = torre_dependencies(sched)\n"
        "print('only earlier stages:', all((sched.torre_stage[d] < sched.torre_stage[i]).all() "
        "for i, d in enumerate(deps)))",
    ],
    "03_live_wavefield.ipynb": [
        md("""
# 03 · The live wavefield

The lab runs the simulation in a background thread: the notebook stays
responsive, **Pause** stops between sweeps (the field is then at one time
level), **Step** runs one sweep of `Nt` steps, **Reset** goes back to
`n = 0`.  The slices refresh after sweeps (downsampled, at most a few
percent of the run's time), the receivers' traces grow beside them, and the
readout compares the throughput with the roofline model and with stepwise.
Sources and receivers are edited under *sources and receivers*; invalid
choices show a message instead of running.
"""),
        SMALL + "from diamondlab.widgets import Lab\n\nN = 32 if SMALL else 128\n"
        "lab = Lab(shape=(N, N, N), order=2, steps=0,\n"
        "          sources=[(N // 2, N // 2, N // 2, 'ricker', 0.06, 1.0)],\n"
        "          receivers=[(N // 2 + N // 4, N // 2, N // 2),\n"
        "                     (N // 2, N // 2 + N // 4, N // 2 + N // 8)],\n"
        "          sponge=N // 8, initial='zero')\n"
        "lab",
        md("Press **Run** above, or from Python (the same thing):"),
        "lab.run(steps=8 * lab.sim.nt if SMALL else 40 * lab.sim.nt)\n"
        "lab.wait(120)\nrecord = lab.runner.history[-1]\n"
        "print(f'step {lab.sim.time_step}: {record.average:.3g} G cell updates/s on average, '\n"
        "      f'last sweep {record.current:.3g}')",
        md("""
The traces are in `lab.sim.traces` (one column per receiver, one row per
step), the field in `lab.sim.field`.
"""),
        "print(lab.sim.traces.shape, float(abs(lab.sim.traces).max()))",
    ],
    "04_tuning.ipynb": [
        md("""
# 04 · Tuning DTS and Nt against the model

DiamondTorre's locality grows with DTS and Nt, but a bigger tile has fewer
torres per stage (less asynchrony) and more boundary torres.  The tuning
panel measures every (NO, DTS, Nt) on the current backend and grid,
plots it with the roofline prediction, marks the best and puts it into the
controllers with **Use best**.  The model is the engine's
(`diamondlab.engine.measure.perfmodel.model_for`, the same as `diamondlab bench`
uses): on a GPU the roofline; on a CPU this machine's cache levels and the
update's in-cache rate, measured once and kept in the cache folder, with the
working set of each algorithm deciding which level bounds it.

Every point is measured by one rule: runs repeated until they last 0.2 s
and number at least 5, their median, their spread (interquartile range /
median) and the share of the CPU other processes took meanwhile.  A point
whose spread is wide or whose machine was busy is *not steady*: the figure
says so, and the best point is then no conclusion, only a hint to measure
again on a quiet machine.
"""),
        SMALL + "from diamondlab.widgets import Controls, RunConfig, TuningPanel\n\n"
        "N = 24 if SMALL else 128\n"
        "controls = Controls(RunConfig(shape=(N, N, N), order=2))\n"
        "panel = TuningPanel(controls)\n"
        "panel.sizes.value = '1, 2' if SMALL else '1, 2, 4, 6'\n"
        "panel.nts.value = '2, 4' if SMALL else '8, 16, 24, 32'\n"
        "panel.repeats.value = 1 if SMALL else 5\n"
        "panel.widget",
        md("Press **Measure** above, or:"),
        "panel.measure(wait=True)\n"
        "for r in panel.rows:\n"
        "    print(f'{r.label:>30}: {r.measurement.note}; model {r.model:.3g} G/s')\n"
        "unsteady = [r.label for r in panel.rows if r.flag]\n"
        "print('not steady (no conclusion from these):', ', '.join(unsteady) if unsteady else 'none')",
        "panel.apply_best()\nprint('controllers now:', controls.config())",
        md("""
## Letting the engine choose

`Simulation(size="auto", nt="auto")` (`--dts auto --nt auto` on the command
line) runs the same kind of measurement once per backend, device, order and
grid, and caches the winner in the cache folder (`diamondlab cache info`
says where), valid for this machine and software only. On the GPU it also
tries the sweep's speed options, which never change the fields: whole-torre
waits (a torre starts when the two torres it depends on have finished) or
*pipelined* waits (it follows them a few tiers behind), with torres handed
out stage by stage or in diagonal bands so that each reads what its
neighbour wrote a moment earlier from L2. On an H100 the pipelined sweep in
bands of 32 took NO=2 from 563 to 649 G cell updates/s on a 2 GiB grid, and
from 359 to 626 on a 1 GiB grid (BENCHMARKS.md). The choice is also a
controller of the Run tab ("GPU sweep") and can be set by hand with
`backend_options`.
"""),
        "from diamondlab import Simulation\nfrom diamondlab.engine.run.autotune import autotune\n"
        "from diamondlab.numerics import WaveParameters\n\n"
        "shape = (N, N, N // 2)\n"
        "best = autotune(WaveParameters(order=2), shape, 'cpu', repeats=1 if SMALL else 5, log=print)\n"
        "print('chosen:', best)\n"
        "sim = Simulation(shape, 2, backend='cpu', size='auto', nt='auto')  # from the cache now\n"
        "print(sim)",
    ],
    "05_3d_snapshots.ipynb": [
        md("""
# 05 · 3D snapshots

`sim.run(..., snapshot_every=k)` keeps the field every `k` steps.
`diamondlab.viz.snapshots` renders a field with pyvista: a volume rendering
(transparent near zero) and isosurfaces at ± a fraction of the largest
amplitude.  Rendering happens off screen (EGL or OSMesa, no GPU or display
needed); in JupyterLab the backend is chosen automatically: trame's
client-side rendering where it is installed, else a static image.
"""),
        SMALL + "import diamondlab as dl\nfrom diamondlab.sources import Source\n"
        "from diamondlab.viz import snapshots\n\nN = 32 if SMALL else 96\n"
        "pair = [Source((N // 2, N // 2, N // 3), 'ricker', frequency=0.06, units='grid'),\n"
        "        Source((N // 2, N // 2, 2 * N // 3), 'ricker', 0.06, amplitude=-1, units='grid')]\n"
        "sim = dl.Simulation((N, N, N), order=4, backend='cpu', initial='zero', sponge=N // 8,\n"
        "                    sources=pair)\n"
        "every = N // 2\nsim.run(3 * every, snapshot_every=every)\n"
        "print([step for step, _ in sim.snapshots.frames], 'jupyter backend:', snapshots.jupyter_backend())",
        "from diamondlab.widgets.snapshot import gallery\n\n"
        "gallery(sim.snapshots.frames[1:], mode='both', width=300)",
        md("Isosurfaces alone, interactive where trame is installed:"),
        "snapshots.show_snapshot(sim.field, mode='isosurfaces', level=0.25, window_size=(600, 450))",
        md("The snapshot panel of the lab does the same for the run in progress (pause first):"),
        "from diamondlab.widgets import SnapshotPanel\n\npanel = SnapshotPanel(lambda: sim)\n"
        "panel.mode.value = 'volume'\npanel.snapshot()\npanel.widget",
    ],
    "06_paper_figures_and_table_1.ipynb": [
        md("""
# 06 · The hierarchy, the scheme, its graph and its subdivisions (paper 000, Figs. 1-4, Table 1)

""" + CITATION + """: the memory hierarchy of its Fig. 1 (this machine's, measured),
then in one space dimension and time, where the pictures are clearest: the
coefficients of its Table 1, the dependency graph of a
high-order stencil (Fig. 2), the light cone of a vertex (Fig. 3), and the
same graph cut into stepwise layers, a domain decomposition and LRnLA shapes
(Fig. 4).  Everything drawn is computed by `diamondlab.geometry.graph`.
"""),
        md("""
## Fig. 1 · The memory hierarchy

Each level of memory is smaller and faster than the one below it.  The CPU
curve is this machine's, measured now (`b += a` on one core, the working set
growing from 16 KiB to 256 MiB): the rate drops each time the data leave a
cache.  The GPU's levels come from its tables (registers at the rate the
lanes read operands, shared memory at 128 bytes a clock per multiprocessor,
device memory at the measured 3 TB/s).  LRnLA shapes are sized so their data
stay on a high level.
"""),
        SMALL + "from diamondlab.engine.measure.perfmodel import gpu_hierarchy, measure_cpu_hierarchy\n"
        "from diamondlab.viz.perf import memory_hierarchy_figure\n\n"
        "cpu = measure_cpu_hierarchy([2**k for k in range(14, 24 if SMALL else 29, 2)])\n"
        "for size, rate in cpu:\n"
        "    print(f'{size / 2**10:10.0f} KiB: {rate / 1e9:6.1f} GB/s')\n"
        "memory_hierarchy_figure(cpu, gpu_hierarchy())",
        md("""
## Table 1 · The scheme's coefficients, in the paper's convention

The paper writes the second difference as `sum_{i=0}^{ShS} C_i (F(x+i) + F(x-i))`,
counting the centre twice; diamondlab stores the weights `w_i` with the centre
once, so **`w_0 = 2 C_0`** and `w_i = C_i` beyond it (the text extraction of
the paper lost its minus signs; these are restored).
"""),
        "from diamondlab.numerics import paper_coefficients, stencil_weights\n\n"
        "for order in (2, 4, 6, 8):\n"
        "    c = ', '.join(str(x) for x in paper_coefficients(order))\n"
        "    w0 = stencil_weights(order)[0]\n"
        "    print(f'NO={order}: C = {c:<40} w_0 = 2 C_0 = {w0:g}')",
        md("""
## Fig. 2 · The dependency graph of a high-order stencil

A vertex reads `ShS = NO/2` cells on each side one step back and itself two
steps back.  Look at the bold edges: the higher the order, the wider the
stencil, and the more a stepwise code reloads.
"""),
        "from diamondlab.viz.graph import dependency_graph_figure, light_cone_figure, subdivisions_figure\n\n"
        "dependency_graph_figure(4)",
        md("""
## Fig. 3 · The light cone

Following the edges down from one vertex gives its light cone: everything
it depends on widens by `ShS` cells a step.  A DiamondTorre is built from
two such cones (notebooks 01 and 02 draw them in 3D).
"""),
        "light_cone_figure(4, depth=5)",
        md("""
## Fig. 4 · Three ways to cut the graph

Stepwise codes sweep whole layers (each a shape: all of it must finish
before the next); a domain decomposition cuts each layer into blocks that
still synchronise every step; LRnLA shapes are diamonds in x-t (sides of
slope `ShS`) whose dependencies all point one way, so each can run whole,
many steps at once, with its data in fast memory.  Hover for a vertex's
shape.
"""),
        "subdivisions_figure(2, nx=24 if SMALL else 48, nt=12 if SMALL else 24, width_cells=8)",
    ],
    "07_roofline_and_parallel_levels.ipynb": [
        md("""
# 07 · The roofline, the rate per NO and DTS, the parallel levels (paper 000, Figs. 7, 10, 11)

LRnLA (*locally recursive, non-locally asynchronous*) algorithms raise the
locality of a stencil code so that it is no longer bound by memory
bandwidth.  This notebook follows Levchenko, Perepelkina and Zakirov,
"DiamondTorre Algorithm for High-Performance Wave Modeling", *Computation*
4(3):29, 2016 (paper 000): its Fig. 7 (the roofline with the locality
parameter on the x axis) with this machine's numbers and an H100's, and its
Fig. 11 (the rate per `NO/DTS`) measured by your own backend next to the
model, and its Fig. 10 (the rate against the parallel level) with this
machine's threads.
"""),
        md("""
## Fig. 7 · The roofline with locality on the x axis

A value moved is 4 bytes, so a shape of locality `L` can reach
`bandwidth x L / 4` cell updates per second until the compute roof
`fp32 rate / flops per update` stops it.  The dotted lines are the ceilings
of the paper's shapes; the stars are measurements.  First an H100, with its
copy bandwidth and the rates measured on it (`records/launch_schemes_h100.json`,
BENCHMARKS.md):
"""),
        SMALL + "import json\n\nfrom diamondlab.engine.measure.perfmodel import H100\n"
        "from diamondlab.geometry import locality\n"
        "from diamondlab.viz.perf import roofline_ceilings, roofline_figure\n\n"
        "with open('records/launch_schemes_h100.json') as fh:\n"
        "    record = json.load(fh)\n"
        "big = record['rows'][-1]  # the 2 GiB grid\n"
        "order, dts, nt = record['order'], record['dts'], record['nt']\n"
        "points = [('stepwise', locality('stepwise_layer', order), big['stepwise_in_sweep_run']),\n"
        "          ('DiamondTorre', locality('torre_row', order, dts, nt), big['sweep'])]\n"
        "for shape, (loc, rate) in roofline_ceilings(order, dts, nt, H100).items():\n"
        "    print(f'{shape:>15}: locality {loc:.3f}, ceiling {rate:7.1f} G/s')\n"
        "roofline_figure(order, dts, nt, H100, points)",
        md("""
What to look for: stepwise sits on its ceiling (12 bytes an update); the
row of DiamondTorres has about three times the locality and its measured
point is close to its ceiling: the run is still bound by memory, now at a
higher locality.  The same chart with this machine's cores (their bandwidth
measured now, a small run of each algorithm):
"""),
        "from diamondlab import Simulation\nfrom diamondlab.engine.measure.bench import measure_simulation\n"
        "from diamondlab.engine.measure.perfmodel import cpu_device_numbers, model_for\n\n"
        "cpu = cpu_device_numbers()\n"
        "shape = (32, 32, 32) if SMALL else (96, 96, 96)\n"
        "mine, flags = [], []\n"
        "for algorithm in ('stepwise', 'diamondtorre'):\n"
        "    sim = Simulation(shape, 2, size=4, nt=16, backend='cpu', algorithm=algorithm)\n"
        "    m = measure_simulation(sim, 32, repeats=1 if SMALL else 5)\n"
        "    stepwise = algorithm == 'stepwise'\n"
        "    loc = locality('stepwise_layer', 2) if stepwise else locality('torre_row', 2, 4, 16)\n"
        "    mine.append((algorithm, loc, m.gcells))\n"
        "    flags.append(m.flag if not m.trusted else '')\n"
        "    model = model_for(algorithm, 2, shape, 4, 16, 'cpu')\n"
        "    print(f'{algorithm:>12}: {m.note}; the CPU model: {model.gcells:.3g} G/s, {model.bound}')\n"
        "roofline_figure(2, 4, 16, cpu, mine, flags=flags)",
        md("""
This roofline is the GPU's model drawn with the CPU's memory bandwidth, so
on a CPU the points sit far below its memory roof: the tiles live in the
cores' caches.  The line printed under each algorithm is the CPU's own
model (`diamondlab bench` prints the same): the level its working set
fits, and whether that level's bandwidth or the update's in-cache rate
bounds it.  Read the points against it only when the figure does not say
they are not steady (a busy machine, a wide spread): then measure again.
"""),
        md("""
## The second equation: Maxwell's Yee scheme on the same roofline

A Yee cell update is both half steps of its six components.  DiamondTorre
runs each half step as a tier of the acoustic tile of the same order (the
Yee reach `M`: 1 cell at order 2, 2 at order 4; notebook 09), so the bytes an
update moves come from the same tile geometry: `4 / locality` for the fields
(three components a column, two tiers a step) plus the material's three
bytes, every half step for stepwise and once a sweep for the torres.  The
table puts them next to the acoustic scheme's; the chart is Fig. 7 for
Maxwell with the rates measured on an H100 (the register-tile sweep at DTS 1,
Nt 4, `records/maxwell_registers_h100.jsonl`, BENCHMARKS.md):
"""),
        "from diamondlab.engine.measure.perfmodel import yee_bytes_per_update\n"
        "from diamondlab.viz.perf import ROOFLINE_SHAPES\n\n"
        "print('bytes an update, DTS=2 Nt=8:   acoustic NO=2   Maxwell order 2')\n"
        "for shape in ROOFLINE_SHAPES:\n"
        "    acoustic, maxwell = 4 / locality(shape, 2, 2, 8), yee_bytes_per_update(shape, 2, 2, 8)\n"
        "    print(f'{shape:>26}: {acoustic:10.1f} B {maxwell:13.1f} B')\n"
        "with open('records/maxwell_registers_h100.jsonl') as fh:\n"
        "    yee = [json.loads(line) for line in fh]\n"
        "SHAPE = {'stepwise': 'stepwise_layer', 'diamondtorre': 'torre_row'}\n"
        "yee_points = [(r['algorithm'], 4 / yee_bytes_per_update(SHAPE[r['algorithm']], 2, r['size'],\n"
        "                                                         r['nt']), r['median'])\n"
        "              for r in yee if r['order'] == 2]\n"
        "roofline_figure(2, 1, 4, H100, yee_points, equation='maxwell')",
        md("""
What to look for: six values a cell make a Yee update six times heavier
than an acoustic one on the same tile, so every ceiling sits lower.  At
DTS 1 a row of torres moves about as much as stepwise (78.8 B against 78 B:
the two ceilings almost coincide, which is why paper 002's tile is small and
its gain modest); at order 4 and Nt 16, DTS 2 and 4 move 1.8 and 3.1 times
less than stepwise.  On the H100 the register-tile sweep beats stepwise at
DTS 1 by keeping the tile's cells and its material on chip, below both
ceilings.  The tuning panel measures either equation on your backend:
`TuningPanel(controls, equation="maxwell")` with the Maxwell lab's
controllers (G Yee cell updates/s against `predict_yee` on a GPU).
"""),
        md("""
## Fig. 11 · The rate per NO and DTS

The paper's Fig. 11 plots the rate for `NO/DTS` = 2/1, 4/1, 6/1, 8/1, then
growing DTS: with DTS = 1 the rate stays about flat as NO grows (memory
bound: more work per cell costs nothing), and it rises with DTS at fixed
NO as the locality grows, until the GPU runs short of parallel work.  Here
your backend measures the same sweep (best Nt of each pair), next to the
model (the figure says where a point is not steady):
"""),
        "from diamondlab.engine.measure.bench import tuning_sweep\n"
        "from diamondlab.engine.measure.perfmodel import predicted_rate\n"
        "from diamondlab.viz.perf import order_size_figure\n\n"
        "grid = (24, 24, 16) if SMALL else (64, 64, 64)\n"
        "rows = []\n"
        "pairs = ((2, (1, 2)), (4, (1,))) if SMALL else ((2, (1, 2, 4)), (4, (1, 2)), (6, (1,)), (8, (1,)))\n"
        "for order, sizes in pairs:\n"
        "    rows += tuning_sweep(grid, [order], sizes, (4, 8) if SMALL else (8, 16),\n"
        "                         repeats=1 if SMALL else 5, model=predicted_rate)\n"
        "order_size_figure(rows)",
        md("""
## Fig. 10 · The rate against the parallel level

The paper's Fig. 10 raises the parallel level on the GPU (threads, warps,
blocks up to the multiprocessor count) and watches the rate climb until the
memory bandwidth caps it.  On a CPU the parallel level is the number of
threads: here both algorithms run with 1, 2, 4, ... threads up to this
machine's count (a few cores show only the start of the curve).  Where other
programs share the cores (the browser drawing this page, a test run), a
thread waits for a core and more threads can be slower than fewer: the
measurement sees the other programs' CPU time and the figure then says the
points are not steady instead of showing a scaling that is not there.
"""),
        "from diamondlab.engine.measure.bench import thread_sweep\n"
        "from diamondlab.viz.perf import parallel_levels_figure\n\n"
        "levels = thread_sweep((32, 32, 16) if SMALL else (96, 96, 64), size=2, nt=8,\n"
        "                      repeats=1 if SMALL else 5)\n"
        "for level in levels:\n"
        "    note = f' (not steady: {level.flag})' if level.flag else ''\n"
        "    print(f'{level.threads:3d} threads: DiamondTorre {level.diamondtorre:.3g} G/s, '\n"
        "          f'stepwise {level.stepwise:.3g} G/s{note}')\n"
        "parallel_levels_figure(levels)",
        md("""
On a GPU the same figure as the paper drew it: the paper's scheme, one
launch per stage, so that the blocks in flight are the torres of one stage
(`ny / 2R` of them), each block one z column of `nz` threads.  The rate
climbs with the blocks until they fill the multiprocessors (dashed), and a
block of a few warps cannot hide the memory latency that a larger one can.
Where no GPU is present this cell says so (the figure needs the GPU itself).
"""),
        "from diamondlab.devices import current_gpu\n"
        "from diamondlab.engine.measure.bench import block_sweep\n"
        "from diamondlab.viz.perf import block_levels_figure\n\n"
        "gpu = current_gpu()\n"
        "if gpu is None:\n"
        "    print('no GPU here: Fig. 10 by blocks is measured where a CUDA GPU is present')\n"
        "else:\n"
        "    blocks = block_sweep(2, depths=(64, 256) if SMALL else (64, 256, 512),\n"
        "                         torres=[1, 4, 16] if SMALL else None, repeats=1 if SMALL else 3)\n"
        "    for r in blocks:\n"
        "        print(f'{r.torres:4d} blocks of {r.threads:4d} threads: '\n"
        "              f'DiamondTorre {r.diamondtorre:7.1f} G/s, stepwise {r.stepwise:7.1f} G/s')\n"
        "    display(block_levels_figure(blocks, gpu.multiprocessors))",
    ],
    "08_launch_schemes_and_tilings.ipynb": [
        md("""
# 08 · Tilings and launch schemes compared (paper 000, sections 5 and 6)

""" + CITATION + """.  You will see (1) section 5's comparison of DiamondTorre with
the trapezoid, x-t diamond and wavefront tilings, counted exactly on the
dependency graph, and (2) section 6's CUDA launch scheme (one launch per
stage) measured against the engine's one launch per sweep.
"""),
        md("""
## 1 · Locality, asynchrony and the fast memory they take (section 5)

The *locality* of a shape is the number of updates it performs per value it
moves to or from memory; its *asynchrony* the number of updates that may run
at once.  Each tiling below is one of its tiles on the `(x, y, t)` graph of z
columns, counted by `diamondlab.geometry.count_transfers`.  A bigger tile
always gains locality; what matters on a GPU is the fast memory (registers)
it needs for it: look at the x axis of the chart.
"""),
        SMALL + "from diamondlab.geometry import compare_tilings\n"
        "from diamondlab.viz.lrnla import TILING_LABELS, tilings_figure\n\n"
        "ORDER, DTS, NT = 2, 2, 8\n"
        "rows = compare_tilings(ORDER, DTS, NT, ny=8 if SMALL else 32)\n"
        "print(f'NO={ORDER} DTS={DTS} Nt={NT}, in z columns')\n"
        "print(f\"{'tiling':>24} {'locality':>9} {'asynchrony':>11} {'holds':>6}  note\")\n"
        "for r in rows:\n"
        "    name = TILING_LABELS[r.name]\n"
        "    print(f'{name:>24} {r.locality:9.3f} {r.asynchrony:11d} {r.held:6d}  {r.note}')",
        md("""
What to look for: the stepwise row sits at `1/(3 + 2 NO)`, the DiamondTile
near the stepwise limit of 1/3, one DiamondTorre above both with only a
tile and its halo in flight.  The trapezoid and the x-t diamond reach a
higher locality per tile, but a step of theirs reads tens of times more
columns (the x-t diamond whole rows of y): on a GPU that is shared or
device memory, not registers.  The wavefront keeps the x-t diamond's
locality with a small front, at the price of one front's asynchrony: the
paper's point that DiamondTorre puts its asynchrony where the GPU's levels
of parallelism are (a tier per block, the torres of a stage across blocks).
"""),
        "tilings_figure(rows)",
        md("""
## 2 · One launch per stage against one launch per sweep (section 6)

The paper launches one kernel per stage (a row of torres along y) and
synchronises after each whole stage.  diamondlab launches a whole sweep at
once: a torre waits only for the two torres it depends on, so the torres of
several stages are in flight together.  Both compute the same values bit
for bit; the per-stage scheme is selectable
(`backend_options={"launch": "per-stage"}`, `--backend-option
launch=per-stage`).  On a GPU this cell measures both here; without one it
shows the run record measured on an H100 (`records/launch_schemes_h100.json`).
"""),
        "import json\n\nfrom diamondlab.engine.backends.cuda import CUDABackend\n"
        "from diamondlab.kernels.cuda import simulator_enabled\n\n"
        "if CUDABackend.available() and not simulator_enabled():\n"
        "    from diamondlab.engine.measure.bench import compare_algorithms\n\n"
        "    shape = (64, 64, 64) if SMALL else (256, 256, 256)\n"
        "    found = {launch: compare_algorithms(shape, [2], 'cuda', repeats=3,\n"
        "                                        backend_options={'launch': launch})[0]\n"
        "             for launch in ('sweep', 'per-stage')}\n"
        "    record = {'device': 'this GPU', 'rows': [{\n"
        "        'grid': 'x'.join(map(str, shape)), 'sweep': found['sweep']['diamondtorre'],\n"
        "        'stepwise_in_sweep_run': found['sweep']['stepwise'],\n"
        "        'per_stage': found['per-stage']['diamondtorre'],\n"
        "        'stepwise_in_per_stage_run': found['per-stage']['stepwise']}]}\n"
        "else:\n"
        "    with open('records/launch_schemes_h100.json') as fh:\n"
        "        record = json.load(fh)\n"
        "print('measured on', record['device'])\n"
        "for r in record['rows']:\n"
        "    sweep = r['sweep'] / r['stepwise_in_sweep_run']\n"
        "    stage = r['per_stage'] / r['stepwise_in_per_stage_run']\n"
        "    print(f\"{r['grid']:>14}: one launch per sweep {r['sweep']:7.1f} G/s \"\n"
        "          f\"({sweep:.2f}x stepwise), a launch per stage {r['per_stage']:7.1f} G/s \"\n"
        "          f'({stage:.2f}x)')",
        md("""
What to look for: where a stage is narrow (256^3: 32 torres for 132
multiprocessors) the per-stage scheme leaves most of the GPU idle and falls
below stepwise; on a grid whose stage fills the GPU it keeps most of the
speed and loses the drain between stages.  The paper's 5x over stepwise was
measured with the per-stage scheme against an FDTD3d-style stepwise code;
diamondlab's stepwise kernel runs near its bandwidth ceiling, so its 2-3x
is the fairer ratio (BENCHMARKS.md).
"""),
    ],
    "09_maxwell_on_diamondtorre.ipynb": [
        md("""
# 09 · Maxwell on DiamondTorre (paper 002)

The second equation of diamondlab: Maxwell's equations on the Yee grid, run by
the same DiamondTorre sweep as the acoustic wave (README, "Maxwell's
equations").  You will see (1) the Yee cell and what it means for the tile,
(2) a plane wave on a Drude sphere and its near field, (3) a slab's
reflection and transmission measured with flux planes against the Fresnel
formula, (4) DiamondTorre against stepwise time stepping measured on this
machine, bit for bit equal, and (5) the Maxwell lab.  Units are Meep's
(`c = eps0 = mu0 = 1`, lengths in cells, frequencies in `c / h`).  It runs on
a CPU in under a minute with `DIAMONDLAB_SMALL=1` (the first Maxwell run of a
machine compiles the Yee kernels once; they are cached on disk).
"""),
        md("""
## 1 · The Yee cell and its diamond tiles

`E` sits on the edges of a cell (`Ex` at `(i + 1/2, j, k)`, ...), `H` on its
faces (`Hx` at `(i, j + 1/2, k + 1/2)`, ...), and `H` is half a step behind
`E`.  A step is two half steps: `H` from the curl of `E`, then `E` from the
curl of `H`.  Each half step reads only the neighbours within the staggered
stencil's reach `M` (1 cell at order 2, 2 at order 4), so diamondlab runs
each half step as one *tier* of a DiamondTorre on the tile of the acoustic
stencil of the same order: the torre leans `M` cells a half step, and the
sweep updates `E` and `H` in place, as the acoustic scheme does its two time
levels.
"""),
        SMALL + "import numpy as np\n\n"
        "from diamondlab.maxwell import YeeParameters, yee_courant_limit, yee_weights\n"
        "from diamondlab.maxwell.materials import yee_positions\n\n"
        "for c, name in enumerate(('Ex', 'Ey', 'Ez')):\n"
        "    x, y, z = yee_positions(c, (1, 1, 1))\n"
        "    print(f'{name} of cell (0, 0, 0) sits at ({x.item():g}, {y.item():g}, {z.item():g})')\n"
        "for order in (2, 4):\n"
        "    p = YeeParameters(order=order)\n"
        "    print(f'order {order}: weights {yee_weights(order).round(5).tolist()}, reach M = {p.reach} '\n"
        "          f'cells a half step, stable for c dt / h <= {yee_courant_limit(order):.4f} '\n"
        "          f'(default {p.courant:.4f})')",
        md("""
The same facts drawn from the engine's geometry (`diamondlab.viz.yee`): the
cell with its six components, and what `Hz`'s update reads at order 4 (`Ey`
along x and `Ex` along y, from one cell behind to two ahead: the staggered
stencil is lopsided); then a torre of two Yee steps, its `H` and `E` tiers
alternating, leaning `M` cells a half step: the `E` tier reads the `H` tile
below it (green) and cells that torres of earlier stages computed (orange).
The stage explorer plays the whole sweep (`StageExplorer(config,
equation="maxwell")`).
"""),
        "from diamondlab.viz.yee import yee_cell_figure, yee_tiles_figure\n\n"
        "display(yee_cell_figure(4, reads='Hz'))\n"
        "yee_tiles_figure(2, size=2, nt=2, tier=1)",
        md("""
## 2 · A plane wave on a Drude sphere: the near field

A Gaussian pulse of wavelength 12 cells lights a Drude sphere
(`eps(omega) = eps_inf - wp^2 / (omega^2 + i gamma omega)`, negative at the
pulse's frequency: a metal) through a total-field/scattered-field box.  The
scene is the Maxwell lab's configuration (`MaxwellConfig`), the simulation
the engine's.  The picture is `|E|` on the plane through the sphere's centre,
in units of the incident wave's peak (`colour_scale`): the field concentrates
at the sphere's poles along the polarisation (`E` along z), the plasmon's near
field.
"""),
        "import plotly.graph_objects as go\n\n"
        "from diamondlab.widgets.maxwell_controls import MaxwellConfig, build_maxwell\n"
        "from diamondlab.widgets.maxwell_lab import colour_scale, default_steps\n\n"
        "N = 32 if SMALL else 64\n"
        "sphere = MaxwellConfig(shape=(N, N, N), order=2, pml=6, scene='sphere', medium='drude', eps=1.0,\n"
        "                       wp=1.0, gamma=0.02, radius=N / 8, wavelength=12, backend='cpu')\n"
        "sim = build_maxwell(sphere)\n"
        "eps = sim.physics.materials[0].medium.permittivity(2 * np.pi / sphere.wavelength)\n"
        "print(sim)\n"
        "print(f'eps of the sphere at the pulse frequency: {complex(eps):.3g}')\n"
        "sim.run(default_steps(sim) // 2)\n"
        "E = sim.E\n"
        "scale, rule = colour_scale(sim)\n"
        "c = N // 2\n"
        "near = np.sqrt((E[:, :, c, :].astype(float) ** 2).sum(axis=0)) / scale   # |E| on the plane y = c\n"
        "print(f'step {sim.time_step}: the largest |E| on the plane is {near.max():.2f} of {rule}')\n"
        "fig = go.Figure(go.Heatmap(z=near.T, colorscale='Inferno', zmin=0,\n"
        "                           colorbar=dict(title='|E| / A')))\n"
        "fig.update_layout(title='|E| / A on the plane y = centre', width=520,\n"
        "                  height=460, xaxis_title='x', yaxis_title='z', yaxis_scaleanchor='x')\n"
        "fig",
        md("""
## 3 · A slab's reflection against Fresnel

A dielectric slab (`eps = 2.25`, 8 cells thick) in a cell periodic in y and
z, a plane wave along x.  Two flux planes measure the reflected flux (in the
scattered field before the total-field box) and the transmitted flux (behind
the slab), each divided by the incident flux, which the incident wave's own
1D grid gives during the same run (`diamondlab.maxwell.spectra.IncidentFlux`:
no second, empty run).  The dashed curves are the Fresnel (Airy) formula of
that slab (`slab_fresnel`).  The difference comes from resolving the slab by
cells: halving the cell (twice the wavelength and the slab in cells) divides
it by about four, a second-order method's convergence.
"""),
        "from diamondlab.maxwell.spectra import IncidentFlux, slab_fresnel\n\n"
        "def slab_spectrum(cells_per_wavelength):\n"
        "    k = cells_per_wavelength / 16\n"
        "    cfg = MaxwellConfig(shape=(int(64 * k), 8, 8), order=2, pml=8, scene='slab',\n"
        "                        medium='dielectric', eps=2.25, radius=4 * k, periodic=True,\n"
        "                        wavelength=cells_per_wavelength, backend='cpu')\n"
        "    sim = build_maxwell(cfg)\n"
        "    sim.run(default_steps(sim))\n"
        "    incident = IncidentFlux(sim, sim.monitors[0].frequencies).update(sim)\n"
        "    faces = sim.dft(0)['Ez'][0].size\n"
        "    r, t = (sim.flux(i) / (faces * incident) for i in (0, 1))\n"
        "    # in units of the slab: f times the slab's thickness, so that the runs compare\n"
        "    x = np.asarray(sim.monitors[0].frequencies) * 8 * k\n"
        "    r_f, t_f = slab_fresnel(sim.physics.materials[0].medium, 8 * k, sim.monitors[0].frequencies)\n"
        "    return x, r, t, r_f, t_f\n\n"
        "spectra = {}\n"
        "for cells in ((16, 32) if SMALL else (16, 32, 64)):\n"
        "    spectra[cells] = x, r, t, r_f, t_f = slab_spectrum(cells)\n"
        "    print(f'{cells:3d} cells a wavelength: max |R - R_Fresnel| = {np.abs(r - r_f).max():.4f}, '\n"
        "          f'max |T - T_Fresnel| = {np.abs(t - t_f).max():.4f}, max |R + T - 1| = '\n"
        "          f'{np.abs(r + t - 1).max():.1e}')\n"
        "x, r, t, r_f, t_f = spectra[16]\n"
        "fig = go.Figure()\n"
        "for name, y, dash in (('R measured', r, None), ('T measured', t, None),\n"
        "                      ('R Fresnel', r_f, 'dash'), ('T Fresnel', t_f, 'dash')):\n"
        "    fig.add_scatter(x=x, y=y, name=name, mode='lines', line=dict(dash=dash))\n"
        "fig.update_layout(title='A slab at 16 cells a wavelength: R and T against Fresnel', width=640,\n"
        "                  height=380, xaxis_title='f × thickness (c / h × cells)', yaxis_title='fraction')\n"
        "fig",
        md("""
## 4 · DiamondTorre against stepwise, measured here

The same scene run by both algorithms: the fields are equal bit for bit, and
the rate is measured in Yee cell updates per second (a cell's six components
a step), each algorithm's best of three short runs taken in turn.  On a CPU
the two are close (BENCHMARKS.md, "Maxwell on the GPU, first kernels", has
the CPU's numbers at 96^3).  The gain the model promises is the GPU's, where
a torre's tier can stay on chip: `predict_yee` gives what the model allows
on an H100 from the bytes each update moves; BENCHMARKS.md has what the GPU
kernels measure against it.
"""),
        "import warnings\n\n"
        "from diamondlab import Simulation\n"
        "from diamondlab.engine.measure.perfmodel import H100, predict_yee\n"
        "from diamondlab.engine.run.simulation import SourceTimingWarning\n\n"
        "scene = sphere.sim_kwargs()\n"
        "runs = {algorithm: Simulation(equation='maxwell', **{**scene, 'algorithm': algorithm})\n"
        "        for algorithm in ('diamondtorre', 'stepwise')}\n"
        "best = dict.fromkeys(runs, 0.0)\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore', SourceTimingWarning)  # short runs: the pulse has not started\n"
        "    for run in runs.values():\n"
        "        run.run(run.nt)                  # the first sweep loads the kernels\n"
        "    for _ in range(3):                   # in turn, the best of three: a busy machine is noisy\n"
        "        for algorithm, run in runs.items():\n"
        "            best[algorithm] = max(best[algorithm], run.run(2 * run.nt).gcells_per_second)\n"
        "for algorithm, run in runs.items():\n"
        "    model = predict_yee(algorithm, run.order, run.size, run.nt, H100, drude=run.physics.drude)\n"
        "    print(f'{algorithm:>12}: {best[algorithm] * 1e3:7.2f} M Yee cell updates/s on this CPU '\n"
        "          f'(the model on an H100: {model.rate / 1e9:.0f} G/s, '\n"
        "          f'{model.bytes_per_update:.1f} B/update)')\n"
        "a, b = runs.values()\n"
        "print('bit for bit equal:', a.time_step == b.time_step\n"
        "      and all(np.array_equal(u, v) for u, v in zip(a.fields, b.fields, strict=True)))",
        md("""
## 5 · The Maxwell lab

The lab of notebook 03 for the second equation: `Lab(equation="maxwell")` (a
`MaxwellLab`).  Choose an object and its medium, the source, the CPML, NO,
DTS and Nt; Run, Pause, Step and Reset drive the run in the background, as in
the acoustic lab.  The planes show `|E|` or a component with a fixed colour
scale (its rule in the title) and the outlines of the object, the CPML and
the total-field box; below, the probes' traces and, for a plane wave, R and T
through the flux planes (with a slab's Fresnel curves).  A setting the engine
refuses shows the engine's message.  The buttons work from Python too:
`lab.run()`, `lab.pause()`, `lab.step()`, `lab.reset()`.  The other tabs draw
the staggered geometry for the DTS and Nt the engine runs and follow the
controllers: *Shapes* (the torre from its conoids, locality and asynchrony
next to the acoustic scheme's), *Stages* (the sweep half step by half step),
*Yee* (section 1's cell and tiles, with menus for the component and the tier)
and *Tuning*.
"""),
        "from diamondlab.widgets import Lab\n\n"
        "lab = Lab(equation='maxwell', shape=(32, 24, 24) if SMALL else (64, 48, 48),\n"
        "          pml=4 if SMALL else 8, radius=4 if SMALL else 8, wavelength=10 if SMALL else 16,\n"
        "          backend='cpu')\n"
        "lab.step()\n"
        "lab.wait(60)\n"
        "lab",
    ],
}


def strip_outputs(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` without what running it leaves: outputs, execution counts, widget state (changed in place).

    >>> nb = _nb(["print(1)"])
    >>> nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="1")]
    >>> nb.cells[0].execution_count, nb.metadata["widgets"] = 3, {"state": {}}
    >>> nb = strip_outputs(nb)
    >>> nb.cells[0].outputs, nb.cells[0].execution_count, "widgets" in nb.metadata
    ([], None, False)
    """
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        for key in ("execution", "collapsed", "scrolled"):
            cell.metadata.pop(key, None)
    nb.metadata.pop("widgets", None)
    return nb


def copy_stripped(source: Path, target: Path) -> list[Path]:
    """Copy the notebooks of folder ``source`` to ``target`` without outputs (the docs build renders them:
    a saved plotly or widget output is an "unknown output mime type" warning, an error with ``-W``), and
    every other file as it is; return the notebooks written."""
    import shutil

    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    written = sorted(target.glob("*.ipynb"))
    for path in written:
        nbformat.write(strip_outputs(nbformat.read(path, as_version=4)), path)
    return written


def main() -> None:
    if "--strip" in sys.argv[1:]:  # a git clean filter: a notebook on stdin, the same without outputs out
        nb = nbformat.reads(sys.stdin.read(), as_version=4)
        sys.stdout.write(nbformat.writes(strip_outputs(nb)) + "\n")
        return
    for name, cells in NOTEBOOKS.items():
        path = ROOT / "notebooks" / name
        nbformat.write(_nb(cells), path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
