"""The total-field/scattered-field (TFSF) plane wave: its corrections as source points, its 1D incident grid.

Contract
--------
A :class:`~diamondlab.maxwell.sources.PlaneWave` splits the grid into the
total-field box (every field point whose staggered position lies in
``[x0, x1] x [y0, y1] x [z0, z1]``) and the scattered field outside it.
Where a half step's stencil crosses the box's surface, the update reads a
point of the other region; the incident field there is added (a total point
reading a scattered one) or taken away (a scattered point reading a total
one).  Each correction is additive and linear in the incident field, so it
is a source point: a component of a cell, after its half-step update, adds
``-dh sum w c E_inc^n`` (an ``H`` point) or ``cb sum w c H_inc^{n+1/2}``
(an ``E`` point), ``w`` the stencil's weight and ``c = +-1`` the curl's
sign and the direction of the crossing.  Points with the same sum share one
row of samples (:meth:`TFSF.samples`): a few rows per cell of the box's
length along the wave, not one per point.

The incident field comes from a 1D Yee grid along the propagation axis
with the 3D scheme's order, ``dt``, weights and the background medium's
coefficients (float64): a plane wave along an axis obeys the same 1D
recurrence on the 3D grid, so the two agree to float32 rounding and nothing
leaks out of the box but that rounding.  The 1D grid is driven by a hard
source ``E = amplitude * waveform(t)`` :data:`MARGIN` cells before the box's
entry face and ends in CPML layers of :data:`PML_1D` cells; it is advanced
as samples are asked for (from step 0 again when an earlier step is asked).

On a periodic axis (``periodic``) across the wave the box must span the
whole axis (``lo <= 0`` and ``hi >= n - 1`` there): every point along it is
then in the total field and the faces normal to it carry no corrections
(a plane wave through a periodic cell, the Fresnel setup).  A wave along a
periodic axis is refused.  NumPy, and two Numba loops: the 1D grid's steps
(:func:`_stepper`: the NumPy expressions in the same order, the same values;
4 to 7 us a step against 19 to 26 us with a NumPy call an operation, on a
2-core VM) and the rows' samples from their nonzero weights
(:func:`_row_sums`); a host round of 4 steps of the bench's scene at 128^3
asks for its samples in 32-36 us instead of 123-133 (BENCHMARKS.md).
"""

from __future__ import annotations

import functools

import numpy as np

from diamondlab.maxwell.boundaries import CPML
from diamondlab.maxwell.materials import VACUUM, Drude, IndexArray, PerfectConductor, _coefficients
from diamondlab.maxwell.scheme import YEE_POSITIONS
from diamondlab.maxwell.sources import COMPONENTS

__all__ = ["MARGIN", "PML_1D", "TFSF", "tfsf_bounds"]

#: cells between the 1D grid's hard source and the box's entry face
MARGIN = 4
#: CPML cells at each end of the 1D grid
PML_1D = 32

# staggered offsets of Ex, Ey, Ez, Hx, Hy, Hz
_OFFSETS = np.array([YEE_POSITIONS[c] for c in COMPONENTS])


def tfsf_bounds(shape, reach: int, pml) -> list[tuple[int, int]]:
    """Per axis, the range ``[first, last]`` of the box's planes: its corrections reach ``reach`` cells
    beyond it and must stay off the outer planes and out of the CPML (``pml``: its width, or one per axis).

    >>> tfsf_bounds((40, 20, 20), 2, (8, 0, 0))
    [(10, 29), (3, 16), (3, 16)]
    """
    widths = (pml,) * 3 if isinstance(pml, (int, np.integer)) else tuple(pml)
    return [(max(w, 1) + reach, n - 1 - max(w, 1) - reach) for n, w in zip(shape, widths, strict=True)]


