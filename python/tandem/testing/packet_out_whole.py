"""``packet_out_oracle --whole``: PACKET_OUTs the endpoint sends whole to the host switch
(oneswitch/packet_out_whole.py), against one Open vSwitch bridge.

Each PACKET_OUT holds ``ct`` (commit or not, a zone, ``exec`` of ct_mark, an IPv4 ``nat``
on IPv4 frames; on IP frames) or ``check_pkt_larger`` (into a register, shown by a move into
the frame, or into a header field, ``eth_dst`` or ``eth_src`` bits), then at least one
packet-in (CONTROLLER, ``controller(…)`` with userdata, a reason, an id of 0), among field
sets, loads, VLAN pushes, ``ct_clear``, ``set_queue``/``pop_queue``, outputs to ports,
IN_PORT, FLOOD, ALL and LOCAL, and clones of outputs and packet-ins; half the frames that
are not IP become NSH frames with one to three ``dec_nsh_ttl`` (``packet_out_nsh_ttl.with_nsh_ttl``:
after the change, in clones, invalid_ttl packet-ins at TTL 0 or 1). Frames and packet-ins
(three formats in turn) compared byte for byte; the ports the first PACKET_OUT of a batch
homes go back before the next batch's GROUP_MODs. ``--whole-tun`` (``tun``): both sides map
``TUN_MAP`` first (``tlv_table_mod``), and half the changes are writes to its options (set_field,
load, a move from eth_src; some shown in eth_dst, a ``delete_field`` now and then) instead.
State: none. Cost: generation only.
"""

from __future__ import annotations

import random
from typing import Sequence

from tandem.rules.ir import Action
from tandem.rules.ofctl import parse_actions
from tandem.rules.packets import random_packet
from tandem.rules.ir import OFPP_CONTROLLER, PushVlan
from tandem.testing.packet_out_nsh_ttl import with_nsh_ttl

_IP = (b"\x08\x00", b"\x86\xdd")
_TAGS = (b"\x81\x00", b"\x88\xa8")


def _eth_type(frame: bytes) -> tuple[bytes, int]:
    at = 12
    while frame[at:at + 2] in _TAGS:
        at += 4
    return frame[at:at + 2], (at - 12) // 4


def _filler(rng: random.Random, ports: Sequence[int]) -> str:
    return rng.choice([
        f"set_field:02:00:00:00:{rng.randrange(256):02x}:{rng.randrange(256):02x}->eth_src",
        f"set_field:{rng.randrange(1 << 16)}->reg{rng.randrange(4)}",
        f"load:{rng.randrange(256)}->NXM_NX_REG1[8..15],move:NXM_NX_REG1[8..15]->NXM_OF_ETH_DST[0..7]",
        "push_vlan:0x8100", f"set_queue:{rng.randrange(4)}", "pop_queue",
        f"output:{rng.choice(list(ports))}", rng.choice(["output:IN_PORT", "output:FLOOD", "output:ALL", "output:LOCAL"]),
        f"clone(set_field:02:00:00:00:00:{rng.randrange(256):02x}->eth_dst,output:{rng.choice(list(ports))},CONTROLLER)",
        "note:0a0b",
    ])


def _packet_in(rng: random.Random) -> str:
    return rng.choice(["CONTROLLER", f"controller(userdata={rng.randrange(256):02x}.02)",
                       f"controller(reason={rng.choice(['action', 'no_match', 'invalid_ttl'])},id=0)",
                       f"controller(max_len={rng.choice([20, 64, 200])})"])


def _changer(rng: random.Random, ip: bool, v4: bool, emu: bool = False) -> str:
    if ip and rng.random() < 0.6:
        zone = rng.randrange(4)
        commit = rng.random() < 0.7
        exec_ = f",exec(set_field:{rng.randrange(1, 16)}->ct_mark)" if commit and rng.random() < 0.4 else ""
        nat = ",nat(src=10.9.9.9)" if commit and v4 and rng.random() < 0.3 and not emu else ""
        ct = f"ct({'commit,' if commit else ''}zone={zone}{exec_}{nat})"
        return ct + (",ct_clear" if rng.random() < 0.15 else "")
    n = rng.choice([40, 60, 64, 100, 1500])
    if rng.random() < 0.5 or emu:  # (else into eth_dst/eth_src bits; the emulator refuses those)
        bit = rng.randrange(16)
        return f"check_pkt_larger({n})->NXM_NX_REG2[{bit}],move:NXM_NX_REG2[{bit}]->NXM_OF_ETH_SRC[{bit}]"
    return f"check_pkt_larger({n})->NXM_OF_ETH_{rng.choice(['DST', 'SRC'])}[{rng.choice([0, 8, 40])}]"


