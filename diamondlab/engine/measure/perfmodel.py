"""Roofline performance model of stepwise and DiamondTorre runs, and a CUDA benchmark.

Contract
--------
A run is memory bound or compute bound.  Per cell update a stepwise kernel
moves at least 12 bytes (read ``F``, read ``G``, write ``G``); a DiamondTorre
row moves about ``4 / locality`` bytes, with the locality parameter of a row
of torres (paper 000, section 5; :func:`diamondlab.geometry.locality.locality`
with ``"torre_row"``).  Per update the scheme does ``4 + 7 ShS`` float32
operations (an FMA counted as two).  The predicted rate is::

    min(bandwidth / bytes_per_update, fp32_rate / flops_per_update)

in cell updates per second.  :func:`predict` returns it with its parts;
:func:`fraction_of_model` reports a measured rate against it.  The device
numbers come from :class:`DeviceNumbers` (H100 defaults, measured on this
project's card: 3.0 TB/s device-to-device copy, counting bytes read plus
written) or from :func:`measure_copy_bandwidth` on the current CUDA device.  This
roofline is the GPU's model; the CPU's, which measures the cache levels and lets the working set
decide the bound, is :mod:`diamondlab.engine.measure.cpumodel`; :func:`model_for` picks by backend.

``diamondlab bench --matrix`` runs the CUDA benchmark (:func:`benchmark`):
per NO, the stepwise and the DiamondTorre rates (medians of several timed
runs, CUDA events, :mod:`diamondlab.engine.measure.bench`), their ratio, the
model, the copy bandwidth measured in the same run and the sweep kernel's
registers.
"""

from __future__ import annotations

import functools
import itertools
import time
from dataclasses import dataclass

from diamondlab import devices
from diamondlab.engine.measure.timing import measure, measure_backend
from diamondlab.geometry.locality import locality
from diamondlab.numerics import validate_order

__all__ = [
    "H100",
    "DeviceNumbers",
    "Prediction",
    "benchmark",
    "flops_per_update",
    "fraction_of_model",
    "cpu_device_numbers",
    "cuda_device_numbers",
    "device_numbers",
    "gpu_hierarchy",
    "measure_copy_bandwidth",
    "measure_cpu_bandwidth",
    "measure_cpu_hierarchy",
    "Model",
    "model_for",
    "predict",
    "predict_yee",
    "predicted_rate",
    "predicted_yee_rate",
    "yee_bytes_per_update",
    "yee_flops_per_update",
]

#: The shapes of paper 000's section 5 read once per half step (no reuse across tiers) in the byte model.
_STEPWISE_SHAPES = ("naive", "stepwise_row", "stepwise_layer", "diamond_tile")


@dataclass(frozen=True)
class DeviceNumbers:
    """Measured ceilings of a device: copy bandwidth (bytes/s, read + write) and FP32 flop/s."""

    name: str
    bandwidth: float
    fp32_rate: float


#: NVIDIA H100 80GB HBM3: 3.0 TB/s copy (NOTES, measured), 66.9 TFLOP/s FP32 (FMA = 2 flops;
#: :data:`diamondlab.devices.H100`).
H100 = DeviceNumbers(devices.H100.name, 3.0e12, devices.H100.fp32_rate)


def flops_per_update(order: int) -> int:
    """Float32 operations of one cell update, an FMA counted as two.

    >>> flops_per_update(2), flops_per_update(8)
    (11, 32)
    """
    shs = validate_order(order) // 2
    return 4 + 7 * shs


@dataclass(frozen=True)
class Prediction:
    """Roofline prediction in cell updates per second, with its memory and compute parts."""

    bytes_per_update: float
    memory_bound: float
    compute_bound: float

    @property
    def rate(self) -> float:
        return min(self.memory_bound, self.compute_bound)

    @property
    def bound(self) -> str:
        return "memory" if self.memory_bound <= self.compute_bound else "compute"


