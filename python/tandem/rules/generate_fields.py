"""Random matches on the Open vSwitch fields issue 15 added last (drawn into the
rules of ``generate.random_rule`` when their feature is on; opt-in, so rule sets
drawn without them stay as they were):

- ``nx_tci_untagged``: an NXM_OF_VLAN_TCI match whose mask holds priority (PCP)
  bits but not the tag-present bit (``vlan_tci=0x2000/0xe000``), so it also meets
  untagged frames, whose TCI is 0 (``ir.tci_match``); often with VID bits too.
- ``nx_recirc_id``: ``recirc_id=0`` (a packet that was not recirculated; the only
  value with one meaning on every switch, ``ir.check_recirc_id``). ``with_recirc_id``
  puts it on rules of a connection-tracking rule set, where the copies ``ct(table=T)``
  recirculates do not meet it.
- ``nx_tunnel``: matches on the tunnel metadata beside tunnel_id (``tun_src``,
  ``tun_dst``, ``tun_ipv6_src``, ``tun_ipv6_dst``, ``tun_gbp_id``, ``tun_gbp_flags``, ``tun_flags``; 0 on arrival), and
  set_field/load/move on them (``generate.py`` draws those once the feature is on).

Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random

from .ir import TUNNEL_FIELDS, FieldMatch, Match, Rule
from .generate_nsh import NSH_FEATURE, nsh_match
from .generate_nsh_context import NSH_CONTEXT_FEATURE, context_match
from .generate_tun_metadata import TUN_METADATA_FEATURE, TUN_METADATA_FEATURES, TUN_METADATA_WIDE_FEATURE, tun_metadata_match
from .generate_tun_metadata import TUN_METADATA_ANY_FEATURE
from .generate_tun_metadata import TUN_METADATA_LONG_FEATURE

TCI_UNTAGGED_FEATURE = "nx_tci_untagged"
RECIRC_ID_FEATURE = "nx_recirc_id"
TUNNEL_FEATURE = "nx_tunnel"
FIELD_FEATURES = frozenset({TCI_UNTAGGED_FEATURE, RECIRC_ID_FEATURE, TUNNEL_FEATURE})
FIELD_FEATURES = FIELD_FEATURES | {NSH_FEATURE}
FIELD_FEATURES = FIELD_FEATURES | {TUN_METADATA_FEATURE}
FIELD_FEATURES = FIELD_FEATURES | {TUN_METADATA_WIDE_FEATURE}
FIELD_FEATURES = FIELD_FEATURES | {TUN_METADATA_LONG_FEATURE}
FIELD_FEATURES = FIELD_FEATURES | {TUN_METADATA_ANY_FEATURE}
# small pools, so that writes meet matches
_TUNNEL_VALUES = {"tun_src": (0x0A000001, 0x0A000002, 0xC0A80001), "tun_dst": (0x0A000001, 0x0A0000FE),
                  "tun_ipv6_src": (1, 0x20010DB8 << 96 | 1), "tun_ipv6_dst": (2, 0x20010DB8 << 96 | 2),
                  "tun_gbp_id": (1, 7, 0x100), "tun_gbp_flags": (1, 0x40, 0x88)}
_TUNNEL_MASKS = {"tun_src": (0xFF000000, 0xFFFFFF00), "tun_dst": (0xFFFFFF00, 0x000000FF),
                 "tun_ipv6_src": ((1 << 128) - (1 << 64), 0xFF), "tun_ipv6_dst": ((1 << 128) - (1 << 64), 0xFF),
                 "tun_gbp_id": (0xFF00, 0x00FF), "tun_gbp_flags": (0xF0, 0x0F)}
_TUNNEL_VALUES["tun_flags"] = (1, 1, 0)  # (one bit, OAM: no mask is neither empty nor full)


def tunnel_value(rng: random.Random, field: str) -> int:
    """A value for a tunnel metadata field (``ir.TUNNEL_FIELDS``) from a small pool."""
    return rng.choice(_TUNNEL_VALUES[field])
# VID masks without the present bit (0: the VID wildcarded)
_VID_MASKS = (0, 0, 0x0FFF, 0x0FF0, 0x000F)
_VIDS = (0, 10, 20, 30, 100)


def match_fields(rng: random.Random, table: int, features: frozenset[str], fields: dict) -> None:
    """Add the fields of the features on to a drawn match (``fields``: IR field -> FieldMatch)."""
    if NSH_FEATURE in features:  # (first: it replaces the match's network fields)
        nsh_match(rng, table, fields)
        if NSH_CONTEXT_FEATURE in features:  # (nshctx: contexts without nsh_mdtype=1)
            context_match(rng, fields)
    if TCI_UNTAGGED_FEATURE in features and "vlan_vid" not in fields and rng.random() < 0.4:
        pcp_mask = rng.choice((7, 7, 1, 2, 4, 6, 3))
        pcp = rng.choice((0, 0, rng.randrange(8))) & pcp_mask
        fields["vlan_pcp"] = FieldMatch(pcp, pcp_mask)
        vid_mask = rng.choice(_VID_MASKS)
        if vid_mask:
            fields["vlan_vid"] = FieldMatch(rng.choice(_VIDS) & vid_mask, vid_mask)
    if TUN_METADATA_FEATURES & features:
        tun_metadata_match(rng, table, fields, wide=TUN_METADATA_WIDE_FEATURE in features,
                           long=TUN_METADATA_LONG_FEATURE in features, any_=TUN_METADATA_ANY_FEATURE in features)
    if RECIRC_ID_FEATURE in features and rng.random() < 0.3:
        fields["recirc_id"] = FieldMatch(0)
    if TUNNEL_FEATURE in features and rng.random() < (0.5 if table > 0 else 0.25):
        for f in rng.sample(sorted(TUNNEL_FIELDS), rng.choice((1, 1, 2))):
            v = 0 if rng.random() < 0.3 else tunnel_value(rng, f)
            if rng.random() < 0.3 and f in _TUNNEL_MASKS:
                m = rng.choice(_TUNNEL_MASKS[f])
                fields[f] = FieldMatch(v & m, m)
            else:
                fields[f] = FieldMatch(v)


def with_recirc_id(rng: random.Random, rules: list[Rule], p: float = 0.3) -> list[Rule]:
    """``rules`` with ``recirc_id=0`` added to the match of about ``p`` of them."""
    return [Rule(Match(r.match.fields + (("recirc_id", FieldMatch(0)),)), r.instructions, r.table, r.priority, r.cookie,
                 r.idle_timeout, r.hard_timeout) if "recirc_id" not in r.match and rng.random() < p else r for r in rules]
