"""dp-core runs Open vSwitch's controller(reason=…,id=…,userdata=…): a packet-in with
that reason and userdata, only for controller id 0 (the emulated switch's controller)."""

from tandem.dataplane.switch import Switch
from tandem.rules.ofctl import parse_rule

FRAME = bytes.fromhex("02000000000202000000000188b5") + bytes(46)


def test_controller_action_reason_userdata_and_id():
    sw = Switch([1, 2])
    sw.add_rule(parse_rule("cookie=0x9,actions=controller(reason=group,userdata=01.02),controller(id=3,userdata=ff),"
                           "output:2,controller(reason=no_match,max_len=10)"))
    f = sw.process(1, FRAME)
    assert [p for p, _ in f] == [2]
    assert [(c.reason, c.cookie, c.userdata, c.frame) for c in f.controller] == [
        ("group", 9, b"\1\2", FRAME), ("no_match", 9, b"", FRAME)]