def predict(algorithm: str, order: int, size: int = 1, nt: int = 1,
            device: DeviceNumbers = H100, velocity_model: bool = False) -> Prediction:
    """Predicted rate of ``"stepwise"`` or ``"diamondtorre"`` on ``device``.

    ``velocity_model``: ``K`` per cell, read-only: 4 more bytes per update
    stepwise, 4 per cell and sweep (``4 / Nt`` per update) for DiamondTorre.
    A sponge, sources and receivers move no bytes that count (the sponge's
    profiles are a few KiB): the byte model predicts them free; what they
    cost on a device is measured (BENCHMARKS.md, "Physics and launches").

    >>> round(predict("stepwise", 2).rate / 1e9)  # 3.0 TB/s / 12 B
    250
    >>> p = predict("diamondtorre", 2, size=4, nt=32)
    >>> round(p.bytes_per_update, 2), p.bound
    (4.14, 'memory')
    >>> round(predict("stepwise", 2, velocity_model=True).rate / 1e9)  # 16 B
    188
    """
    if algorithm == "stepwise":
        nbytes = 12.0 + (4.0 if velocity_model else 0.0)
    elif algorithm == "diamondtorre":
        nbytes = 4.0 / locality("torre_row", order=order, size=size, nt=nt)
        nbytes += 4.0 / nt if velocity_model else 0.0
    else:
        raise ValueError(f"algorithm must be 'stepwise' or 'diamondtorre'; got {algorithm!r}")
    return Prediction(nbytes, device.bandwidth / nbytes, device.fp32_rate / flops_per_update(order))


def yee_flops_per_update(order: int) -> int:
    """Float32 operations of one Yee cell update (both half steps, six components), an FMA as two.

    A staggered derivative is 2 operations at order 2, 5 at order 4; each half step takes six of them,
    then ``H - dh curl`` (3 a component) or ``ca E + cb curl`` (4 a component).

    >>> yee_flops_per_update(2), yee_flops_per_update(4)
    (45, 81)
    """
    d = 2 if order == 2 else 5
    return 2 * 6 * d + 3 * 3 + 3 * 4


def yee_bytes_per_update(shape: str, order: int, size: int = 1, nt: int = 1, drude: bool = False) -> float:
    """Bytes one Yee cell update moves in ``shape`` (of :func:`~diamondlab.geometry.locality.locality`):
    ``4 / locality(shape, equation="maxwell")`` for the fields, from the tile geometry, and the material.

    The material's three bytes a cell are read every half step by the shapes that do one tier
    (``"naive"``, ``"stepwise_row"``, ``"stepwise_layer"``, ``"diamond_tile"``: 6 bytes a Yee update),
    once a sweep of ``Nt`` steps by the torres (``3 / Nt``); a Drude current's three components are read
    and written once an ``E`` half step (24 bytes), or once a sweep (``24 / Nt``).

    >>> yee_bytes_per_update("stepwise_layer", 2), round(yee_bytes_per_update("torre_row", 4, 2, 16), 1)
    (78.0, 44.1)
    """
    fields = 4.0 / locality(shape, order=order, size=size, nt=nt, equation="maxwell")
    sweeps = 1.0 if shape in _STEPWISE_SHAPES else float(nt)
    return fields + (6.0 if shape in _STEPWISE_SHAPES else 3.0) / sweeps + (24.0 if drude else 0.0) / sweeps


def predict_yee(algorithm: str, order: int, size: int = 1, nt: int = 1, device: DeviceNumbers = H100,
                drude: bool = False) -> Prediction:
    """Predicted rate of a Maxwell run, in Yee cell updates per second (a cell's six components a step).

    Stepwise, each half step reads the three components it updates and the three it differentiates and
    writes three (36 bytes) and reads the three material bytes: 78 bytes a Yee update (``drude``: the
    current's three components read and written in the E half, 24 more).  DiamondTorre's tiers are half
    steps on the tile of the acoustic stencil of the same order (:mod:`diamondlab.kernels.yee_cpu`): a
    row of torres of ``2 Nt`` tiers moves ``12 / locality`` bytes a half step for its three
    components (the locality of paper 000, section 5, as for the scalar field's 4 bytes), and the
    material bytes (and a Drude current) once a sweep.  A tile of one DTS moves about as much as
    stepwise (paper 002 chose DTS = 1 for the register file of its GPU); DTS = 2 and 4 move 1.8x and
    3.1x less.

    >>> round(predict_yee("stepwise", 2).rate / 1e9, 1)  # 3.0 TB/s / 78 B
    38.5
    >>> [round(predict_yee("diamondtorre", 4, size, nt=16).bytes_per_update, 1) for size in (1, 2, 4)]
    [73.7, 44.1, 25.0]
    """
    shapes = {"stepwise": "stepwise_layer", "diamondtorre": "torre_row"}
    if algorithm not in shapes:
        raise ValueError(f"algorithm must be 'stepwise' or 'diamondtorre'; got {algorithm!r}")
    nbytes = yee_bytes_per_update(shapes[algorithm], order, size, nt, drude)
    return Prediction(nbytes, device.bandwidth / nbytes, device.fp32_rate / yee_flops_per_update(order))


