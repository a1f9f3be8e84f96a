import subprocess
import sys


def test_import_is_light():
    code = (
        "import sys, diamondlab; diamondlab.stage_schedule(2, 1, 2, 8, 8);"
        "heavy = [m for m in ('numba', 'numba.cuda', 'plotly', 'pyvista', 'ipywidgets')"
        " if m in sys.modules]; print(heavy); sys.exit(1 if heavy else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_simulation_is_exported_lazily():
    import diamondlab

    assert diamondlab.Simulation.__name__ == "Simulation"
