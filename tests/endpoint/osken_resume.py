"""Run in the controllers' venv (os-ken): read one NXT_PACKET_IN2 (hex, argv[1]) with os-ken's
parser and print, in hex, the NXT_RESUME an os-ken controller sends for it: an experimenter
message of Nicira's with the packet-in's properties serialized back by os-ken (os-ken names no
NXT_RESUME; 28 is Open vSwitch's number). First line: os-ken's table id, reason and the
continuation's length, as it read them."""

import sys

from os_ken.ofproto import ofproto_common, ofproto_parser
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

NXT_RESUME = 28


class Datapath:
    ofproto, ofproto_parser = ofp, parser

    def set_xid(self, msg):
        msg.xid = 7


def main(hex_msg: str) -> None:
    raw = bytes.fromhex(hex_msg)
    version, mtype, mlen, xid = ofproto_parser.header(raw)
    pin = ofproto_parser.msg(Datapath(), version, mtype, mlen, xid, raw)
    assert isinstance(pin, parser.NXTPacketIn2), type(pin)
    props = b"".join(bytes(p.serialize()) for p in pin.properties)
    resume = parser.OFPExperimenter(Datapath(), ofproto_common.NX_EXPERIMENTER_ID, NXT_RESUME, data=props)
    resume.xid = 7
    resume.serialize()
    print(pin.table_id, pin.reason, len(pin.continuation or b""))
    print(bytes(resume.buf).hex())


if __name__ == "__main__":
    main(sys.argv[1])
