"""What the compiler made of the Maxwell CUDA stepwise kernel (registers, local and shared memory).

    python .ci/yee-probe.py 2        # one 256^3 step at order 2, then the kernel's resources
    ncu --kernel-name regex:stepwise --launch-count 1 --section SpeedOfLight python .ci/yee-probe.py 2
"""

import sys

from diamondlab import Simulation

order = int(sys.argv[1]) if len(sys.argv) > 1 else 2
sim = Simulation((256, 256, 256), order, equation="maxwell", backend="cuda", algorithm="stepwise")
sim.run(2)
sim.backend.synchronize()
for name in ("stepwise", "diamondtorre"):
    for overload in getattr(sim.backend.kernels, name).overloads.values():
        print(name, "registers", overload.regs_per_thread, "local bytes", overload.local_mem_per_thread,
              "shared bytes", overload.shared_mem_per_block)
