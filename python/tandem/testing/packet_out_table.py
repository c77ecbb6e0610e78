"""``packet_out_oracle --table``: PACKET_OUTs ending in ``output:TABLE`` with random table rules.

OneSwitch takes ``output:TABLE`` as a PACKET_OUT's last action that sends (nothing but a note
after it: oneswitch/packet_out_table.py) and re-injects the frame, with the PACKET_OUT's
changes before it, on the in_port's ingress switch, where the tables' copies run it. Each set
of drawn PACKET_OUTs meets fresh random rules in tables 0 and 1 (header changes, register
loads, outputs, written action sets, goto_table), on the plain bridge and on OneSwitch alike.
"""

from __future__ import annotations

import random
from typing import Sequence

from tandem.rules.ir import OFPP_TABLE, Action, Note, Output


def random_table_rules(rng: random.Random, ports: Sequence[int]) -> list[str]:
    """ovs-ofctl text of 1..4 table-0 rules and 0..2 table-1 rules, each table's priorities
    distinct (which of two overlapping rules of one priority wins is up to the switch)."""
    rules = []
    prios = rng.sample(range(1, 20), 6)
    for _ in range(rng.randint(1, 4)):
        match = rng.choice(("", f"in_port={rng.choice(ports)},", "reg0=0,", "dl_type=0x0800,", "vlan_tci=0,"))
        apply = rng.sample([f"set_field:02:00:00:00:00:0{rng.randint(1, 9)}->eth_src", "push_vlan:0x8100",
                            f"load:{rng.randint(1, 9)}->NXM_NX_REG1[]", f"output:{rng.choice(ports)}",
                            "output:IN_PORT", f"output:{rng.choice(ports)}"], rng.randint(0, 3))
        if "push_vlan:0x8100" in apply and not match.startswith("vlan_tci"):
            apply.remove("push_vlan:0x8100")  # (a frame may hold two tags already: no third)
        written = rng.choice(("", f"write_actions(output:{rng.choice(ports)})",
                              f"write_actions(set_field:02:00:00:00:00:0a->eth_dst,output:{rng.choice(ports)})"))
        goto = rng.choice(("", "goto_table:1"))
        actions = ",".join(x for x in (",".join(apply), written, goto) if x) or "drop"
        rules.append(f"priority={prios.pop()},{match}actions={actions}")
    for _ in range(rng.randint(0, 2)):
        rules.append(f"table=1,priority={prios.pop()},"
                     + rng.choice((f"actions=output:{rng.choice(ports)}", "reg1=0,actions=drop",
                                   f"actions=load:7->NXM_NX_REG2[],write_actions(output:{rng.choice(ports)})")))
    return rules


def with_table(rng: random.Random, acts: Sequence[Action]) -> tuple[Action, ...]:
    """``acts`` with ``output:TABLE`` at the end, sometimes followed by a note."""
    return (*acts, Output(OFPP_TABLE), *([Note(b"\x07")] if rng.random() < 0.2 else []))


__all__ = ["random_table_rules", "with_table"]
