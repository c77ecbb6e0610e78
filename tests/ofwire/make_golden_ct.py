"""Write Tandem's own encoding of the connection-tracking flow mods of test_ofwire_ct.py
as golden/<name>.hex (that test checks Open vSwitch reads them as the same flows):
    .venv/bin/python tests/ofwire/make_golden_ct.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from test_ofwire_ct import CT_FLOW_MODS, GOLDEN  # noqa: E402

from tandem.rules import ofwire_msgs as M  # noqa: E402

for name, (xid, mod, _) in CT_FLOW_MODS.items():
    (GOLDEN / f"{name}.hex").write_text(M.encode_flow_mod(xid, mod).hex() + "\n")
print(f"wrote {len(CT_FLOW_MODS)} golden files to {GOLDEN}")