def _medium_indices(objects, component: int, cells: np.ndarray, media: list) -> np.ndarray:
    """Index into ``media`` (grown as found) of ``E`` component ``component``'s medium at ``cells``
    (``(N, 3)``), as :func:`~diamondlab.maxwell.materials.material_table` rasterises it."""

    def slot(medium) -> int:
        if medium not in media:
            media.append(medium)
        return media.index(medium)

    pos = cells.astype(np.float64)
    pos[:, component] += 0.5
    out = np.full(len(cells), slot(VACUUM), dtype=np.int64)
    for obj in objects:
        if isinstance(obj, IndexArray):
            lut = np.array([slot(m) for m in obj.media], dtype=np.int64)
            out[:] = lut[obj.index[cells[:, 0], cells[:, 1], cells[:, 2]]]
        else:
            inside = np.broadcast_to(np.asarray(obj.contains(pos[:, 0], pos[:, 1], pos[:, 2])), out.shape)
            out[inside] = slot(obj.medium)
    return out


@functools.cache
def _stepper():
    """``steps(e, h, psi_e, psi_h, b_h, a_h, b_e, a_e, w, dh, ca, cb, source, drive, k0, e_out, h_out)``: a
    step of the 1D grid for each row of the outputs: ``e_out[s]`` takes E on the window from ``k0`` before
    the step, ``h_out[s]`` H after its half step, then ``e[M + source] = drive[s]`` (the hard source of the
    next step).  ``dh`` and ``cb`` carry the curl's sign.  Each value is computed as the NumPy expressions
    of :meth:`TFSF._advance_numpy` compute it (the same operations in the same order, no fused products), so
    the samples are those of NumPy."""
    from numba import njit

    @njit(cache=True, nogil=True)
    def steps(e, h, psi_e, psi_h, b_h, a_h, b_e, a_e, w, dh, ca, cb, source, drive, k0, e_out, h_out):
        M = w.size  # noqa: N806 - the reach
        n = psi_e.size
        nwin = e_out.shape[1]
        for s in range(e_out.shape[0]):
            for i in range(nwin):
                e_out[s, i] = e[k0 + i]
            for i in range(n):  # forward difference at H points
                d = 0.0
                for m in range(1, M + 1):
                    d += w[m - 1] * (e[M + m + i] - e[M - m + 1 + i])
                psi_h[i] = b_h[i] * psi_h[i] + a_h[i] * d
                h[M + i] -= dh * (d + psi_h[i])
            for i in range(nwin):
                h_out[s, i] = h[k0 + i]
            for i in range(n):  # backward difference at E points
                d = 0.0
                for m in range(1, M + 1):
                    d += w[m - 1] * (h[M + m - 1 + i] - h[M - m + i])
                psi_e[i] = b_e[i] * psi_e[i] + a_e[i] * d
                e[M + i] = ca * e[M + i] + cb * (d + psi_e[i])
            e[M + source] = drive[s]

    return steps


@functools.cache
def _row_sums():
    """``sums(row, read, col, weight, e_inc, h_inc, out)``: ``out[row[t], s] += weight[t] * inc[s, col[t]]``
    for each term ``t`` (``inc``: ``e_inc`` where ``read[t]`` is 0, else ``h_inc``), in the terms' order: the
    rows' samples from their few nonzero weights, not a product with the whole window."""
    from numba import njit

    @njit(cache=True, nogil=True)
    def sums(row, read, col, weight, e_inc, h_inc, out):
        for t in range(row.size):
            inc = e_inc if read[t] == 0 else h_inc
            for s in range(out.shape[1]):
                out[row[t], s] += weight[t] * inc[s, col[t]]

    return sums


