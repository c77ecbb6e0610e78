"""SmartChain Fig. 8: latency benefit of SmartChain vs the two strawmen on the three
Fig. 7 topologies with 5-20 random action dependencies (1000 graphs per point).

A thin caller of `tandem reproduce smartchain_fig8` (tandem/reproduce/exp_smartchain.py).
Exit status 1 if SmartChain (K = n/2) loses to a strawman on any instance.

    tandem bench smartchain_fig8 [--out DIR] [--quick]
"""

import sys

from tandem.reproduce.bench import bench_main

if __name__ == "__main__":
    sys.exit(bench_main(["smartchain_fig8"], __doc__))
