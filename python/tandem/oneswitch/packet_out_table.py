"""What a PACKET_OUT may hold after an ``output:TABLE`` (docs/endpoint.md, "Refused by OneSwitch only").

Open vSwitch 3.1 runs a PACKET_OUT's ``output:TABLE`` as a resubmit into table 0: what the
tables do to the packet and its pipeline state stays for the rest of the PACKET_OUT's list
(measured on one bridge, ``tests/endpoint/test_packet_out_table_vs_ovs.py``: a table-0 rule
``push_vlan:0x8100,output:3`` then the PACKET_OUT's ``output:2`` sends port 2 the tagged
frame; a rule's ``load`` into ``reg0`` is what a later ``output_reg`` reads; a second
``output:TABLE`` sees the first one's changes, ``pkt_mark`` and metadata included), and the
action set the tables write runs at the PACKET_OUT's end, after its later changes (a rule's
``write_actions(output:3)`` with ``output:TABLE,push_vlan:0x8100`` sends port 3 the tagged frame).

The endpoint sends the TABLE as its own physical PACKET_OUT on the ingress switch of the
``in_port`` and every later output as another one, of the PACKET_OUT's own changes only: the
tables' changes are not there, and the TABLE's physical PACKET_OUT runs its action set without
the later changes. So every action after an ``output:TABLE`` but ``note`` is refused: each sends
the packet, reads its state or changes what the action set sends.
"""

from __future__ import annotations

from typing import Iterable

from tandem.rules import ir
from tandem.rules.ir import Action, Output

# what may follow the TABLE: it neither sends, reads nor changes the packet
_INERT = (ir.Note,)


def after_table_problem(actions: Iterable[Action]) -> str | None:
    """Why a PACKET_OUT with these actions is refused: an action but ``note`` after an
    ``output:TABLE`` (module doc); None if there is none."""
    table = False
    for a in actions:
        if table and not isinstance(a, _INERT):
            what = (f"output:{ir.RESERVED_PORT_NAMES.get(a.port, a.port)}" if type(a) is Output
                    else type(a).__name__)
            return (f"{what} after output:TABLE in a PACKET_OUT: Open vSwitch runs TABLE as a resubmit whose changes "
                    "stay for the rest of the list and whose action set runs at the list's end; the endpoint sends "
                    "the TABLE as its own physical PACKET_OUT")
        table = table or (type(a) is Output and a.port == ir.OFPP_TABLE)
    return None


__all__ = ["after_table_problem"]