class TFSF:
    """The corrections and the 1D incident grid of one plane wave ``wave`` on a grid of ``shape``
    (``params``: the run's :class:`~diamondlab.maxwell.scheme.YeeParameters`).  ``name`` prefixes errors."""

    def __init__(self, wave, shape, params, materials=(), pml=0, name: str = "sources[0]",
                 periodic: str = ""):
        self.wave, self.params = wave, params
        m_reach = params.reach
        lo, hi = np.array(wave.box[0]), np.array(wave.box[1])
        bounds = tfsf_bounds(shape, m_reach, pml)
        self.periodic = periodic = "".join(a for a in "xyz" if a in (periodic or ""))
        if "xyz"[wave.axis] in periodic:
            raise ValueError(f"{name}: the PlaneWave travels along {wave.direction!r}, a periodic axis: it "
                             "would wrap onto itself; send it along an axis that is not periodic")
        for a in periodic:
            i, n = "xyz".index(a), shape["xyz".index(a)]
            if lo[i] > 0 or hi[i] < n - 1:
                raise ValueError(f"{name}: the PlaneWave box {wave.box} must span the whole periodic axis "
                                 f"{a} ({a}0 <= 0 and {a}1 >= {n - 1}): a plane wave fills a periodic cell")
            bounds[i] = (lo[i], hi[i])  # the whole axis: no faces there
        widths = (pml,) * 3 if isinstance(pml, (int, np.integer)) else tuple(pml)
        layer = f"{widths[0]}" if len(set(widths)) == 1 else f"{', '.join(map(str, widths))} (x, y, z)"
        if any(not (a <= l_ and h <= b) for (a, b), l_, h in zip(bounds, lo, hi, strict=True)):
            ranges = ", ".join(f"{'xyz'[i]} in [{a}, {b}]" for i, (a, b) in enumerate(bounds))
            raise ValueError(f"{name}: the PlaneWave box {wave.box} must lie within {ranges} on the grid "
                             f"{tuple(shape)} (its TFSF corrections reach {m_reach} cells beyond the box and "
                             f"must stay off the outer planes and out of the CPML of {layer} cells)")
        self._shape = tuple(shape)
        w = params.weights.astype(np.float64)  # the kernels' float32 weights, exactly
        a, p = wave.axis, wave.polarization_axis
        q = 3 - a - p
        self.axis, self.e_comp, self.h_comp = a, p, 3 + q
        # every correction: (cell, component, level (0: reads E_inc, 1: reads H_inc), {axial index: weight})
        entries = []
        for c in range(3):  # H_c reads E_p, E_c reads H_q, along the third axis
            for field, src, reads in ((1, p, 0), (0, q, 1)):  # field 1: an H point, 0: an E point
                if c == src or "xyz"[3 - c - src] in periodic:  # a periodic axis has no faces
                    continue
                b = 3 - c - src
                sgn = 1.0 if src == (c + 2) % 3 else -1.0  # (curl F)_c = d_{c+1} F_{c+2} - d_{c+2} F_{c+1}
                comp = c + 3 * field
                qcomp = src + 3 * (1 - field)
                entries += self._sheets(comp, qcomp, b, sgn, field, lo, hi, w, reads)
        self._build(entries, materials, shape, name)

    def _sheets(self, comp, qcomp, b, sgn, is_h, lo, hi, w, reads):
        """Corrections of ``comp`` (points of the planes across the faces normal to ``b``) reading ``qcomp``
        along axis ``b``: ``(cells (N, 3), comp, reads, [(axial index array, weight)])``."""
        M = len(w)  # noqa: N806 - the scheme's reach, as in the kernels
        off, qoff = _OFFSETS[comp], _OFFSETS[qcomp]
        t_axes = [t for t in range(3) if t != b]
        grids = []
        for t in t_axes:  # transverse storage indices whose positions lie in the box
            i = np.arange(lo[t] - 1, hi[t] + 2)
            if "xyz"[t] in self.periodic:  # the whole periodic axis
                grids.append(np.arange(self._shape[t]))
                continue
            grids.append(i[(i + off[t] >= lo[t]) & (i + off[t] <= hi[t])])
        out = []
        near = sorted({i for face in (lo[b], hi[b]) for i in range(face - M - 1, face + M + 2)})
        for i_b in near:
            inside_p = lo[b] <= i_b + off[b] <= hi[b]
            terms = []  # (storage offset along b of Q, weight)
            for m in range(1, M + 1):
                pair = ((m, 1), (1 - m, -1)) if is_h else ((m - 1, 1), (-m, -1))
                for d, s in pair:
                    j = i_b + d
                    if (lo[b] <= j + qoff[b] <= hi[b]) != inside_p:
                        terms.append((d, sgn * s * w[m - 1] * (1.0 if inside_p else -1.0)))
            if not terms:
                continue
            u, v = np.meshgrid(*grids, indexing="ij")
            cells = np.zeros((u.size, 3), dtype=np.int64)
            cells[:, t_axes[0]], cells[:, t_axes[1]], cells[:, b] = u.ravel(), v.ravel(), i_b
            axial = [(cells[:, self.axis] + (d if b == self.axis else 0), wt) for d, wt in terms]
            out.append((cells, comp, reads, axial))
        return out

    def _build(self, entries, materials, shape, name):
        """Check the medium, dedupe the rows, set up the 1D grid."""
        media: list = []
        used = set()
        for cells, comp, _, _ in entries:
            used |= set(np.unique(_medium_indices(materials, comp % 3, cells, media)).tolist())
            if len(used) > 1:
                raise ValueError(f"{name}: the PlaneWave box's faces (and {self.params.reach} cells beyond) "
                                 "must lie in one medium: the incident field is that of a homogeneous "
                                 "background; "
                                 "keep objects away from the box's surface")
        medium = media[used.pop()] if used else VACUUM
        if isinstance(medium, PerfectConductor) or (isinstance(medium, Drude) and medium.wp > 0):
            raise ValueError(f"{name}: the PlaneWave box's faces lie in {medium!r}: the background must be a "
                             "dielectric (or vacuum)")
        coef = np.array(_coefficients(medium, self.params.dt), dtype=np.float32).astype(np.float64)
        self.ca, self.cb, self.dh = coef[0], coef[1], coef[4]
        rows: dict = {}
        points = []
        for cells, comp, reads, axial in entries:
            scale = -self.dh if comp >= 3 else self.cb
            keys = np.stack([a for a, _ in axial], axis=1)
            weights = tuple(scale * wt for _, wt in axial)
            for n in range(len(cells)):
                key = (reads, tuple(keys[n].tolist()), weights)
                row = rows.setdefault(key, len(rows))
                points.append((tuple(int(v) for v in cells[n]), comp, row))
        self.points = points
        self.nrows = len(rows)
        lo, hi = self.wave.box[0][self.axis], self.wave.box[1][self.axis]
        M = self.params.reach  # noqa: N806
        self.window0 = lo - M - 2  # the axial indices the rows read: window0 .. window0 + nwin - 1
        nwin = hi - lo + 2 * M + 5
        self._matrix = np.zeros((2, self.nrows, nwin))
        for (reads, keys, weights), row in rows.items():
            for k, wt in zip(keys, weights, strict=True):
                self._matrix[reads, row, k - self.window0] += wt
        # its nonzero weights, by row and then window index (a row reads E_inc or H_inc, not both)
        read, row, col = np.nonzero(self._matrix)
        order = np.lexsort((col, row))
        self._terms = (row[order], read[order], col[order], self._matrix[read, row, col][order])
        # the 1D grid: axial indices u0 .. u0 + n - 1, E at u, H at u + 1/2
        self.u0 = lo - MARGIN - PML_1D - 2
        n = hi + MARGIN + PML_1D + 3 - self.u0
        self.source = lo - MARGIN - self.u0 if self.wave.sign > 0 else hi + MARGIN - self.u0
        prof = CPML(PML_1D).profiles(n, self.params.dt)
        self._pml = [x.astype(np.float64) for x in (prof.b_h, prof.a_h, prof.b_e, prof.a_e)]
        a, p, q = self.axis, self.e_comp, self.h_comp - 3
        self.sign_h = 1.0 if p == (q + 2) % 3 else -1.0  # (curl E)_q = sign_h d_a E_p
        self.sign_e = 1.0 if q == (p + 2) % 3 else -1.0  # (curl H)_p = sign_e d_a H_q
        del a
        self._n1d = n
        self._weights = self.params.weights.astype(np.float64)  # asked once: the property computes them
        self.rewind()

    def rewind(self) -> None:
        """The 1D grid back to step 0 (at rest but for its source)."""
        n, M = self._n1d, self.params.reach  # noqa: N806
        self.e = np.zeros(n + 2 * M)  # padded by M zeros on each side
        self.h = np.zeros(n + 2 * M)
        self.psi_e = np.zeros(n)
        self.psi_h = np.zeros(n)
        self.step = 0
        self._drive(0)

    def _drive(self, step: int) -> None:
        M = self.params.reach  # noqa: N806
        self.e[M + self.source] = self.wave.amplitude * float(self.wave.waveform(step * self.params.dt))

    def _advance_steps(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``count`` steps: ``(E_inc^n, H_inc^{n+1/2})`` on the rows' window at each, ``(count, nwin)``."""
        M, nwin = self.params.reach, self._matrix.shape[2]  # noqa: N806
        e_out, h_out = np.empty((count, nwin)), np.empty((count, nwin))
        if count == 0:
            return e_out, h_out
        amplitude, dt = self.wave.amplitude, self.params.dt
        drive = np.array([amplitude * float(self.wave.waveform(k * dt))
                          for k in range(self.step + 1, self.step + count + 1)])
        b_h, a_h, b_e, a_e = self._pml
        _stepper()(self.e, self.h, self.psi_e, self.psi_h, b_h, a_h, b_e, a_e, self._weights,
                   self.dh * self.sign_h, self.ca, self.cb * self.sign_e, self.source, drive,
                   M + self.window0 - self.u0, e_out, h_out)
        self.step += count
        return e_out, h_out

    def _advance_numpy(self) -> tuple[np.ndarray, np.ndarray]:
        """One step in NumPy, one call an operation (what :func:`_stepper` computes, kept to check it):
        returns ``(E_inc^n, H_inc^{n+1/2})`` on the rows' window."""
        M, n, w = self.params.reach, self._n1d, self._weights  # noqa: N806
        e, h = self.e, self.h
        k0 = M + self.window0 - self.u0
        nwin = self._matrix.shape[2]
        e_now = e[k0:k0 + nwin].copy()
        d = np.zeros(n)
        for m in range(1, M + 1):  # forward difference at H points
            d += w[m - 1] * (e[M + m: M + m + n] - e[M - m + 1: M - m + 1 + n])
        b_h, a_h, b_e, a_e = self._pml
        self.psi_h = b_h * self.psi_h + a_h * d
        h[M:M + n] -= self.dh * self.sign_h * (d + self.psi_h)
        h_now = h[k0:k0 + nwin].copy()
        d = np.zeros(n)
        for m in range(1, M + 1):  # backward difference at E points
            d += w[m - 1] * (h[M + m - 1: M + m - 1 + n] - h[M - m: M - m + n])
        self.psi_e = b_e * self.psi_e + a_e * d
        e[M:M + n] = self.ca * e[M:M + n] + self.cb * self.sign_e * (d + self.psi_e)
        self.step += 1
        self._drive(self.step)
        return e_now, h_now

    def incident(self, first_step: int, height: int) -> tuple[np.ndarray, np.ndarray]:
        """``E_inc^n`` and ``H_inc^{n+1/2}`` on the window (axial indices from :attr:`window0`), each
        ``(height, nwin)`` float64, for the steps ``first_step ..``."""
        if first_step < self.step:
            self.rewind()
        while self.step < first_step:  # the window's history not kept: a thousand steps at a time
            self._advance_steps(min(first_step - self.step, 1024))
        return self._advance_steps(height)

    def samples(self, first_step: int, height: int) -> np.ndarray:
        """``(nrows, height)`` float64: what each row's points add after their half step at each step."""
        e_inc, h_inc = self.incident(first_step, height)
        out = np.zeros((self.nrows, height))
        _row_sums()(*self._terms, e_inc, h_inc, out)
        return out
