"""Open vSwitch's ``actset_output`` match field: the output port the action set holds
so far (ONF's experimenter OXM ``ONFOXM_ET_ACTSET_OUTPUT`` in OpenFlow 1.3; read-only,
exact, no prerequisites).

As Open vSwitch 3.1 keeps it (``xlate_write_actions``): ``OFPP_UNSET`` when a packet
enters the pipeline (and a PACKET_OUT's); a write_actions list's outputs set it in
order, until the list writes a group, which sets it back to ``OFPP_UNSET`` and keeps it
there (outputs written later change nothing) until a clear_actions, which also sets
it to ``OFPP_UNSET``. A group bucket and a clone give it back as it was before them;
a recirculated copy reads it from its frozen action set (dp-core: ``pipeline/actset.rs``).
Pure: constants and a range check.
"""

from __future__ import annotations

from .ir import RESERVED_PORT_NAMES

FIELD = "actset_output"
# OpenFlow 1.1+'s form of Open vSwitch's OFPP_UNSET (0xfff7), "no output in the action set"
OFPP_UNSET = 0xFFFF_FFF7
# the names ovs-ofctl takes and prints for it (the reserved ports, and UNSET)
NAMES: dict[str, int] = {**{n: v for v, n in RESERVED_PORT_NAMES.items()}, "UNSET": OFPP_UNSET}
BY_VALUE: dict[int, str] = {v: n for n, v in NAMES.items()}
MAX_PORT = 0xFEFF  # (above it up to the reserved ports, Open vSwitch answers BAD_VALUE)


def is_port_value(value: int) -> bool:
    """A value Open vSwitch takes for actset_output: a port number or a reserved port (UNSET too)."""
    return 0 <= value <= MAX_PORT or 0xFFFF_FF00 <= value <= 0xFFFF_FFFF

