"""Rule IR and its formats (ovs-ofctl text, OpenFlow 1.3 wire).

ir.py (the IR), ofctl*.py (ovs-ofctl text <-> IR), prereq.py (OVS-style action
prerequisites), fields.py (value text <-> int), packets.py (frames from field
values), generate.py (seeded random rules/groups), ofwire*.py (wire codec)."""