# (porowf) ``--whole-tun``: the TLV map both sides get first, and writes to its options (a delete now and then)
TUN_MAP = {0: 4, 1: 8, 2: 12}


def _tun_changer(rng: random.Random) -> str:
    i = rng.choice(sorted(TUN_MAP))
    bits = 8 * TUN_MAP[i]
    x = rng.random()
    if x < 0.4:
        out = f"set_field:{rng.getrandbits(bits):#x}->tun_metadata{i}"
    elif x < 0.7:
        n = rng.choice((8, 16, 32))
        ofs = rng.randrange(bits - n + 1)
        out = f"load:{rng.getrandbits(n):#x}->NXM_NX_TUN_METADATA{i}[{ofs}..{ofs + n - 1}]"
    else:
        out = f"move:NXM_OF_ETH_SRC[0..31]->NXM_NX_TUN_METADATA{i}[{bits - 32}..{bits - 1}]"
    if rng.random() < 0.3:  # (shown in the frame)
        out += f",move:NXM_NX_TUN_METADATA{i}[0..7]->NXM_OF_ETH_DST[0..7]"
    if rng.random() < 0.2:
        out += f",delete_field:tun_metadata{i}"
    return out


def random_whole_packet_out(rng: random.Random, ports: Sequence[int], nsh: bool = True, emu: bool = False,
                            tun: bool = False) -> tuple[int, tuple[Action, ...], bytes]:
    """(in_port, actions, frame) of a PACKET_OUT the endpoint sends whole (module doc);
    ``emu``: only what the emulator backend sends whole, no ``nat`` and check_pkt_larger into
    registers only (``packet_out_whole_dp.py``); ``tun``: the change a write to a ``TUN_MAP``
    option, half the time, a ``delete_field`` now and then."""
    port, frame = random_packet(rng, None, ports)
    et, tags = _eth_type(frame)
    parts = [_filler(rng, ports) for _ in range(rng.randint(0, 2))]
    parts.append(_tun_changer(rng) if tun and rng.random() < 0.5 else _changer(rng, et in _IP, et == _IP[0], emu))
    parts += [_filler(rng, ports) for _ in range(rng.randint(0, 2))]
    parts.insert(rng.randint(len(parts), len(parts)), _packet_in(rng))
    parts += [_filler(rng, ports) for _ in range(rng.randint(0, 2))]
    while sum(p == "push_vlan:0x8100" for p in parts) + tags > 2:  # (Open vSwitch holds two VLAN headers at most)
        parts.remove("push_vlan:0x8100")
    in_port = OFPP_CONTROLLER if rng.random() < 0.2 else port
    acts = tuple(parse_actions(",".join(parts)))
    if nsh and et not in _IP and rng.random() < 0.5:  # (dec_nsh_ttl after the change: an NSH frame)
        acts, frame = with_nsh_ttl(rng, acts, frame)
        if tun and _eth_type(frame)[1] + sum(type(a) is PushVlan for a in acts) > 2:  # (--whole-tun: OVS's BAD_TAG)
            acts = tuple(a for a in acts if type(a) is not PushVlan)
    return in_port, acts, frame


def tlv_table_mod(xid: int) -> bytes:
    """NXT_TLV_TABLE_MOD adding ``TUN_MAP`` (Geneve class 0xffff, type = index)."""
    from tandem.rules import ofwire_tlv as T

    return T.encode_tlv_table_mod(xid, T.NXTTMC_ADD, [T.TlvMap(0xFFFF, i, n, i) for i, n in TUN_MAP.items()])
