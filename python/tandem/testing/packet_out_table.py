"""``packet_out_oracle --table``: PACKET_OUTs ending in ``output:TABLE`` with random table rules.

OneSwitch takes ``output:TABLE`` as a PACKET_OUT's last action that sends (nothing but a note
after it: oneswitch/packet_out_table.py) and re-injects the frame, with the PACKET_OUT's
changes before it, on the in_port's ingress switch, where the tables' copies run it. Each set
of drawn PACKET_OUTs meets fresh random rules in tables 0 and 1 (header changes, register
loads, outputs, written action sets, goto_table), on the plain bridge and on OneSwitch alike.
``--continued``: PACKET_OUTs whose list goes on after the TABLE and writes state before it
(``random_continued``; sent whole to the host, dp-core's ``Pipeline::packet_out`` for
``--only dp``: packet_out_continued.py), the rules matching that state too.
"""

from __future__ import annotations

import random
from typing import Sequence

from tandem.rules.ir import OFPP_TABLE, Action, Note, Output
from tandem.rules.ofctl import parse_actions

# (--continued) matches on the state a PACKET_OUT writes before its TABLE
_STATE_MATCHES = ("reg0=5,", "metadata=0x5,", "tun_id=0x5,", "reg1=3,")


def random_table_rules(rng: random.Random, ports: Sequence[int], state: bool = False) -> list[str]:
    """ovs-ofctl text of 1..4 table-0 rules and 0..2 table-1 rules, each table's priorities
    distinct (which of two overlapping rules of one priority wins is up to the switch);
    ``state``: some match the registers, metadata or tun_id a PACKET_OUT or a rule writes."""
    rules = []
    prios = rng.sample(range(1, 20), 6)
    for _ in range(rng.randint(1, 4)):
        match = rng.choice(("", f"in_port={rng.choice(ports)},", "reg0=0,", "dl_type=0x0800,", "vlan_tci=0,")
                           + (_STATE_MATCHES if state else ()))
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


def random_continued(rng: random.Random, ports: Sequence[int], frame: bytes = b"") -> tuple[Action, ...]:
    """(--continued) A PACKET_OUT the endpoint sends whole to the host for its TABLE
    (oneswitch/packet_out_table.table_whole): 0..3 changes, state writes (registers,
    metadata, tun_id) and outputs, ``output:TABLE``, then 1..3 more (outputs, a second
    TABLE, IN_PORT, changes, a clone, ``set_queue``, an MPLS push, ``exit``; TTL actions when
    ``frame`` is IP); one ``push_vlan`` at most."""
    def port() -> str:
        return str(rng.choice(ports))

    v = rng.choice((5, 5, 3, 0))
    head = [f"set_field:02:00:00:00:00:0{rng.randint(1, 9)}->eth_src", f"load:{v}->NXM_NX_REG0[]",
            f"set_field:{v}->metadata", f"set_field:{v}->tun_id", f"output:{port()}", "push_vlan:0x8100",
            f"load:{v}->NXM_NX_REG1[]"]
    tail = [f"output:{port()}", "output:TABLE", "set_field:02:00:00:00:00:0b->eth_dst",
            f"move:NXM_NX_REG1[0..7]->NXM_OF_ETH_SRC[0..7]", "output:IN_PORT", "push_vlan:0x8100",
            f"clone(set_field:02:00:00:00:00:0c->eth_src,output:{port()})", f"load:{v}->NXM_NX_REG0[]", f"output:{port()}"]
    tail += ["set_queue:1", "push_mpls:0x8847,output:TABLE"]
    if _ethertype(frame) in (0x0800, 0x86DD):
        head += ["dec_ttl", "set_nw_ttl:9"]
        tail += ["dec_ttl", "set_nw_ttl:1,dec_ttl"]
    acts = rng.sample(head, rng.randint(0, 3)) + ["output:TABLE"] + rng.sample(tail, rng.randint(1, 3))
    if "push_mpls:0x8847,output:TABLE" in acts:  # (last: a TTL action after it needs IP, which Open vSwitch refuses)
        acts.remove("push_mpls:0x8847,output:TABLE")
        acts.append("push_mpls:0x8847,output:TABLE")
    if acts.count("push_vlan:0x8100") > 1:
        acts.remove("push_vlan:0x8100")
    if rng.random() < 0.1:
        acts += ["exit", f"output:{port()}"]  # (nothing after the exit runs)
    return tuple(parse_actions(",".join(acts)))


def _ethertype(frame: bytes) -> int:
    at = 12
    while int.from_bytes(frame[at:at + 2], "big") in (0x8100, 0x88A8):
        at += 4
    return int.from_bytes(frame[at:at + 2], "big")


__all__ = ["random_continued", "random_table_rules", "with_table"]
