//! The Network Service Header (RFC 8300) of an Ethernet frame with ethertype
//! 0x894f, parsed and written as Open vSwitch 3.1 does (lib/flow.c `parse_nsh`,
//! lib/odp-execute.c `odp_set_nsh`).
//!
//! The NSH fields live in key words `NSH_WORD ..= NSH_WORD + 2`, the IPv6 address
//! words: no packet carries both, and every NSH field has the prerequisite
//! `eth_type=0x894f` (so the hot key does not grow). Word layout:
//! `NSH_WORD`: flags (8) : ttl (8) : md type (8) : next protocol (8) : SPI (24) : SI (8);
//! `NSH_WORD + 1`: c1 : c2; `NSH_WORD + 2`: c3 : c4.
//! A header Open vSwitch does not parse (shorter than 8 bytes, version not 0, a
//! length past the frame's end, MD type 1 whose length is not 24) leaves every NSH
//! field 0; MD type 2 (and other types) parse with the contexts 0.
//! State: none. Cost: a few loads for a 0x894f frame, nothing for any other.

use crate::field::Field;
use crate::parse::Headers;

pub const ETH_TYPE_NSH: u16 = 0x894f;
pub const NSH_WORD: usize = 8;
pub const NSH_WORDS: usize = 3;
/// MD type 1: four fixed 32-bit contexts, header length 24 bytes.
pub const MD_TYPE1: u8 = 1;
pub const MD_TYPE2: u8 = 2;
const MD_TYPE1_LEN: usize = 24;
const BASE_LEN: usize = 8;

/// The NSH key words of the header at the start of `l3`, or None where Open vSwitch
/// does not parse it (then its flow's NSH fields are 0).
pub fn parse(l3: &[u8]) -> Option<[u64; NSH_WORDS]> {
    let base = l3.get(..BASE_LEN)?;
    let vftl = u16::from_be_bytes([base[0], base[1]]);
    let (version, flags, ttl, len) = (vftl >> 14, (vftl >> 12) & 3, (vftl >> 6) & 0x3f, usize::from(vftl & 0x3f) * 4);
    if version != 0 || len > l3.len() {
        return None;
    }
    let (md_type, np) = (base[2], base[3]);
    let path = u32::from_be_bytes([base[4], base[5], base[6], base[7]]);
    let mut w = [0u64; NSH_WORDS];
    w[0] = (u64::from(flags) << 56) | (u64::from(ttl) << 48) | (u64::from(md_type) << 40) | (u64::from(np) << 32) | u64::from(path);
    if md_type == MD_TYPE1 {
        if len != MD_TYPE1_LEN {
            return None;
        }
        let be64 = |at: usize| u64::from_be_bytes(l3[at..at + 8].try_into().expect("8 bytes"));
        w[1] = be64(8);
        w[2] = be64(16);
    }
    Some(w)
}

/// Is `field` one of the NSH fields?
pub fn is_nsh(field: Field) -> bool {
    use Field::*;
    matches!(field, NshFlags | NshTtl | NshMdtype | NshNp | NshSpi | NshSi | NshC1 | NshC2 | NshC3 | NshC4)
}

/// Write `value` into the NSH key words (Open vSwitch's flow: the whole 8-bit flags
/// and the contexts of an MD type 2 header too, which the frame cannot hold).
pub fn write_words(w: &mut [u64; NSH_WORDS], field: Field, value: u128) {
    let s = field.slot();
    let i = s.word - NSH_WORD;
    let m = crate::rule::ones(s.bits) as u64;
    w[i] = (w[i] & !(m << s.shift)) | ((value as u64 & m) << s.shift);
}

/// set_field on an NSH field, in the frame (as `odp_set_nsh`): the header's 2 flag
/// bits and 6 TTL bits, the service path, and the contexts of an MD type 1 header.
/// Returns true if the frame changed; false where Open vSwitch leaves the bytes
/// alone (no parsed header, a context of another MD type, a read-only field).
pub fn set_frame(frame: &mut [u8], h: &Headers, field: Field, value: u128) -> bool {
    let Some(words) = h.nsh else { return false };
    let at = h.l3_offset;
    let v = value as u32;
    let rd16 = |f: &[u8]| u16::from_be_bytes([f[at], f[at + 1]]);
    match field {
        Field::NshFlags => {
            let x = (rd16(frame) & !0x3000) | ((v as u16 & 3) << 12);
            frame[at..at + 2].copy_from_slice(&x.to_be_bytes());
        }
        Field::NshTtl => {
            let x = (rd16(frame) & !0x0fc0) | ((v as u16 & 0x3f) << 6);
            frame[at..at + 2].copy_from_slice(&x.to_be_bytes());
        }
        Field::NshSpi => {
            frame[at + 4..at + 7].copy_from_slice(&v.to_be_bytes()[1..]);
        }
        Field::NshSi => frame[at + 7] = v as u8,
        Field::NshC1 | Field::NshC2 | Field::NshC3 | Field::NshC4 => {
            if (words[0] >> 40) as u8 != MD_TYPE1 {
                return false;
            }
            let k = match field { Field::NshC1 => 0, Field::NshC2 => 1, Field::NshC3 => 2, _ => 3 };
            frame[at + 8 + 4 * k..at + 12 + 4 * k].copy_from_slice(&v.to_be_bytes());
        }
        _ => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md1() -> Vec<u8> {
        // ver 0, flags 2, ttl 63, length 6 words; md type 1, np 3; spi 0x123456, si 7; c1..c4
        let mut h = vec![0x2f, 0xc6, 1, 3, 0x12, 0x34, 0x56, 7];
        for c in 1u32..=4 {
            h.extend_from_slice(&(0x1000 * c).to_be_bytes());
        }
        h
    }

    #[test]
    fn md_type_1_parses_every_field() {
        let w = parse(&md1()).unwrap();
        let field = |f: Field| (w[f.slot().word - NSH_WORD] >> f.slot().shift) & crate::rule::ones(f.slot().bits) as u64;
        assert_eq!([field(Field::NshFlags), field(Field::NshTtl), field(Field::NshMdtype), field(Field::NshNp)], [2, 63, 1, 3]);
        assert_eq!([field(Field::NshSpi), field(Field::NshSi)], [0x123456, 7]);
        assert_eq!([field(Field::NshC1), field(Field::NshC2), field(Field::NshC3), field(Field::NshC4)], [0x1000, 0x2000, 0x3000, 0x4000]);
    }

    #[test]
    fn headers_open_vswitch_does_not_parse_give_none() {
        let mut bad_version = md1();
        bad_version[0] |= 0x40;
        let mut md1_short = md1();
        md1_short[1] = (md1_short[1] & 0xc0) | 2; // md type 1 with length 8
        let mut too_long = md1();
        too_long[1] = (too_long[1] & 0xc0) | 7; // 28 bytes, frame has 24
        for h in [&md1()[..7], &bad_version[..], &md1_short[..], &too_long[..]] {
            assert_eq!(parse(h), None, "{h:?}");
        }
    }

    #[test]
    fn md_type_2_parses_with_zero_contexts() {
        // length 4 words: base + path + one 8-byte TLV
        let h = [0x0f, 0xc4, 2, 3, 0, 0, 1, 9, 0, 0, 1, 4, 0xaa, 0xbb, 0xcc, 0xdd];
        let w = parse(&h).unwrap();
        assert_eq!(w[0], (63 << 48) | (2 << 40) | (3 << 32) | 0x109);
        assert_eq!(&w[1..], &[0, 0]);
    }
}
