"""An os-ken app that steers traffic through a service chain: on connect it
installs the virtual rules of a file in the simple form `tandem rules
from-chains` prints (``priority=P,in_port=I,actions=output:O`` or
``actions=drop``; ``#`` comments), as a controller that knows the chain
would. Runs next to simple_switch_13 (whose table-miss entry, priority 0,
then only sees what no chain rule takes).

Run:  TANDEM_CHAIN_RULES=sdwan.flows osken-manager scripts/osken_apps/simple_switch_13.py \
          scripts/osken_apps/chain_rules.py --ofp-tcp-listen-port 6653
"""

import os
import re

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_3

LINE = re.compile(r"^priority=(\d+),in_port=(\d+),actions=(?:output:(\d+)|drop)$")


def read_rules(path):
    out = []
    with open(path) as f:
        for n, raw in enumerate(f, start=1):
            body = raw.split("#", 1)[0].strip()
            if not body:
                continue
            m = LINE.match(body)
            if m is None:
                raise ValueError(f"{path}:{n}: not of the form priority=P,in_port=I,actions=output:O|drop: {body!r}")
            out.append((int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) else None))
    return out


class ChainRules(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rules = read_rules(os.environ["TANDEM_CHAIN_RULES"])

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def on_features(self, ev):
        dp = ev.msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        for prio, in_port, out in self.rules:
            actions = [parser.OFPActionOutput(out)] if out is not None else []
            inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
            dp.send_msg(parser.OFPFlowMod(datapath=dp, priority=prio, match=parser.OFPMatch(in_port=in_port),
                                          instructions=inst))
        self.logger.info("chain rules: installed %d flows on %016x", len(self.rules), dp.id)
