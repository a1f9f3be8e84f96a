"""The ghost-row exchange of MPI slabs: through host memory, or from GPU to GPU over CUDA IPC.

Contract
--------
An exchange moves, once per sweep, the rows each rank owns to the ranks
whose ghost rows they are (every state array: both levels of the acoustic
equation, Maxwell's fields, currents and ``psi``; rows along the equation's
split axis), given as ``sends`` and ``recvs``: ``[(rank, (lo, hi)), ...]``
in the slab's own row numbers.  Every rank calls
:meth:`exchange` at the same point of the run (it is collective over the
neighbours).  Two paths (``halo=`` names them, ``description`` says which ran):

- :class:`HostHalo` (``"host"``): ``backend.get_rows`` into host memory,
  non-blocking MPI point to point, ``backend.set_rows``.  Any backend, any
  placement of ranks (CPU ranks, GPUs across nodes, an MPI that is not
  CUDA-aware).
- :class:`PeerHalo` (``"peer"``): GPU ranks of one node.  Each rank
  allocates two device inboxes per neighbour (sweeps alternate between
  them), hands their CUDA IPC handles to the neighbour once, and per sweep
  packs its rows on its GPU and copies them straight into the neighbour's
  inbox (device to device: NVLink or PCIe peer to peer), each neighbour's
  copy on a stream of its own (two links at once).  No host waits for a GPU:
  after each copy the rank records a CUDA IPC event (two a neighbour, by
  the sweep's parity) and sends a one-integer MPI message saying it is
  recorded; the neighbour's kernel stream waits on that event before it
  unpacks, and the host goes on queueing.  The backend's kernels (the
  sweeps, :meth:`pack_rows`, :meth:`unpack_rows`) run on the default
  stream, with which the copy streams are ordered: a pack follows the last
  sweep, the next unpack follows this rank's copies.  The inbox and the
  event of parity ``p`` are used again two sweeps later, after the
  neighbour's message of the sweep between, which it sent once its stream
  was made to wait for this rank's copy of that sweep, which follows this
  rank's unpack of the inbox (:meth:`PeerHalo.refit` sizes the boxes anew
  where the physics adds state rows: a Drude current, a CPML's ``psi``).
  Used when every neighbour is on this node and the GPUs can reach each
  other.

:func:`connect` picks the path (``"auto"``: peer where it works, else host)
and agrees it on every rank.
"""

from __future__ import annotations

import weakref

import numpy as np

__all__ = ["HALO_CHOICES", "HostHalo", "PeerHalo", "connect"]

#: The values of ``halo=`` (Simulation, RunPlan, ``--halo``).
HALO_CHOICES = ("auto", "host", "peer")

_TAG_ROWS, _TAG_READY = 7, 8
_GRANULE = 2**21 // 4  # floats in the 2 MiB granule of CUDA IPC


def _handle_bytes(handle) -> bytes:
    """The 64 bytes of a CUDA IPC event handle (``cuda.bindings``), to send to another process."""
    import ctypes

    return ctypes.string_at(handle.getPtr(), 64)


def _event_handle(data: bytes):
    """A CUDA IPC event handle from its 64 bytes (:func:`_handle_bytes`)."""
    import ctypes

    from numba.cuda.cudadrv.driver import binding

    handle = binding.CUipcEventHandle()
    ctypes.memmove(handle.getPtr(), data, 64)
    return handle


class _Signals:
    """The exchange's CUDA IPC events, two a neighbour (by the sweep's parity): ``own[q]``, this rank's,
    recorded after its copy into the inbox of ``q``; ``opened[q]``, those of the neighbour ``q``, recorded
    after its copy into this rank's inbox (collective: built on every rank at once)."""

    def __init__(self, comm, sends, recvs):
        from numba.cuda.cudadrv.driver import binding, driver

        kinds = binding.CUevent_flags
        flags = int(kinds.CU_EVENT_INTERPROCESS) | int(kinds.CU_EVENT_DISABLE_TIMING)
        self.own = {q: [driver.cuEventCreate(flags) for _ in range(2)] for q in sends}
        handles = [None] * comm.size
        for q, events in self.own.items():
            handles[q] = [_handle_bytes(driver.cuIpcGetEventHandle(e)) for e in events]
        received = comm.alltoall(handles)
        self.opened = {q: [driver.cuIpcOpenEventHandle(_event_handle(b)) for b in received[q]] for q in recvs}


