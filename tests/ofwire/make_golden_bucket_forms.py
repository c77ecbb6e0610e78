"""Write Tandem's own encoding of test_ofwire_bucket_forms.py's (and test_ofwire_bucket_ct.py's)
group mods as golden/<name>.hex (those tests check Open vSwitch reads them as the same groups):
    .venv/bin/python tests/ofwire/make_golden_bucket_forms.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from test_ofwire_bucket_forms import BUCKET_GROUP_MODS, GOLDEN  # noqa: E402
from test_ofwire_bucket_ct import BUCKET_CT_GROUP_MODS  # noqa: E402

from tandem.rules import ofwire_msgs as M  # noqa: E402
from tandem.rules.ofctl import parse_group  # noqa: E402

MODS = {**BUCKET_GROUP_MODS, **BUCKET_CT_GROUP_MODS}
for name, (xid, text) in MODS.items():
    (GOLDEN / f"{name}.hex").write_text(M.encode_group_mod(xid, "add", parse_group(text)).hex() + "\n")
print(f"wrote {len(MODS)} golden files to {GOLDEN}")
