"""Write Tandem's own encoding of the extension flow mods of test_ofwire_nx_golden.py
and test_ofwire_ct.py as golden/<name>.hex (those tests check Open vSwitch reads them
as the same flows):
    .venv/bin/python tests/ofwire/make_golden_nx.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from test_ofwire_ct import CT_FLOW_MODS  # noqa: E402
from test_ofwire_nx_golden import GOLDEN, NX_FLOW_MODS  # noqa: E402
from test_ofwire_hash import HASH_MOD  # noqa: E402

from tandem.rules import ofwire_msgs as M  # noqa: E402

MODS = {**NX_FLOW_MODS, **CT_FLOW_MODS, "flow_mod_nx_hash": HASH_MOD}
for name, (xid, mod, _) in MODS.items():
    (GOLDEN / f"{name}.hex").write_text(M.encode_flow_mod(xid, mod).hex() + "\n")
print(f"wrote {len(MODS)} golden files to {GOLDEN}")
