"""Write Tandem's own encoding of test_ofwire_clone.py's flow mods as golden/<name>.hex
(that test checks Open vSwitch reads them as the same flows):
    .venv/bin/python tests/ofwire/make_golden_clone.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from test_ofwire_clone import CLONE_FLOW_MODS, GOLDEN  # noqa: E402

from tandem.rules import ofwire_msgs as M  # noqa: E402

for name, (xid, mod, _) in CLONE_FLOW_MODS.items():
    (GOLDEN / f"{name}.hex").write_text(M.encode_flow_mod(xid, mod).hex() + "\n")
print(f"wrote {len(CLONE_FLOW_MODS)} golden files to {GOLDEN}")
