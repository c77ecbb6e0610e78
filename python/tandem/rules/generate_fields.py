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

Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random

from .ir import FieldMatch, Match, Rule

TCI_UNTAGGED_FEATURE = "nx_tci_untagged"
RECIRC_ID_FEATURE = "nx_recirc_id"
FIELD_FEATURES = frozenset({TCI_UNTAGGED_FEATURE, RECIRC_ID_FEATURE})
# VID masks without the present bit (0: the VID wildcarded)
_VID_MASKS = (0, 0, 0x0FFF, 0x0FF0, 0x000F)
_VIDS = (0, 10, 20, 30, 100)


def match_fields(rng: random.Random, table: int, features: frozenset[str], fields: dict) -> None:
    """Add the fields of the features on to a drawn match (``fields``: IR field -> FieldMatch)."""
    if TCI_UNTAGGED_FEATURE in features and "vlan_vid" not in fields and rng.random() < 0.4:
        pcp_mask = rng.choice((7, 7, 1, 2, 4, 6, 3))
        pcp = rng.choice((0, 0, rng.randrange(8))) & pcp_mask
        fields["vlan_pcp"] = FieldMatch(pcp, pcp_mask)
        vid_mask = rng.choice(_VID_MASKS)
        if vid_mask:
            fields["vlan_vid"] = FieldMatch(rng.choice(_VIDS) & vid_mask, vid_mask)
    if RECIRC_ID_FEATURE in features and rng.random() < 0.3:
        fields["recirc_id"] = FieldMatch(0)


def with_recirc_id(rng: random.Random, rules: list[Rule], p: float = 0.3) -> list[Rule]:
    """``rules`` with ``recirc_id=0`` added to the match of about ``p`` of them."""
    return [Rule(Match(r.match.fields + (("recirc_id", FieldMatch(0)),)), r.instructions, r.table, r.priority, r.cookie,
                 r.idle_timeout, r.hard_timeout) if "recirc_id" not in r.match and rng.random() < p else r for r in rules]
