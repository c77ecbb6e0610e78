"""UNO Fig. 16 as a prediction: the UNO ILP on the Fig. 15 DPI graph, PCIe budget T swept.

A thin caller of `tandem reproduce uno_fig16` (tandem/reproduce/exp_uno.py): host and
sNIC cores and PCIe use per T, the exact fast method checked against the MILP.
Writes DIR/uno_fig16/{data.csv,figure.png,summary.json}.

    tandem bench uno_fig16 [--out DIR] [--quick]
"""

import sys

from tandem.reproduce.bench import bench_main

if __name__ == "__main__":
    sys.exit(bench_main(["uno_fig16"], __doc__))
