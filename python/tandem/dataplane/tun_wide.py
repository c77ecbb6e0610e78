"""A set_field / load on ``tun_metadataN`` bits past 127 (an option mapped longer than 16
bytes, up to Open vSwitch's 124) as ``tandem._dp.Pipeline`` takes it:
``("set_tun_metadata_wide", N, value limbs, mask limbs)``, eight 128-bit limbs each, limb
k holding bits 128k..128k+127 (dp-core's ``tunwide::WideSet``). A whole set_field writes
every bit of the option. Moves, pushes and pops cross as ``("move", …)`` etc. with any
bit range of the option (dp-core reads and writes past bit 127 itself). Pure."""

from __future__ import annotations

from tandem.rules.ir import SetField
from tandem.rules.tun_metadata import index

_LIMB = (1 << 128) - 1
_WHOLE = (1 << 992) - 1


def _limbs(v: int) -> list[int]:
    return [v >> 128 * k & _LIMB for k in range(8)]


def wide_set_args(a: SetField) -> tuple | None:
    """The wide tuple for ``a``, or None when its value and mask fit bits 0..127."""
    i = index(a.field) if isinstance(a.field, str) else None
    if i is None or max(a.value.bit_length(), (a.mask or 0).bit_length()) <= 128:
        return None
    return ("set_tun_metadata_wide", i, _limbs(a.value), _limbs(_WHOLE if a.mask is None else a.mask))
