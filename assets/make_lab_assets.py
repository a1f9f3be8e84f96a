"""Make the README's pictures of the interactive lab from the package itself.

Run ``python assets/make_lab_assets.py`` (needs the ``lab`` extra and the
``dev`` dependency group, ``pip install --group dev``: plotly's static export
uses kaleido with Debian's ``chromium``; pyvista renders off screen).  It writes, into ``assets/``:

- ``lab_conoids.png``: influence and dependence conoids and their
  intersection, the DiamondTorre prism (:func:`diamondlab.viz.lrnla.conoid_figure`);
- ``lab_stages.png``: a sweep in the middle, coloured by stage, with one
  torre's dependencies (:class:`diamondlab.viz.stages.SweepPicture`);
- ``lab_locality.png``: locality and asynchrony of (NO, DTS, Nt) = (2, 4, 16);
- ``lab_slices.png``: the live view's slices of a run with two sources;
- ``lab_snapshot.png`` and ``lab_wavefield.gif``: pyvista volume rendering and
  isosurfaces of that run, one picture and a short animation;
- ``lab_tuning.png`` (``--tuning``): a DTS x Nt tuning sweep measured on this
  machine against the model;
- ``lab_maxwell.png`` and ``lab_maxwell_spectrum.png`` (``--maxwell``, alone): the Maxwell lab's live
  view after a run of its default scene (a Drude sphere lit by a plane wave in a CPML, on the CPU): |E| on
  three planes with the scene's outlines, and the reflection and transmission spectra;
- ``lab_browser.png`` (``--browser``): JupyterLab in headless Chromium running
  notebook 03 (the browser test, at full size);
- ``paper_*.png`` (``--paper``, alone): paper 000's Figs. 1-4, 7, 10 and 11, the x-t
  diamonds and section 5's tilings, drawn as notebooks 01, 06, 07 and 08 draw
  them (this machine's memory hierarchy is measured for Fig. 1, its CPU's rates
  for Figs. 10 and 11; ``--paper-measured``: only those two).
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _write_plotly(fig, name: str, width: int, height: int) -> None:
    fig.write_image(HERE / name, width=width, height=height, scale=1)
    print(f"wrote {HERE / name}")


def geometry_figures() -> None:
    from diamondlab.geometry import stage_schedule
    from diamondlab.viz.lrnla import conoid_figure, locality_figure
    from diamondlab.viz.stages import SweepPicture

    _write_plotly(conoid_figure(order=2, size=2, nt=6), "lab_conoids.png", 820, 560)
    picture = SweepPicture(stage_schedule(order=2, size=2, nt=4, nx=28, ny=20))
    _write_plotly(picture.figure(picture.nstages // 2), "lab_stages.png", 900, 560)
    loc = locality_figure(order=2, size=4, nt=16, shape=(256, 256, 256))
    _write_plotly(loc, "lab_locality.png", 1000, 360)


def paper_figures() -> None:
    """Paper 000's figures as the notebooks draw them (06, 07, 08 and 01), for the README's table."""
    import json

    from diamondlab.engine.measure.perfmodel import H100, gpu_hierarchy, measure_cpu_hierarchy
    from diamondlab.geometry import compare_tilings, locality
    from diamondlab.viz.graph import (
        dependency_graph_figure,
        diamond_xt_figure,
        light_cone_figure,
        subdivisions_figure,
    )
    from diamondlab.viz.lrnla import tilings_figure
    from diamondlab.viz.perf import memory_hierarchy_figure, roofline_figure

    cpu = measure_cpu_hierarchy([2**k for k in range(14, 29, 2)])
    _write_plotly(memory_hierarchy_figure(cpu, gpu_hierarchy()), "paper_fig1_hierarchy.png", 760, 420)
    _write_plotly(dependency_graph_figure(4), "paper_fig2_graph.png", 700, 380)
    _write_plotly(light_cone_figure(4, depth=5), "paper_fig3_light_cone.png", 700, 360)
    subdivisions = subdivisions_figure(2, nx=48, nt=24, width_cells=8)
    _write_plotly(subdivisions, "paper_fig4_subdivisions.png", 960, 360)
    _write_plotly(diamond_xt_figure(2, 8), "paper_xt_diamonds.png", 760, 420)
    record = json.loads((HERE.parent / "notebooks" / "records" / "launch_schemes_h100.json").read_text())
    big, (order, dts, nt) = record["rows"][-1], (record["order"], record["dts"], record["nt"])
    points = [("stepwise", locality("stepwise_layer", order), big["stepwise_in_sweep_run"]),
              ("DiamondTorre", locality("torre_row", order, dts, nt), big["sweep"])]
    _write_plotly(roofline_figure(order, dts, nt, H100, points), "paper_fig7_roofline.png", 820, 460)
    _write_plotly(tilings_figure(compare_tilings(2, 2, 8, ny=32)), "paper_sec5_tilings.png", 900, 420)
    paper_measured_figures()


def paper_measured_figures() -> None:
    """Figs. 10 and 11 measured on this machine's CPU, at notebook 07's full sizes."""
    from diamondlab.engine.measure.bench import thread_sweep, tuning_sweep
    from diamondlab.engine.measure.perfmodel import predicted_rate
    from diamondlab.viz.perf import order_size_figure, parallel_levels_figure

    rows = []
    for order, sizes in ((2, (1, 2, 4)), (4, (1, 2)), (6, (1,)), (8, (1,))):
        rows += tuning_sweep((64, 64, 64), [order], sizes, (8, 16), repeats=3, model=predicted_rate)
    _write_plotly(order_size_figure(rows), "paper_fig11_orders.png", 820, 420)
    levels = thread_sweep((96, 96, 64), size=2, nt=8, repeats=3)
    _write_plotly(parallel_levels_figure(levels), "paper_fig10_threads.png", 760, 420)


def _wave_run(n: int = 96, frames: int = 20, every: int = 10):
    import diamondlab as dl
    from diamondlab.sources import Receiver, Source

    sources = [Source((n // 2, n // 2, n // 3), "ricker", frequency=0.06, units="grid"),
               Source((n // 2, n // 2, 2 * n // 3), "ricker", frequency=0.06, amplitude=-1.0, units="grid")]
    sim = dl.Simulation((n, n, n), order=4, courant=0.45, backend="cpu", initial="zero", sponge=n // 8,
                        sources=sources,
                        receivers=[Receiver((n // 2 + n // 4, n // 2, n // 2), units="grid")])
    sim.run(frames * every, snapshot_every=every)
    return sim


def wavefield_figures() -> None:
    from PIL import Image

    from diamondlab.viz.fields import field_slices, robust_max, slices_figure, update_slices
    from diamondlab.viz.snapshots import render_png

    sim = _wave_run()
    fig = slices_figure(sim.shape, 96)
    step, field = sim.snapshots.frames[len(sim.snapshots.frames) // 2]
    n = sim.shape[0]
    title = f"u at n = {step}: two Ricker sources of opposite sign, sponge at the faces"
    update_slices(fig, field_slices(field, index=(n // 2, n // 2, n // 3)), title=title)
    _write_plotly(fig, "lab_slices.png", 1000, 340)
    (HERE / "lab_snapshot.png").write_bytes(render_png(field, "both", 0.25, title=f"n = {step}"))
    print(f"wrote {HERE / 'lab_snapshot.png'}")
    vmax = robust_max([sim.snapshots.frames[len(sim.snapshots.frames) // 2][1]], percentile=99.9)
    images = []
    for step, field in sim.snapshots.frames[1:]:
        # one colour scale and one isosurface level for the whole animation
        png = render_png(field, "both", 0.25, window_size=(360, 288), title=f"n = {step}", vmax=vmax)
        images.append(Image.open(io.BytesIO(png)).convert("P", palette=Image.Palette.ADAPTIVE, colors=128))
    images[0].save(HERE / "lab_wavefield.gif", save_all=True, append_images=images[1:], duration=250, loop=0,
                   optimize=True)
    print(f"wrote {HERE / 'lab_wavefield.gif'} ({len(images)} frames)")


def tuning_figure() -> None:
    from diamondlab.engine.measure.bench import tuning_sweep
    from diamondlab.engine.measure.perfmodel import predicted_rate
    from diamondlab.viz.perf import tuning_figure as figure

    rows = tuning_sweep((128, 128, 128), orders=(2,), sizes=(1, 2, 4, 6), nts=(8, 16, 24, 32), repeats=3,
                        model=predicted_rate)
    _write_plotly(figure(rows), "lab_tuning.png", 900, 420)


def browser_screenshot() -> None:
    env = dict(os.environ, DIAMONDLAB_SMALL="0", DIAMONDLAB_SCREENSHOT=str(HERE / "lab_browser.png"))
    test = str(HERE.parent / "tests" / "test_browser.py")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test]
    subprocess.run(cmd, check=True, env=env)
    print(f"wrote {HERE / 'lab_browser.png'}")


def maxwell_figures() -> None:
    """The Maxwell lab's live view after its default scene's run (``Lab(equation="maxwell")``, CPU)."""
    from diamondlab.widgets import Lab

    lab = Lab(equation="maxwell", backend="cpu", replace=False)
    try:
        lab.run()
        if not lab.wait(1800):
            raise SystemExit(f"the Maxwell lab's run did not end: {lab.runner.message}")
        lab.live.refresh()
        _write_plotly(lab.live.planes, "lab_maxwell.png", 960, 400)
        _write_plotly(lab.live.spectrum, "lab_maxwell_spectrum.png", 420, 330)
    finally:
        lab.close()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuning", action="store_true", help="also measure and draw a tuning sweep")
    parser.add_argument("--browser", action="store_true", help="also take the JupyterLab screenshot")
    parser.add_argument("--paper", action="store_true", help="only paper 000's figures (paper_*.png)")
    parser.add_argument("--maxwell", action="store_true", help="only the Maxwell lab's view (lab_maxwell*)")
    parser.add_argument("--paper-measured", action="store_true",
                        help="only Figs. 10 and 11, measured on this CPU (paper_fig1[01]_*.png)")
    args = parser.parse_args(argv)
    if args.maxwell:
        maxwell_figures()
        return
    if args.paper or args.paper_measured:
        (paper_figures if args.paper else paper_measured_figures)()
        return
    geometry_figures()
    wavefield_figures()
    if args.tuning:
        tuning_figure()
    if args.browser:
        browser_screenshot()


if __name__ == "__main__":
    main()