def _close(handles, signals) -> None:
    """Let go of the neighbours' inboxes and events, once this GPU's copies into them have run (an
    interpreter that is ending may have let go of the GPU first: nothing is left to free then)."""
    from numba import cuda
    from numba.cuda.cudadrv.driver import CudaAPIError, driver

    try:
        cuda.synchronize()
        for events in signals.opened.values():
            for event in events:
                driver.cuEventDestroy(event)
        for handle in handles:
            handle.close()
    except CudaAPIError:
        return


def _destroy(signals) -> None:
    """This rank's events, once no neighbour waits on them."""
    from numba.cuda.cudadrv.driver import CudaAPIError, driver

    try:
        for events in signals.own.values():
            for event in events:
                driver.cuEventDestroy(event)
    except CudaAPIError:
        return


class HostHalo:
    """Ghost rows through host memory and MPI point to point (see the module contract)."""

    description = "host staging (MPI point to point)"

    def __init__(self, backend, comm, sends, recvs):
        self.backend, self.comm, self.sends, self.recvs = backend, comm, sends, recvs
        self._inbox: dict[int, np.ndarray] = {}

    def _box(self, q: int, lo: int, hi: int) -> np.ndarray:
        """The inbox of rows ``[lo, hi)`` from rank ``q``, flat, as large as the state's rows (which the
        physics sets: a Drude current, a CPML's ``psi``)."""
        size = self.backend.rows_size(lo, hi)
        if q not in self._inbox or self._inbox[q].size != size:
            self._inbox[q] = np.empty(size, dtype=np.float32)
        return self._inbox[q]

    def refit(self) -> HostHalo:
        """Itself: its inboxes follow the state's rows at every exchange."""
        return self

    def exchange(self) -> None:
        from mpi4py import MPI

        requests = [self.comm.Irecv(self._box(q, *rows), source=q, tag=_TAG_ROWS) for q, rows in self.recvs]
        sent = [self.backend.get_rows(lo, hi) for _, (lo, hi) in self.sends]  # alive until the waits end
        requests += [self.comm.Isend(rows, dest=q, tag=_TAG_ROWS)
                     for (q, _), rows in zip(self.sends, sent, strict=True)]
        MPI.Request.Waitall(requests)
        for q, (lo, hi) in self.recvs:
            self.backend.set_rows(lo, hi, self._inbox[q])


