"""Random Open vSwitch hash-selection actions for the rule generator (opt-in
features, not in ``ALL_FEATURES``): ``nx_multipath`` (every field set and
algorithm, link counts around 64 — where hrw switches method — and up to 65536,
destinations in the registers later tables match and in pkt_mark), ``nx_bundle`` (bundle and
bundle_load, both algorithms, members among the ports and now and then a number
no port has), ``nx_bundle_reserved`` (with it: reserved members too — in a bundle
IN_PORT, LOCAL and NONE, which OneSwitch translates, in a bundle_load any of them), ``nx_bundle_flood``
(with ``nx_bundle``: every bundle active_backup, with FLOOD or ALL among its reserved members). A chosen value is often copied into the low bits of eth_src as
well (``move``), so the packets that leave show it. Pure.
"""

from __future__ import annotations

import random
from typing import Sequence

from .generate_nx import REGS
from .ir import BUNDLE_ALGORITHMS, BUNDLE_RESERVED_MEMBERS, HASH_FIELDS, MULTIPATH_ALGORITHMS, OFPP_ALL, OFPP_ANY, OFPP_FLOOD
from .ir import OFPP_IN_PORT, OFPP_LOCAL
from .ir import Action, Bundle, MoveField, Multipath, Subfield

MULTIPATH_FEATURE, BUNDLE_FEATURE, BUNDLE_RESERVED_FEATURE = "nx_multipath", "nx_bundle", "nx_bundle_reserved"
BUNDLE_FLOOD_FEATURE = "nx_bundle_flood"
HASH_FEATURES = frozenset({MULTIPATH_FEATURE, BUNDLE_FEATURE, BUNDLE_RESERVED_FEATURE, BUNDLE_FLOOD_FEATURE})
# reserved members drawn: those a bundle's output may go to in a translation, and what bundle_load loads
_OUTPUT_RESERVED = (OFPP_IN_PORT, OFPP_LOCAL, OFPP_ANY)
_LOAD_RESERVED = tuple(sorted(BUNDLE_RESERVED_MEMBERS))
_FLOOD_RESERVED = (OFPP_FLOOD, OFPP_ALL, OFPP_FLOOD, OFPP_ALL) + _OUTPUT_RESERVED  # (nx_bundle_flood)
_BASES = (0, 1, 50, 1024, 65535)
_LINKS = (1, 2, 3, 4, 7, 16, 63, 64, 65, 100, 1000, 65535, 65536)
_ARGS = (0, 1, 3, 8, 100, 128, 2000, 70000)


def _shown(rng: random.Random, dst: Subfield, acts: list[Action]) -> list[Action]:
    """``acts``, often followed by a move of (up to 16 of) ``dst``'s bits into eth_src."""
    if rng.random() < 0.6:
        n = min(dst.n_bits, 16)
        acts.append(MoveField(Subfield(dst.field, dst.ofs, n), Subfield("eth_src", 0, n)))
    return acts


def random_multipath(rng: random.Random) -> list[Action]:
    n_links = rng.choice(_LINKS)
    need = max(1, (n_links - 1).bit_length())
    n_bits = rng.choice((16, 16, 32, max(need, 1))) if need < 16 else rng.choice((16, 32))
    ofs = rng.choice((0, 0, 32 - n_bits)) if n_bits < 32 else 0
    dst = Subfield(rng.choice(REGS + ("pkt_mark",)), ofs, n_bits)  # (the mark: also what the translation carries)
    a = Multipath(rng.choice(HASH_FIELDS), rng.choice(_BASES + (rng.randrange(65536),)), rng.choice(MULTIPATH_ALGORITHMS),
                  n_links, rng.choice(_ARGS), dst)
    return _shown(rng, dst, [a])


def random_bundle(rng: random.Random, ports: Sequence[int], load: bool, reserved: bool = False,
                  outputs: Sequence[int] = _OUTPUT_RESERVED, algorithms: Sequence[str] = BUNDLE_ALGORITHMS) -> list[Action]:
    """A bundle (``load`` False) or bundle_load with its move; ``reserved``: with one or two
    reserved members too (in a bundle from ``outputs``); its algorithm one of ``algorithms``."""
    members = rng.sample(list(ports), rng.randint(0 if rng.random() < 0.05 else 1, min(4, len(ports))))
    if rng.random() < 0.15:  # a number no port has: never live
        members.insert(rng.randrange(len(members) + 1), next(p for p in (77, 99, 0xFEFF) if p not in ports))
    if reserved:  # (always live: often first, so it is the choice; 0 is never live)
        for _ in range(rng.randint(1, 2)):
            m = rng.choice((*(_LOAD_RESERVED if load else outputs), 0))
            members.insert(0 if rng.random() < 0.5 else rng.randrange(len(members) + 1), m)
    fields, basis = rng.choice(HASH_FIELDS), rng.choice(_BASES + (rng.randrange(65536),))
    if not load:
        return [Bundle(fields, basis, rng.choice(algorithms), tuple(members))]
    dst = Subfield(rng.choice(REGS), rng.choice((0, 0, 16)), 16) if rng.random() < 0.7 else Subfield.whole(rng.choice(REGS))
    return _shown(rng, dst, [Bundle(fields, basis, rng.choice(BUNDLE_ALGORITHMS), tuple(members), dst)])


def hash_actions(rng: random.Random, ports: Sequence[int], features: frozenset[str]) -> list[Action]:
    """One multipath, bundle or bundle_load (with its move), of the kinds ``features`` has."""
    kinds = [k for k in ("multipath", "bundle", "bundle_load")
             if (MULTIPATH_FEATURE if k == "multipath" else BUNDLE_FEATURE) in features]
    kind = rng.choice(kinds)
    if kind == "multipath":
        return random_multipath(rng)
    if kind == "bundle" and BUNDLE_FLOOD_FEATURE in features:
        return random_bundle(rng, ports, False, True, _FLOOD_RESERVED, ("active_backup",))
    return random_bundle(rng, ports, kind == "bundle_load", BUNDLE_RESERVED_FEATURE in features)
