"""A controller connection's Nicira messages (fake backend): the packet-in format and
controller id are taken, each bad one gets one precise error, an NXT_RESUME with no
continuation gets NXR_STALE (as Open vSwitch 3.1 answers it: test_refusals_vs_ovs.py)."""

import struct
from pathlib import Path

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test
from tandem.backends.factory import make_backend
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ofwire as W
from tandem.rules import ofwire_packet_in2 as P


@async_test
async def test_nicira_messages_are_taken_or_refused_precisely():
    topo = load_topology(Path(__file__).with_name("three_switches.yaml"))
    backend = make_backend("fake")
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    try:
        sent = {
            "format 2": P.encode_set_packet_in_format(11, 2),
            "id 9": P.encode_set_controller_id(12, 9),
            "format 3": P.encode_set_packet_in_format(13, 3),
            "short set format": P.nx_message(14, P.NXT_SET_PACKET_IN_FORMAT, b""),
            "resume": P.nx_message(15, P.NXT_RESUME, struct.pack("!HH", 0, 64) + bytes(60)),
            "other vendor": W.header(W.OFPT_EXPERIMENTER, 16, struct.pack("!II", 0x1234, 1)),
        }
        for raw in sent.values():
            c.send(raw)
        errs = {x: (t, code) for x, t, code in errors_in(await c.barrier())}
        session = next(iter(ep.sessions))
        assert (session.packet_in_format, session.controller_id) == (2, 9)
        assert errs == {13: (W.OFPET_BAD_REQUEST, W.OFPBRC_EPERM), 14: (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_LEN),
                        15: (0xFFFF, 35),  # (NXR_STALE)
                        16: (W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_EXPERIMENTER)}
    finally:
        await ep.close()
        await backend.close()
