"""dp-core runs Open vSwitch's controller(reason=…,id=…,userdata=…): a packet-in with
that reason and userdata, only for controller id 0 (the emulated switch's controller)."""

from tandem.dataplane.switch import Switch
from tandem.rules.ofctl import parse_group, parse_rule

FRAME = bytes.fromhex("02000000000202000000000188b5") + bytes(46)


def test_controller_action_reason_userdata_and_id():
    sw = Switch([1, 2])
    sw.add_rule(parse_rule("cookie=0x9,actions=controller(reason=group,userdata=01.02),controller(id=3,userdata=ff),"
                           "output:2,controller(reason=no_match,max_len=10)"))
    f = sw.process(1, FRAME)
    assert [p for p, _ in f] == [2]
    assert [(c.reason, c.cookie, c.userdata, c.frame) for c in f.controller] == [
        ("group", 9, b"\1\2", FRAME), ("no_match", 9, b"", FRAME)]


def test_controller_action_in_a_group_bucket_sends_nothing_as_in_open_vswitch():
    """(measured on OVS 3.1: a bucket's controller(...) sends no packet-in, its output to CONTROLLER does)"""
    sw = Switch([1, 2])
    sw.add_group(parse_group("group_id=1,type=all,bucket=controller(userdata=bb.cc),output:2,bucket=CONTROLLER:65535"))
    sw.add_rule(parse_rule("cookie=0x5,actions=group:1"))
    f = sw.process(1, FRAME)
    assert [p for p, _ in f] == [2]
    assert [(c.reason, c.userdata) for c in f.controller] == [("action", b"")]
