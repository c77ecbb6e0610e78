"""A FLOW_MOD that OneSwitch refuses changes nothing, even one whose rule first moved
every sNIC port's pipeline to the host (a ct, learn or NORMAL rule, a meter): the
ports go back, and a later plain rule translates as if the refused one never came."""

from pathlib import Path

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test
from tandem.backends.factory import make_backend
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.ids import N_PHYSICAL_TABLES
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_rule

TOPO = Path(__file__).with_name("three_switches.yaml")
# refused by the translation after the homing check: a ct(table=0) (a lookup in table 0 again) in a rule
# that uses the mark
REFUSED = "table=0,priority=10,ip,pkt_mark=1,actions=ct(table=0)"


@async_test
async def test_a_refused_homed_rule_leaves_every_port_where_it_was():
    topo = load_topology(TOPO)
    backend = make_backend("emu", n_tables=N_PHYSICAL_TABLES)
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    try:
        c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
        before = {sw: sorted(map(str, ep.state.physical_rules(sw))) for sw in topo.switch_names}
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule(REFUSED))))
        errs = errors_in(await c.barrier())
        assert len(errs) == 1, errs  # refused ...
        assert ep.state.extensions == {} and ep.state.topo == topo  # ... and no port stays on the host
        assert {sw: sorted(map(str, ep.state.physical_rules(sw))) for sw in topo.switch_names} == before
        assert {sw: len(backend.rules.get(sw, {})) for sw in topo.switch_names} == {
            sw: len(before[sw]) for sw in topo.switch_names}  # the switches hold what they held
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule("table=0,priority=5,in_port=2,actions=output:3"))))
        assert errors_in(await c.barrier()) == []
        assert all(r.priority != 5 or sw == topo.port_map[2].switch
                   for sw in topo.switch_names for r in ep.state.physical_rules(sw))  # translated unhomed
    finally:
        await ep.close()
        await backend.close()
