"""The endpoint's checks of a rule on ``tun_metadata0..63`` against the virtual switch's
TLV map (``ep.tlv_map``, kept by ``endpoint_tlv.py`` and relayed to every physical
switch, so each maps the options as the virtual switch does and a rule's copies pass
its fields as they are).

As Open vSwitch 3.1: a field no map names is ``NXFMFC_INVALID_TLV_FIELD`` (in a match,
set_field, load, move, push, pop or delete_field); a move, push or pop beyond the
mapped length is ``BAD_ACTION/BAD_SET_LEN``; a match value or mask or a set_field/load
value longer on the wire than the mapped length is cut as Open vSwitch cuts it, while
the message is decoded (``tun_metadata_decoding``; ``rules/tun_metadata.py``), and one whose
mask is 0 once cut is Open vSwitch's ``set_field:ANY`` (taken: a write of no bit that makes
the option present). OneSwitch only (docs/endpoint.md): on the emulator backend a match on an option's bits past those
its switches' key holds (``match_bits``, ``tun_metadata.EMU_MATCH_BITS``: dp-core matches
bits 0..127 of an option; its actions take all of Open vSwitch's 124 bytes, a learn's specs
bits 0..127) and a rule making a table match more
(option, mask) pairs, or more values of one, than its switches can (``match_classes``,
``match_class_values``: dp-core's tunfold).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Iterator

from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules.tun_metadata import decoding_lengths, encoding_lengths, index, map_problem

_FIELDS = frozenset(ir.TUN_METADATA_FIELDS)


def _lengths(ep) -> dict[int, int]:
    return {i: m.option_len for i, m in ep.tlv_map.items()}


def _problem(ep, field: str, value: int = 0, mask: int | None = None, bits: tuple[int, int] | None = None) -> str | None:
    """``map_problem`` under the virtual map."""
    return map_problem(field, _lengths(ep), value, mask, bits)


def tun_metadata_decoding(ep) -> contextlib.AbstractContextManager:
    """The context a controller's message is decoded and answered in: under the virtual
    TLV map, so a tun_metadata value longer than its option is cut as Open vSwitch cuts
    it, and a reply (FLOW_STATS …) carries each field with its mapped length, as Open
    vSwitch's."""
    return _mapped(_lengths(ep)) if ep.tlv_map else _NO_MAP


@contextlib.contextmanager
def _mapped(lengths: dict[int, int]):
    with decoding_lengths(lengths), encoding_lengths(lengths):
        yield


_NO_MAP = contextlib.nullcontext()


def _refuse(why: str, etype: int, code: int) -> W.OFError:
    if "no TLV map names it" in why:
        return W.OFError(*W.NXFMFC_INVALID_TLV_FIELD, why)
    return W.OFError(etype, code, why)


def check_tun_metadata_match(ep, match: ir.Match, table: int | None = None) -> None:
    for key, fm in match:
        if key in _FIELDS:
            why = _problem(ep, key, fm.value, fm.mask)
            if why:
                raise _refuse(why, W.OFPET_BAD_MATCH, W.OFPBMC_BAD_VALUE if "wider" in why else W.OFPBMC_BAD_FIELD)
            _check_match_bits(ep, key, fm)
    if table is not None:
        _check_slots(ep, match, table)


def _check_match_bits(ep, field: str, fm: ir.FieldMatch) -> None:
    """On a backend whose switches match the first ``match_bits`` bits of an option (the
    emulator's: dp-core's POF slot), a match on a later bit (an exact one on an option mapped
    longer than that) is refused."""
    limit = getattr(ep.backend, "match_bits", None)
    n = _lengths(ep)[index(field)]
    mask = (1 << 8 * n) - 1 if fm.mask is None else fm.mask
    if limit is not None and mask >> limit:
        raise W.OFError(W.OFPET_BAD_MATCH, W.OFPBMC_BAD_FIELD, f"{field} (mapped to {n} bytes) matched on bit "
                        f"{mask.bit_length() - 1}: the {ep.backend.name} backend's switches match bits 0..{limit - 1} "
                        "of an option")


def _check_slots(ep, match: ir.Match, table: int) -> None:
    """On a backend whose switches fold a table's tun_metadata matches into ``match_slots``
    128-bit key slots (the emulator's: dp-core's ``pipeline/tunfold.rs``: per distinct (option,
    mask) pair, in that order, a field of bits(n) bits for its n distinct values, a field not
    crossing a slot), a rule whose table's fields would not fit is refused before anything is
    installed (the virtual table's rules are in the physical table of its number on every switch)."""
    slots = getattr(ep.backend, "match_slots", None)
    if slots is None or not any(k in _FIELDS for k, _ in match):
        return
    classes: dict[tuple, set[int]] = {}
    for r in [*(r for r in ep.state.virtual_rules() if r.table == table), ir.Rule(table=table, priority=0, match=match)]:
        for k, fm in r.match:
            if k in _FIELDS:
                classes.setdefault((index(k), -1 if fm.mask is None else fm.mask), set()).add(
                    fm.value if fm.mask is None else fm.value & fm.mask)
    used, shift = 1, 0
    for key in sorted(classes):
        w = len(classes[key]).bit_length()
        if shift + w > 128:
            used, shift = used + 1, 0
        shift += w
    if used > slots:
        raise W.OFError(W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_TABLE_FULL, f"table {table} would match {len(classes)} distinct "
                        f"(tun_metadata field, mask) pairs whose values need more than the {slots} 128-bit key slots "
                        f"the {ep.backend.name} backend's switches fold them into")


def check_tun_metadata_actions(ep, actions: Iterable[ir.Action]) -> None:
    for a in actions:
        _check(ep, a)


def _check(ep, a: object, learned: bool = False) -> None:
    """``learned``: ``a`` is (in) a learn, whose specs read and write bits 0..match_bits-1 of an
    option on a backend with ``match_bits`` (the other actions take any bits)."""
    if isinstance(a, ir.SetField) and a.field in _FIELDS:
        why = _problem(ep, a.field, a.value, a.mask)
        if why:
            raise _refuse(why, W.OFPET_BAD_ACTION, W.OFPBAC_BAD_SET_ARGUMENT if "wider" in why else W.OFPBAC_BAD_SET_TYPE)
    elif isinstance(a, ir.DeleteField):
        why = _problem(ep, a.field)
        if why:
            raise _refuse(why, W.OFPET_BAD_ACTION, W.OFPBAC_BAD_SET_TYPE)
    elif isinstance(a, ir.Subfield):
        if a.field in _FIELDS:
            why = _problem(ep, a.field, bits=(a.ofs, a.n_bits))
            if why:
                raise _refuse(why, W.OFPET_BAD_ACTION, W.OFPBAC_BAD_SET_LEN if "beyond" in why else W.OFPBAC_BAD_SET_TYPE)
            limit = getattr(ep.backend, "match_bits", None)
            if limit is not None and learned and a.ofs + a.n_bits > limit:
                raise W.OFError(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_SET_TYPE, f"{a.field}[{a.ofs}..{a.ofs + a.n_bits - 1}] "
                                f"in a learn: the {ep.backend.name} backend's switches read and write bits 0..{limit - 1} "
                                "of an option there")
    elif isinstance(a, (tuple, list)):
        for x in a:
            _check(ep, x, learned)
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):  # (operands of move, learn, clone's actions …)
        learned = learned or isinstance(a, ir.Learn)
        for f in dataclasses.fields(a):
            _check(ep, getattr(a, f.name), learned)


__all__ = ["check_tun_metadata_actions", "check_tun_metadata_match", "tun_metadata_decoding"]