def fraction_of_model(measured_rate: float, algorithm: str, order: int, size: int = 1,
                      nt: int = 1, device: DeviceNumbers = H100) -> float:
    """``measured_rate`` (cell updates/s) as a fraction of :func:`predict`'s rate.

    >>> round(fraction_of_model(200e9, "stepwise", 2), 2)
    0.8
    """
    return measured_rate / predict(algorithm, order, size, nt, device).rate


def measure_copy_bandwidth(nbytes: int = 2**30, repeats: int = 10, kernel: bool = True) -> float:
    """Device-to-device copy bandwidth of the current CUDA device (bytes read + written per s).

    ``kernel=True`` copies with a simple Numba kernel (what a stencil kernel can
    reach); ``kernel=False`` with the driver's ``cuMemcpyDtoD``.  Median of
    ``repeats`` copies of ``nbytes``.
    """
    import numpy as np
    from numba import cuda

    n = nbytes // 4
    src = cuda.device_array(n, dtype=np.float32)
    dst = cuda.device_array(n, dtype=np.float32)
    if kernel:
        copy = _copy_kernel()
        blocks = -(-n // 1024)

        def run(src=src, dst=dst):
            copy[blocks, 256](src, dst)
    else:

        def run(src=src, dst=dst):
            dst.copy_to_device(src)
    return measure(run, 2.0 * n * 4, cuda.synchronize, min_repeats=repeats, cuda_events=True).rate


def measure_cpu_bandwidth(nbytes: int = 2**28, repeats: int = 7) -> float:
    """Memory bandwidth of this machine's cores as a stepwise kernel sees it (bytes/s).

    Times ``b += a`` over two float32 arrays of ``nbytes`` each on all cores
    (Numba ``prange``): 12 bytes per element, read ``a``, read and write ``b``,
    the traffic pattern of a stepwise update.  Measured by the rule (at least ``repeats``).
    """
    import numpy as np

    kernel = _cpu_add_kernel()
    a = np.ones(nbytes // 4, dtype=np.float32)
    b = np.zeros_like(a)
    return measure(lambda: kernel(a, b), 12.0 * a.size, min_repeats=repeats).rate


def measure_cpu_hierarchy(sizes=None, traffic: float = 4e8) -> list[tuple[int, float]]:
    """One core's memory hierarchy as ``b += a`` sees it: ``(working set bytes, bytes/s)`` per size.

    The two float32 arrays together hold ``size`` bytes (default 16 KiB to 512 MiB, by factors of 4);
    each call runs ``b += a`` repeatedly until about ``traffic`` bytes moved (12 bytes an element),
    measured by the rule (:func:`~diamondlab.engine.measure.timing.measure`),
    on one core, so the rate falls as the working set leaves each cache: paper 000's Fig. 1 measured.
    """
    import numpy as np

    kernel = _cpu_repeat_add_kernel()
    out = []
    for size in sizes or [2**k for k in range(14, 30, 2)]:
        n = max(256, int(size) // 8)
        a, b = np.ones(n, dtype=np.float32), np.zeros(n, dtype=np.float32)
        reps = max(1, int(traffic / (12 * n)))
        out.append((8 * n, measure(functools.partial(kernel, a, b, reps), 12.0 * n * reps).rate))
    return out


def gpu_hierarchy(arch: devices.GPUArch = devices.H100, device_bandwidth: float = H100.bandwidth,
                  device_bytes: float = 80e9) -> list[tuple[str, float, float]]:
    """``(level, bytes, bytes/s)`` of a GPU's registers, shared memory and device memory.

    Registers: the whole register file, at the rate the FP32 lanes read operands (three of 4 bytes a
    lane and clock); shared memory: 128 bytes a clock per multiprocessor; device memory: ``device_bytes``
    at the measured copy bandwidth (H100: 3.0 TB/s, NOTES).  Derived from :mod:`diamondlab.devices`,
    not measured (L2 is left out: its bandwidth is not in the tables).

    >>> [(name, round(b / 2**20), round(r / 1e12)) for name, b, r in gpu_hierarchy()][:2]
    [('registers', 33, 401), ('shared memory', 29, 33)]
    """
    sms, clock = arch.multiprocessors, arch.clock_hz
    return [
        ("registers", 4.0 * arch.registers_per_sm * sms, 3 * 4.0 * arch.fp32_lanes_per_sm * sms * clock),
        ("shared memory", float(arch.shared_per_sm * sms), 128.0 * sms * clock),
        ("device memory", float(device_bytes), float(device_bandwidth)),
    ]


@functools.cache
def _cpu_repeat_add_kernel():
    from numba import njit, uint64

    @njit(cache=False)
    def add_into(a, b, reps):
        for _ in range(reps):
            for i in range(uint64(a.size)):  # unsigned: no wrap-around check, the loop vectorises
                b[i] += a[i]

    return add_into


def _cpu_add_kernel():
    from numba import njit, prange

    @njit(parallel=True, cache=False)
    def add_into(a, b):
        for i in prange(a.size):
            b[i] += a[i]

    return add_into


def cuda_device_numbers() -> DeviceNumbers:
    """The current CUDA device: copy bandwidth measured now, FP32 rate from the device
    (:func:`diamondlab.devices.current_gpu`: its multiprocessors, clock and its generation's FP32 lanes).
    """
    arch = devices.current_gpu()
    if arch is None:
        raise RuntimeError("no CUDA GPU here: the GPU's numbers cannot be measured")
    bandwidth = max(measure_copy_bandwidth(), measure_copy_bandwidth(kernel=False))
    return DeviceNumbers(arch.name, bandwidth, arch.fp32_rate)


def cpu_device_numbers() -> DeviceNumbers:
    """This machine's cores: ``b += a`` bandwidth measured now; the compute bound is left open.

    For the roofline figure of paper 000's Fig. 7 only: the CPU's model of a run is
    :mod:`diamondlab.engine.measure.cpumodel` (:func:`model_for`), whose in-cache rate and levels
    decide the bound (this roofline is 5 to 17 times above measured CPU rates, BENCHMARKS.md).
    """
    import os
    import platform

    name = f"{os.cpu_count()}-core {platform.processor() or platform.machine()}"
    return DeviceNumbers(name, measure_cpu_bandwidth(), float("inf"))


@functools.cache
def device_numbers(backend: str = "cpu", order: int = 2) -> DeviceNumbers:
    """Bandwidth and compute ceiling of ``backend`` on this machine (measured once per process)."""
    if backend == "cpu":
        return cpu_device_numbers()
    if backend == "cuda":
        return cuda_device_numbers()
    raise ValueError(f"backend must be 'cpu' or 'cuda'; got {backend!r}")


@dataclass(frozen=True)
class Model:
    """What the model of a backend says of one run: a rate (cell updates/s; NaN for none), the bound
    that sets it (``"memory-bound"``, ``"L2-bound"``, ``"compute-bound"``, ... or ``"no model: why"``)
    and, where the model counts them, the bytes an update moves (NaN where it does not)."""

    rate: float
    bound: str
    bytes_per_update: float = float("nan")

    @property
    def gcells(self) -> float:
        return self.rate / 1e9


def model_for(algorithm: str, order: int, shape, size: int = 1, nt: int = 1, backend: str = "cpu",
              variant: str = "constant") -> Model:
    """The one model of a run, by backend: the CPU's (:func:`diamondlab.engine.measure.cpumodel.predict_cpu`:
    measured levels, the working set deciding the bound) or the GPU's roofline (:func:`predict` on
    :func:`device_numbers`); ``variant`` is the kernels' medium (``"constant"``, ``"sponge"``,
    ``"layered"``, ``"model"``).  Another backend has none.

    >>> model_for("stepwise", 2, (8, 8, 8), backend="numpy").bound
    "no model: backend 'numpy' has none"
    """
    if backend == "cpu":
        from diamondlab.engine.measure.cpumodel import cpu_numbers, predict_cpu

        p = predict_cpu(algorithm, order, shape, size, nt, variant=variant)
        return Model(p.rate, p.bound + (" (its probes not steady)" if cpu_numbers().flags else ""))
    if backend == "cuda":
        p = predict(algorithm, order, size, nt, device_numbers(backend, order),
                    velocity_model=variant == "model")
        return Model(p.rate, f"{p.bound}-bound")
    return Model(float("nan"), f"no model: backend {backend!r} has none")


def predicted_rate(algorithm: str, order: int, size: int, nt: int, backend: str = "cpu",
                   shape=None) -> float:
    """The model's rate in G cell updates per second for this configuration and backend
    (:func:`model_for`; the CPU's model needs the grid's ``shape``: NaN without it)."""
    if backend == "cpu" and shape is None:
        return float("nan")
    return model_for(algorithm, order, shape, size, nt, backend).gcells


def predicted_yee_rate(algorithm: str, order: int, size: int, nt: int, backend: str = "cpu",
                       shape=None) -> float:
    """The model's rate of a Maxwell run in G Yee cell updates per second: :func:`predict_yee` on the
    GPU's :func:`device_numbers`; NaN on another backend (the CPU's model is the acoustic scheme's alone).

    >>> predicted_yee_rate("stepwise", 2, 1, 1, backend="cpu")
    nan
    """
    if backend != "cuda":
        return float("nan")
    return predict_yee(algorithm, order, size, nt, device_numbers(backend, order)).rate / 1e9


def _copy_kernel():
    from numba import cuda

    @cuda.jit
    def copy(src, dst):
        # four coalesced elements per thread, loads issued before stores
        i = cuda.blockIdx.x * cuda.blockDim.x * 4 + cuda.threadIdx.x
        step = cuda.blockDim.x
        n = src.size
        if i + 3 * step < n:
            a = src[i]
            b = src[i + step]
            c = src[i + 2 * step]
            d = src[i + 3 * step]
            dst[i] = a
            dst[i + step] = b
            dst[i + 2 * step] = c
            dst[i + 3 * step] = d
        else:
            for j in range(4):
                if i + j * step < n:
                    dst[i + j * step] = src[i + j * step]

    return copy


def compile_only(order: int, size: int, max_registers: int | None = None,
                 yz: tuple[int, int] | None = None, left_from_memory: bool = False,
                 pipelined: bool | None = None) -> dict:
    """Build and run the kernels of one configuration on a small grid: fills the disk cache.

    With ``yz = (ny, nz)`` the grid is ``(4 R + 8, ny, nz)`` and the sweep is
    specialised for it (the same kernel a benchmark on ``(nx, ny, nz)`` uses).
    """
    import numpy as np

    from diamondlab.engine.backends.cuda import CUDABackend
    from diamondlab.kernels.cuda import kernel_resources
    from diamondlab.numerics import WaveParameters

    radius = order // 2 * size
    shape = (4 * radius + 8, *yz) if yz else (2 * radius + 8, 2 * radius + 8, 64)
    b = CUDABackend(WaveParameters(order=order), shape, size, 4, max_registers=max_registers,
                    specialize=bool(yz), left_from_memory=left_from_memory, pipelined=pipelined)
    b.set_fields(np.ones(shape, np.float32), np.ones(shape, np.float32))
    b.sweep(4)
    b.step(1)
    b.synchronize()
    return {"sweep": b.resources(), "stepwise": kernel_resources(b.kernels.last_stepwise_kernel)}


def benchmark(shape=(512, 2048, 256), orders=(2, 4, 6, 8), nts=(8, 16, 32), steps: int = 64,
              repeats: int = 5, sizes: dict | None = None, maxregs=(None,),
              specialize=(False,), left=(False,), pipelined=(None,), bands=(None,),
              chunks=(None,), log=print) -> list[dict]:
    """Measure stepwise and DiamondTorre rates on the current CUDA device; one dict per run.

    Every combination of ``sizes`` (per order), ``specialize``, ``left``,
    ``pipelined`` (tier-level waits), ``bands`` (launch order of pipelined
    sweeps: 0 stage by stage, else diagonal bands of that many torres),
    ``chunks`` (tiers between two waits of a pipelined sweep) (None: the
    backend's default for the three),
    ``maxregs`` and ``nts`` is timed.
    """
    import numpy as np

    from diamondlab.engine.backends.cuda import CUDABackend
    from diamondlab.engine.measure.launchmodel import cuda_backend_efficiency
    from diamondlab.kernels.cuda import SUPPORTED_SIZES, kernel_resources
    from diamondlab.numerics import WaveParameters

    memcpy = measure_copy_bandwidth(kernel=False)
    bandwidth = max(measure_copy_bandwidth(), memcpy)
    arch = devices.current_gpu() or devices.H100
    device = DeviceNumbers(arch.name, bandwidth, arch.fp32_rate)
    log(f"{arch.name}: copy bandwidth {bandwidth / 1e12:.3f} TB/s (cuMemcpyDtoD {memcpy / 1e12:.3f}); "
        f"shape {shape}; "
        f"{2 * 4 * int(np.prod(shape)) / 2**30:.2f} GiB in two fields")
    init = np.random.default_rng(1).standard_normal(shape, dtype=np.float32)
    sizes = sizes or SUPPORTED_SIZES
    results = []
    for order in orders:
        params = WaveParameters(order=order)
        backend = None
        configs = itertools.product(sizes[order], specialize, left, pipelined, maxregs, nts, bands, chunks)
        for size, spec, lfm, pipe, maxreg, nt, band, chunk in configs:
            if pipe is False and (band or chunk not in (None, 1)) or (chunk or 1) > nt:
                continue
            t0 = time.perf_counter()
            backend = None  # free the last grid before the next one is allocated
            try:
                backend = CUDABackend(params, shape, size, nt, max_registers=maxreg, specialize=spec,
                                      left_from_memory=lfm, pipelined=pipe, band=band, chunk=chunk)
            except ValueError as err:  # e.g. a band for a pair that is not pipelined by default
                log(f"NO={order} DTS={size} Nt={nt} band={band} chunk={chunk}: skipped ({err})")
                continue
            backend.set_fields(init, init)
            timing = measure_backend(backend, "diamondtorre", steps, repeats)
            rate = timing.rate
            res = backend.resources() or {}
            model = predict("diamondtorre", order, size, nt, device)
            slots, launch = cuda_backend_efficiency(backend)
            results.append({"algorithm": "diamondtorre", "order": order, "size": size, "nt": nt,
                            "max_registers": maxreg, "specialize": backend.specialized,
                            "left_from_memory": lfm, "pipelined": backend.pipelined,
                            "band": backend.band, "chunk": backend.chunk,
                            "rate": rate, "times": list(timing.seconds), "model": model.rate,
                            "fraction": rate / model.rate, "slots": slots, "launch": launch,
                            "setup_s": time.perf_counter() - t0, **res})
            log(f"NO={order} DTS={size} Nt={nt} cap={res.get('registers')} "
                f"spec={int(backend.specialized)} lfm={int(lfm)} pipe={int(backend.pipelined)} "
                f"band={backend.band} chunk={backend.chunk}: "
                f"DT {rate / 1e9:7.1f} G/s "
                f"(model {model.rate / 1e9:.0f}, {rate / model.rate:.0%}; launch {launch:.0%} of "
                f"{slots} slots, {rate / model.rate / launch:.0%} of model x launch) regs "
                f"{res.get('registers')} local {res.get('local_bytes')}")
        if backend is None:  # every DiamondTorre configuration was skipped: time stepwise alone
            backend = CUDABackend(params, shape, sizes[order][0], max(nts), pipelined=False)
            backend.set_fields(init, init)
        timing = measure_backend(backend, "stepwise", min(steps, 32), repeats)
        rate = timing.rate
        model = predict("stepwise", order, device=device)
        res = kernel_resources(backend.kernels.last_stepwise_kernel)
        results.append({"algorithm": "stepwise", "order": order, "rate": rate, "times": list(timing.seconds),
                        "model": model.rate, "fraction": rate / model.rate, **res})
        log(f"NO={order} stepwise {rate / 1e9:7.1f} G/s (ceiling {model.rate / 1e9:.0f}) "
            f"regs {res['registers']}")
        del backend
    for row in results:
        row["bandwidth"] = bandwidth
    return results