class PeerHalo:
    """Ghost rows from GPU to GPU through CUDA IPC inboxes, ordered by CUDA IPC events (see the module
    contract).

    Build it with :meth:`open`, which returns None (on every rank) where some
    pair of neighbours cannot use it.
    """

    description = "CUDA IPC, GPU to GPU (no host copy, no host wait)"

    def __init__(self, backend, comm, sends, recvs, inboxes, remote, outboxes, incoming, signals):
        from numba import cuda

        self.backend, self.comm, self.sends, self.recvs = backend, comm, sends, recvs
        self._incoming = incoming  # floats of the rows each neighbour sends here
        self._inboxes, self._remote, self._outboxes = inboxes, remote, outboxes
        self._signals = signals
        self._streams = {q: cuda.stream() for q, _ in sends}  # a copy a neighbour, at once
        self._parity = 0
        self._ready = {q: np.zeros(1, dtype=np.int64) for q, _ in recvs}
        self._token = np.zeros(1, dtype=np.int64)

    @classmethod
    def open(cls, backend, comm, sends, recvs) -> PeerHalo | None:
        """Allocate the inboxes and the events and open the neighbours' (collective); None on every rank
        where any neighbour is on another node or its GPU is not reachable from this one."""
        from mpi4py import MPI

        from diamondlab.kernels.cuda import simulator_enabled

        usable = backend.PEER_HALO and not simulator_enabled()
        nodes = comm.allgather(MPI.Get_processor_name())
        usable = usable and all(nodes[q] == nodes[comm.rank] for q, _ in (*sends, *recvs))
        if not comm.allreduce(usable, op=MPI.LAND):
            return None
        from numba import cuda

        # floats of every state array's rows (a CPML layer's psi makes rows differ in size)
        incoming = {q: backend.rows_size(lo, hi) for q, (lo, hi) in recvs}
        outgoing = {q: backend.rows_size(lo, hi) for q, (lo, hi) in sends}
        # one allocation per neighbour holds both inboxes, whole IPC granules of 2 MiB: the driver may
        # place small allocations in one region, which a process can open only once
        inboxes = {q: cuda.device_array((2, -(-incoming[q] // _GRANULE) * _GRANULE), dtype=np.float32)
                   for q, _ in recvs}
        handles = [None] * comm.size
        for q, boxes in inboxes.items():
            handles[q] = boxes.get_ipc_handle()
        received = comm.alltoall(handles)  # what each sender q gets: the handle of its neighbour's inboxes
        context = cuda.current_context()
        reachable = all(received[q]._ipc_handle.can_access_peer(context) for q, _ in sends)
        if not comm.allreduce(reachable, op=MPI.LAND):
            return None
        remote = {q: received[q].open() for q, _ in sends}
        outboxes = {q: cuda.device_array(outgoing[q], dtype=np.float32) for q, _ in sends}
        signals = _Signals(comm, [q for q, _ in sends], [q for q, _ in recvs])
        comm.Barrier()
        halo = cls(backend, comm, sends, recvs, inboxes, remote, outboxes, incoming, signals)
        # unmap the neighbours' inboxes and events when the halo goes (or at refit), then free its own events
        halo._unmap = weakref.finalize(halo, _close, [received[q] for q, _ in sends], signals)
        halo._free = weakref.finalize(halo, _destroy, signals)
        return halo

    def refit(self) -> PeerHalo | HostHalo:
        """After the physics changed the state's rows (a Drude current, a CPML's ``psi``): itself where every
        rank's boxes still fit, else new ones (collective: every rank calls it, after ``set_physics``)."""
        from mpi4py import MPI

        sizes = [(self.backend.rows_size(lo, hi), self._incoming[q]) for q, (lo, hi) in self.recvs]
        sizes += [(self.backend.rows_size(lo, hi), self._outboxes[q].size) for q, (lo, hi) in self.sends]
        if not self.comm.allreduce(any(a != b for a, b in sizes), op=MPI.LOR):
            return self
        self._unmap()  # every rank lets go of its neighbours' inboxes and events before any frees its own
        self.comm.Barrier()
        self._free()
        return (PeerHalo.open(self.backend, self.comm, self.sends, self.recvs)
                or HostHalo(self.backend, self.comm, self.sends, self.recvs))

    def exchange(self) -> None:
        from mpi4py import MPI
        from numba.cuda.cudadrv.driver import driver

        p = self._parity
        for q, (lo, hi) in self.sends:  # on the kernels' stream: after the last sweep
            self.backend.pack_rows(lo, hi, self._outboxes[q])
        for q, _ in self.sends:  # after the packs (the default stream orders the copy streams)
            stream = self._streams[q]
            self._remote[q][p, :self._outboxes[q].size].copy_to_device(self._outboxes[q], stream=stream)
            driver.cuEventRecord(self._signals.own[q][p], stream.handle)
        # the messages say only that the events are recorded: no host waits for a GPU
        requests = [self.comm.Irecv(self._ready[q], source=q, tag=_TAG_READY) for q, _ in self.recvs]
        requests += [self.comm.Isend(self._token, dest=q, tag=_TAG_READY) for q, _ in self.sends]
        MPI.Request.Waitall(requests)
        for q, (lo, hi) in self.recvs:
            driver.cuStreamWaitEvent(0, self._signals.opened[q][p], 0)  # the kernels' stream: the copy is in
            self.backend.unpack_rows(lo, hi, self._inboxes[q][p, :self._incoming[q]])
        self._parity = 1 - p


def connect(backend, comm, sends, recvs, halo: str = "auto"):
    """The exchange for this rank (collective): ``halo`` one of :data:`HALO_CHOICES` (the run plan
    checked it)."""
    if halo != "host":
        peer = PeerHalo.open(backend, comm, sends, recvs)
        if peer is not None:
            return peer
        if halo == "peer":
            raise ValueError("halo='peer' needs GPU ranks on one node whose GPUs reach each other "
                             "(CUDA IPC); use halo='host' or 'auto'")
    return HostHalo(backend, comm, sends, recvs)
