//! NAT of the connections an ALG expects, as Open vSwitch 3.1's userspace
//! tracker does it (`expectation_create`, `conn_not_found`), measured on a
//! dummy-datapath bridge.
//!
//! When a control packet expects a connection, the expectation also records
//! which address that connection's replies must carry and on which side: for a
//! message in the original direction (the expected connection comes from the
//! server) the parent's original destination if the parent was destination-
//! translated (a reply-side destination: `+snat` for the child), else the
//! parent's original source (the child's replies come *from* it: `+dnat`); for
//! a message in the reply direction (the connection comes from the client) the
//! parent's reply source if the parent was destination-translated (`+dnat`),
//! else its reply destination (`+snat`). A new connection the expectation
//! matches, committed by a ct with any `nat` (bare or with a range: the range is
//! not used), takes exactly that translation (addresses only, ports kept, no
//! uniqueness check); committed without `nat` it is not translated.

use crate::conntrack::Tuple;
use crate::ct_nat::NatKind;

/// What an expectation translates its connection to: the address and whether it
/// becomes the reply tuple's destination (a source translation) or its source
/// (a destination translation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExpectedNat {
    pub addr: u128,
    pub reply_dst: bool,
}

/// OVS's `expectation_create`: the translation an expectation made by a control
/// packet of the parent (`key`, `rev`, `nat`) carries; `reply`: the packet came
/// in the parent's reply direction.
pub(crate) fn expected_nat(key: &Tuple, rev: &Tuple, nat: NatKind, reply: bool) -> ExpectedNat {
    let dnat = nat == NatKind::Dst;
    match (reply, dnat) {
        (true, true) => ExpectedNat { addr: rev.src, reply_dst: false },
        (true, false) => ExpectedNat { addr: rev.dst, reply_dst: true },
        (false, true) => ExpectedNat { addr: key.dst, reply_dst: true },
        (false, false) => ExpectedNat { addr: key.src, reply_dst: false },
    }
}

/// OVS's `conn_not_found` for an expected connection committed with a `nat`: its
/// reply tuple and translation kind.
pub(crate) fn expected_reply(key: &Tuple, e: ExpectedNat) -> (NatKind, Tuple) {
    let mut rev = key.reversed();
    if e.reply_dst {
        rev.dst = e.addr;
        (NatKind::Src, rev)
    } else {
        rev.src = e.addr;
        (NatKind::Dst, rev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(src: u128, dst: u128, sport: u16, dport: u16) -> Tuple {
        Tuple { src, dst, sport, dport, proto: 6, ..Default::default() }
    }

    #[test]
    fn an_snat_parents_active_data_connection_is_translated_back_to_the_client() {
        // client 10.0.0.1 SNATed to 10.0.0.100; PORT from the client (original direction)
        let (c, s, c2) = (0x0A00_0001, 0x0A00_0002, 0x0A00_0064);
        let key = t(c, s, 40000, 21);
        let rev = t(s, c2, 21, 40000);
        let e = expected_nat(&key, &rev, NatKind::Src, false);
        // measured: the data SYN 10.0.0.2:20 -> 10.0.0.100:40000 leaves as -> 10.0.0.1:40000
        let (kind, r) = expected_reply(&t(s, c2, 20, 40000), e);
        assert_eq!((kind, r), (NatKind::Dst, t(c, s, 40000, 20)));
    }

    #[test]
    fn a_parent_without_nat_gives_a_translation_that_changes_nothing() {
        let (c, s) = (0x0A00_0001, 0x0A00_0002);
        let key = t(c, s, 40000, 21);
        let e = expected_nat(&key, &key.reversed(), NatKind::None, false);
        let data = t(s, c, 20, 40000);
        assert_eq!(expected_reply(&data, e), (NatKind::Dst, data.reversed()));
        let e = expected_nat(&key, &key.reversed(), NatKind::None, true);
        let data = t(c, s, 41000, 30000);
        assert_eq!(expected_reply(&data, e), (NatKind::Src, data.reversed()));
    }

    #[test]
    fn a_dnat_parents_passive_data_connection_goes_to_the_real_server() {
        // client 10.0.0.1 -> VIP 10.0.0.50 DNATed to 10.0.0.2; 227 from the server (reply)
        let (c, vip, s) = (0x0A00_0001, 0x0A00_0032, 0x0A00_0002);
        let key = t(c, vip, 40000, 21);
        let rev = t(s, c, 21, 40000);
        let e = expected_nat(&key, &rev, NatKind::Dst, true);
        let (kind, r) = expected_reply(&t(c, vip, 41000, 30000), e);
        assert_eq!((kind, r), (NatKind::Dst, t(s, c, 30000, 41000)));
    }
}
