"""UNO Fig. 2 predicted by the emulator: no offload vs full offload, 1-3 chained NFs.

A thin caller of `tandem reproduce uno_fig2` (tandem/reproduce/exp_uno.py): the PCIe
link is the device-level TLP model (nothing fitted to Fig. 2), so every UNO number
printed is a prediction. Writes DIR/uno_fig2/{data.csv,figure.png,summary.json}.

    tandem bench uno_fig2 [--out DIR] [--quick]
"""

import sys

from tandem.reproduce.bench import bench_main

if __name__ == "__main__":
    sys.exit(bench_main(["uno_fig2"], __doc__))
