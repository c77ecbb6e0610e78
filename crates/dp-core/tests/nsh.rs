//! NSH (ethertype 0x894f) fields as Open vSwitch 3.1 matches and writes them: parsed
//! from MD type 1 and 2 headers, set_field writes the flow's whole value (seen by
//! later tables) and the bits the header holds. The OVS oracle (`tandem bench
//! of13_oracle --items match:nsh,set:nsh`) checks them against Open vSwitch.

use dp_core::field::Field;
use dp_core::pipeline::*;

fn nsh(md_type: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x89, 0x4f];
    // ver 0, flags 1, ttl 63; length 6 words (MD type 1) or 4 (MD type 2: one 8-byte TLV); next protocol 3
    let len = if md_type == 1 { 6 } else { 4 };
    f.extend_from_slice(&[0x1f, 0xc0 | len, md_type, 3, 0x00, 0x01, 0x00, 0xff]);
    if md_type == 1 {
        for c in [0x11u32, 0x22, 0x33, 0x44] {
            f.extend_from_slice(&c.to_be_bytes());
        }
    } else {
        f.extend_from_slice(&[0, 0, 1, 4, 0xaa, 0xbb, 0xcc, 0xdd]);
    }
    f.resize(60, 0);
    f
}

fn outputs(fates: &[Fate]) -> Vec<(u32, Vec<u8>)> {
    fates.iter().filter_map(|f| if let Fate::Output { port, packet } = f { Some((*port, packet.data.clone())) } else { None }).collect()
}

fn switch(n_tables: usize) -> Pipeline {
    let mut p = Pipeline::new(n_tables);
    for port in 1..=4 {
        p.add_port(port);
    }
    p
}

fn is_nsh() -> FieldMatch {
    FieldMatch::exact(Field::EthType, 0x894f)
}

#[test]
fn md_type_1_fields_are_matched() {
    let mut p = switch(1);
    let m = vec![
        is_nsh(),
        FieldMatch::exact(Field::NshFlags, 1),
        FieldMatch::exact(Field::NshTtl, 63),
        FieldMatch::exact(Field::NshMdtype, 1),
        FieldMatch::exact(Field::NshNp, 3),
        FieldMatch::exact(Field::NshSpi, 0x100),
        FieldMatch::exact(Field::NshSi, 0xff),
        FieldMatch::masked(Field::NshC1, 0x10, 0xf0),
        FieldMatch::exact(Field::NshC4, 0x44),
    ];
    p.add_rule(Rule::new(0, 9, m, Instructions::apply(vec![Action::output(2)]))).unwrap();
    p.add_rule(Rule::new(0, 1, vec![], Instructions::apply(vec![Action::output(3)]))).unwrap();
    assert_eq!(outputs(&p.process(Packet::new(nsh(1)), 1))[0].0, 2);
    // an MD type 2 header's contexts read 0
    assert_eq!(outputs(&p.process(Packet::new(nsh(2)), 1))[0].0, 3);
}

/// set_field keeps the flow's whole value for later tables (8 flag bits; contexts of an
/// MD type 2 header) while the frame gets the bits its header holds.
#[test]
fn set_field_writes_the_flow_and_the_header_bits() {
    for md_type in [1u8, 2] {
        let mut p = switch(2);
        let set = vec![
            Action::SetField { field: Field::NshFlags, value: 6 },
            Action::SetField { field: Field::NshSpi, value: 0xabcdef },
            Action::SetField { field: Field::NshSi, value: 9 },
            Action::SetMasked { field: Field::NshC2, value: 0x0500, mask: 0xff00 },
        ];
        p.add_rule(Rule::new(0, 9, vec![is_nsh()], Instructions { apply: set, goto: Some(1), ..Default::default() })).unwrap();
        let m = vec![is_nsh(), FieldMatch::exact(Field::NshFlags, 6), FieldMatch::exact(Field::NshC2, if md_type == 1 { 0x0522 } else { 0x0500 })];
        p.add_rule(Rule::new(1, 9, m, Instructions::apply(vec![Action::output(2)]))).unwrap();
        p.add_rule(Rule::new(1, 1, vec![], Instructions::apply(vec![Action::output(3)]))).unwrap();
        let out = outputs(&p.process(Packet::new(nsh(md_type)), 1));
        assert_eq!(out.len(), 1);
        let (port, frame) = &out[0];
        assert_eq!(*port, 2, "md type {md_type}");
        let mut want = nsh(md_type);
        want[14] = (want[14] & !0x30) | (2 << 4); // flags 6 & 3
        want[18..22].copy_from_slice(&[0xab, 0xcd, 0xef, 9]);
        if md_type == 1 {
            want[26..30].copy_from_slice(&0x0522u32.to_be_bytes());
        }
        assert_eq!(frame, &want, "md type {md_type}");
    }
}

/// dec_nsh_ttl: the TTL less 1 (later tables see it, the frame carries it); at 0 or 1
/// a packet-in with reason invalid_ttl and nothing more of the list.
#[test]
fn dec_nsh_ttl_decrements_or_sends_invalid_ttl_packet_ins() {
    let mut p = switch(2);
    p.add_rule(Rule::new(0, 9, vec![is_nsh()], Instructions { apply: vec![Action::DecNshTtl, Action::output(1)], goto: Some(1), ..Default::default() }))
        .unwrap();
    p.add_rule(Rule::new(1, 9, vec![is_nsh(), FieldMatch::exact(Field::NshTtl, 62)], Instructions::apply(vec![Action::output(2)]))).unwrap();
    let fates = p.process(Packet::new(nsh(1)), 3);
    let out = outputs(&fates);
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!((out[0].1[14], out[0].1[15] >> 6), (0x1f, 2), "ttl 62 = 0b111110 in the header"); // (0x1f: ttl's top 4 bits)
    for ttl in [0u8, 1] {
        let mut f = nsh(1);
        f[14] = (f[14] & 0xf0) | (ttl >> 2);
        f[15] = (f[15] & 0x3f) | (ttl << 6);
        let fates = p.process(Packet::new(f), 3);
        assert!(outputs(&fates).is_empty(), "ttl {ttl}");
        assert!(matches!(fates.as_slice(), [Fate::Controller { reason: ControllerReason::InvalidTtl, .. }]), "ttl {ttl}: {fates:?}");
    }
}
