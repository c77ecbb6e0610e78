"""The VLAN tags in Open vSwitch's view size a pending push or pop (oneswitch/vlan_view.py):
OVS holds two, so a push onto two changes no size and a pop onto none does nothing; a
truncated output toward another switch after such a change is taken only where the
rule's match tells how many tags are in view, and cuts as OVS cuts."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.ids import TranslationError
from tandem.oneswitch.translate import translate
from tandem.oneswitch.trunc_translate import pending_change
from tandem.oneswitch.vlan_view import tag_views
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame

from test_of13_translation import TOPOS


def _pending(text: str):
    r = parse_rule(text)
    acts = r.instructions[0].actions
    return pending_change(acts, len(acts) - 1, r, {1, 2, 3, 4})


def test_the_views_a_match_tells():
    assert tag_views(parse_rule("vlan_vid=0x0000,actions=drop")) == {0}
    assert tag_views(parse_rule("vlan_vid=0x1000/0x1000,actions=drop")) == {1, 2}
    assert tag_views(parse_rule("vlan_vid=0x1005,actions=drop")) == {1, 2}
    assert tag_views(parse_rule("actions=drop")) == {0, 1, 2}


def test_a_push_is_sized_by_the_tags_in_view():
    assert _pending("vlan_vid=0x0000,actions=push_vlan:0x8100,push_vlan:0x8100,output(port=3,max_len=14)") == 8
    assert _pending("vlan_vid=0x1005,actions=pop_vlan,push_vlan:0x8100,output(port=3,max_len=14)") == 0  # (1 or 2 tags: the pop leaves room)
    assert _pending("vlan_vid=0x1000/0x1000,actions=pop_vlan,output(port=3,max_len=20)") == -4
    for text in ("actions=push_vlan:0x8100,output(port=3,max_len=14)",
                 "vlan_vid=0x1000/0x1000,actions=push_vlan:0x8100,output(port=3,max_len=14)",
                 "vlan_vid=0x1000/0x1000,actions=pop_vlan,push_vlan:0x8100,push_vlan:0x8100,output(port=3,max_len=20)"):
        assert _pending(text) == "unknown", text


def test_a_push_of_unknown_size_before_a_truncated_output_across_pcie_is_refused():
    with pytest.raises(TranslationError, match="view"):
        translate([parse_rule("in_port=1,actions=push_vlan:0x8100,push_vlan:0x8100,output(port=3,max_len=14)")],
                  TOPOS["k3"])


@pytest.mark.ovs
def test_two_pushes_cut_as_the_virtual_switch_cuts_them():
    """The seed-3 of13_oracle case: OVS sends 14 + 8 bytes for an untagged frame."""
    from tandem.testing.oneswitch_oracle import Oracle

    rules = [parse_rule("in_port=1,vlan_vid=0x0000,actions=push_vlan:0x8100,set_field:4196->vlan_vid,"
                        "push_vlan:0x8100,output(port=3,max_len=14)")]
    tr = translate(rules, TOPOS["k3"])
    with OvsSandbox() as sb:
        sb.appctl("upcall/disable-megaflows")
        with Oracle(sb, TOPOS["k3"]) as o:
            o.load_virtual(rules)
            o.load_translation(tr)
            rep = o.compare([(1, build_frame(udp_dst=1, payload=bytes(40)))])
    assert not rep.mismatches, rep.mismatches[0]
    assert rep.outputs >= 1
