"""OVS-POF-TC Tables II and III: MILP vs the paper's heuristics vs our exact algorithm.

A thin caller of `tandem reproduce pof_table2 pof_table3` (tandem/reproduce/exp_pof.py,
``table_rows``): §VI's random instances (M^sn = 4,800, 64-1024 B packets, 100-40,000
Mbps), objective and running time of each method per size, the MILP up to 100,000
POF-FTs. Exit status 1 if the exact objective is above another method's anywhere.

    tandem bench pof_tables [--out DIR] [--quick]
"""

import sys

from tandem.reproduce.bench import bench_main

if __name__ == "__main__":
    sys.exit(bench_main(["pof_table2", "pof_table3"], __doc__))
