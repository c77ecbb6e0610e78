//! Values of Open vSwitch's `tun_metadataN` options mapped longer than 16 bytes (up to its
//! 124): 1024-bit integers in eight little-endian 128-bit limbs (`Wide`), the bit ranges a
//! set_field/load, move, push or pop reads and writes, and the set action on them.
//! State: none. Cost: bit ranges copied bit by bit (only rules on such options pay).

/// A value of up to 1024 bits: limb `k` holds bits `128k .. 128k + 127`.
pub type Wide = [u128; 8];
/// Open vSwitch's widest option: 124 bytes.
pub const WIDE_BITS: u32 = 992;

/// Open vSwitch's set_field / load on a `tun_metadataN` whose value or mask reaches past
/// bit 127 (the others are `Action::SetField` / `SetMasked`): the `mask` bits of the
/// option take `value`'s, the option is present from then on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WideSet {
    pub opt: u8,
    pub value: Wide,
    pub mask: Wide,
}

impl std::fmt::Display for WideSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "set_field:0x{}/0x{}->tun_metadata{}", hex(&self.value), hex(&self.mask), self.opt)
    }
}

fn hex(w: &Wide) -> String {
    let s: String = w.iter().rev().map(|l| format!("{l:032x}")).collect();
    let t = s.trim_start_matches('0');
    if t.is_empty() { "0".to_string() } else { t.to_string() }
}

fn bit(w: &Wide, k: u32) -> bool {
    k < 1024 && w[(k / 128) as usize] >> (k % 128) & 1 == 1
}

fn set_bit(w: &mut Wide, k: u32, on: bool) {
    let (l, b) = ((k / 128) as usize, k % 128);
    if on {
        w[l] |= 1 << b;
    } else {
        w[l] &= !(1 << b);
    }
}

/// Bits `ofs .. ofs + n` of `w`, shifted down to bit 0.
pub fn get_bits(w: &Wide, ofs: u32, n: u32) -> Wide {
    let mut out = [0; 8];
    for k in 0..n.min(1024) {
        set_bit(&mut out, k, bit(w, ofs + k));
    }
    out
}

/// Replace bits `ofs .. ofs + n` of `w` (within 1024) with the low `n` bits of `bits`.
pub fn put_bits(w: &mut Wide, ofs: u32, n: u32, bits: &Wide) {
    for k in 0..n.min(1024u32.saturating_sub(ofs)) {
        set_bit(w, ofs + k, bit(bits, k));
    }
}

/// `(w & !mask) | (value & mask)`.
pub fn masked(w: &Wide, value: &Wide, mask: &Wide) -> Wide {
    std::array::from_fn(|k| (w[k] & !mask[k]) | (value[k] & mask[k]))
}

/// A value of at most 128 bits as a `Wide`.
pub fn of_u128(v: u128) -> Wide {
    let mut w = [0; 8];
    w[0] = v;
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_ranges_cross_limbs() {
        let mut w = [0; 8];
        put_bits(&mut w, 120, 16, &of_u128(0xabcd));
        assert_eq!(w[0], 0xcd << 120);
        assert_eq!(w[1], 0xab);
        assert_eq!(get_bits(&w, 124, 8), of_u128(0xbc));
        put_bits(&mut w, 984, 8, &of_u128(0xff));
        assert_eq!(w[7], 0xff << (984 - 896));
        assert_eq!(get_bits(&w, 984, 32), of_u128(0xff));
    }

    #[test]
    fn masked_write_keeps_other_bits() {
        let w = [u128::MAX; 8];
        let m = masked(&w, &[0; 8], &of_u128(0xf0));
        assert_eq!(m[0], !0xf0u128);
        assert_eq!(m[7], u128::MAX);
    }
}
