"""controller_ids: the controller ids other than 0 a switch's rules and groups send packet-ins to."""

from tandem.rules.controller_ids import controller_ids
from tandem.rules.ofctl import parse_group, parse_rule


def test_ids_of_dec_ttl_and_controller_in_every_action_list():
    rules = [
        parse_rule("ip,actions=dec_ttl(7,0,7),output:1"),
        parse_rule("ip,actions=clone(controller(id=4)),write_actions(dec_ttl(9))"),
        parse_rule("ip,actions=dec_ttl,controller(id=0),CONTROLLER:65535"),
    ]
    group = parse_group("group_id=1,type=all,bucket=dec_ttl(11),output:1")
    assert controller_ids(rules) == {4, 7, 9}
    assert controller_ids([group]) == {11}
    assert controller_ids(rules[2:]) == frozenset()
