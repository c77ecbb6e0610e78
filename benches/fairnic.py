"""FairNIC isolation in the emulator: Figs. 10 (cores), 11 (cache) and 12 (coprocessor).

A thin caller of `tandem reproduce fairnic_fig10 fairnic_fig11 fairnic_fig12`
(tandem/reproduce/exp_fairnic.py): throughput per tenant against packet size alone,
without and with isolation, and the KVS beside a cache thrasher.

    tandem bench fairnic [--out DIR] [--quick]
"""

import sys

from tandem.reproduce.bench import bench_main

if __name__ == "__main__":
    sys.exit(bench_main(["fairnic_fig10", "fairnic_fig11", "fairnic_fig12"], __doc__))
