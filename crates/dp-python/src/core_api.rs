//! Bindings for dp-core (parsing, classifier, pipeline).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn mac(b: &[u8; 6]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(":")
}

fn ipv4(b: &[u8; 4]) -> String {
    format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
}

/// Parse an Ethernet frame (bytes) and return its header fields as a dict.
/// Raises ValueError naming the layer when the frame cannot be parsed.
#[pyfunction]
fn parse_frame<'py>(py: Python<'py>, frame: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let h = dp_core::parse_frame(frame).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let d = PyDict::new(py);
    d.set_item("eth_dst", mac(&h.eth_dst))?;
    d.set_item("eth_src", mac(&h.eth_src))?;
    d.set_item("eth_type", h.eth_type)?;
    let vlans: Vec<(u16, u8, u16)> = h.vlans.iter().map(|v| (v.tpid, v.pcp, v.vid)).collect();
    d.set_item("vlans", vlans)?;
    d.set_item("ipv4_src", h.ipv4_src.as_ref().map(ipv4))?;
    d.set_item("ipv4_dst", h.ipv4_dst.as_ref().map(ipv4))?;
    d.set_item("ip_proto", h.ip_proto)?;
    d.set_item("ip_dscp", h.ip_dscp)?;
    d.set_item("ip_ttl", h.ip_ttl)?;
    d.set_item("l4_src", h.l4_src)?;
    d.set_item("l4_dst", h.l4_dst)?;
    d.set_item("truncated", h.truncated)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_frame, m)?)?;
    Ok(())
}
