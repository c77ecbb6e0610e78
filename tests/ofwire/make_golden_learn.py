"""Write Tandem's own encoding of the learn flow mods of test_ofwire_learn.py as
golden/<name>.hex (that test checks Open vSwitch reads them as the same flows):
    .venv/bin/python tests/ofwire/make_golden_learn.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from test_ofwire_learn import GOLDEN, LEARN_FLOW_MODS  # noqa: E402

from tandem.rules import ofwire_msgs as M  # noqa: E402

for name, (xid, mod, _) in LEARN_FLOW_MODS.items():
    (GOLDEN / f"{name}.hex").write_text(M.encode_flow_mod(xid, mod).hex() + "\n")
print(f"wrote {len(LEARN_FLOW_MODS)} golden files to {GOLDEN}")
