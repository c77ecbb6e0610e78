//! Bindings for dp-nf: `tandem._dp.Nf` (one NF instance driven from Python:
//! frames in, fate and frame out, state export/import, counters, declared
//! fields) and the wall-clock loops of `tandem bench nfs`.

use dp_nf::{bench, make_nf_config, FlowFilter, NetworkFunction, NfVerdict, KINDS};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

fn err(e: impl Into<String>) -> PyErr {
    PyValueError::new_err(e.into())
}

/// One network function. `Nf(kind, config_json="", ports=2)`.
#[pyclass(module = "tandem._dp", unsendable)]
pub struct Nf {
    inner: Box<dyn NetworkFunction>,
}

#[pymethods]
impl Nf {
    #[new]
    #[pyo3(signature = (kind, config = "", ports = 2))]
    fn new(kind: &str, config: &str, ports: u8) -> PyResult<Self> {
        Ok(Nf { inner: make_nf_config(kind, ports, config).map_err(err)? })
    }

    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    /// Process one frame: returns ("forward", port, frame) or ("drop", reason, frame).
    #[pyo3(signature = (frame, in_port = 0, now_ps = 0))]
    fn process<'py>(&mut self, py: Python<'py>, frame: &[u8], in_port: u8, now_ps: u64) -> PyResult<(String, Py<PyAny>, Bound<'py, PyBytes>)> {
        let mut f = frame.to_vec();
        let v = self.inner.process(&mut f, in_port, now_ps);
        let out = PyBytes::new(py, &f);
        Ok(match v {
            NfVerdict::Forward { port } => ("forward".into(), port.into_pyobject(py)?.into_any().unbind(), out),
            NfVerdict::Drop { reason } => ("drop".into(), reason.into_pyobject(py)?.into_any().unbind(), out),
        })
    }

    fn export_state<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.export_state())
    }

    fn import_state(&mut self, blob: &[u8]) -> PyResult<()> {
        self.inner.import_state(blob).map_err(|e| err(e.0))
    }

    /// Flows matching `filter` (`src=10.0.0.0/8,dport=80,proto=6,bidir`; "" = all).
    #[pyo3(signature = (filter = "", shared = true))]
    fn export_flows<'py>(&self, py: Python<'py>, filter: &str, shared: bool) -> PyResult<Bound<'py, PyBytes>> {
        let f = FlowFilter::parse(filter).map_err(err)?;
        Ok(PyBytes::new(py, &self.inner.export_flows(&f, shared)))
    }

    fn import_flows(&mut self, blob: &[u8]) -> PyResult<usize> {
        self.inner.import_flows(blob).map_err(|e| err(e.0))
    }

    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.inner.counters() {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    fn flow_count(&self) -> usize {
        self.inner.flow_count()
    }

    /// {"reads": [...], "writes": [...], "drops": bool, "reencapsulates": bool}
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let f = self.inner.fields();
        let d = PyDict::new(py);
        d.set_item("reads", f.reads.to_vec())?;
        d.set_item("writes", f.writes.to_vec())?;
        d.set_item("drops", f.drops)?;
        d.set_item("reencapsulates", f.reencapsulates)?;
        Ok(d)
    }

    fn command(&mut self, cmd: &str) -> PyResult<String> {
        self.inner.command(cmd).map_err(err)
    }
}

/// Recompute a state blob's CRC after editing it (tests forge headers with it).
#[pyfunction]
fn nf_blob_reseal<'py>(py: Python<'py>, blob: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    if blob.len() < 4 {
        return Err(err("blob shorter than its CRC"));
    }
    let mut b = blob.to_vec();
    dp_nf::state::reseal(&mut b);
    Ok(PyBytes::new(py, &b))
}

/// Every NF kind `Nf` accepts.
#[pyfunction]
fn nf_kinds() -> Vec<&'static str> {
    KINDS.to_vec()
}

/// Check an NF configuration; returns None or the error text.
#[pyfunction]
#[pyo3(signature = (kind, config, ports = 2))]
fn nf_check_config(kind: &str, config: &str, ports: u8) -> Option<String> {
    make_nf_config(kind, ports, config).err()
}

/// (wall Gbps, CPU-time Gbps) per repetition of SECGW decrypt (optionally + L7FW) at `frame_len`.
#[pyfunction]
#[pyo3(signature = (cipher = "aes128gcm", frame_len = 1400, packets = 200_000, reps = 5, with_l7fw = false))]
fn nf_bench_secgw_decrypt(cipher: &str, frame_len: usize, packets: usize, reps: usize, with_l7fw: bool) -> PyResult<Vec<(f64, f64)>> {
    bench::secgw_decrypt(cipher, frame_len, packets, reps, with_l7fw).map_err(err)
}

/// Gbps per repetition of SECGW encrypt at `frame_len` (inner frame bytes).
#[pyfunction]
#[pyo3(signature = (cipher = "aes128gcm", frame_len = 1400, packets = 200_000, reps = 5))]
fn nf_bench_secgw_encrypt(cipher: &str, frame_len: usize, packets: usize, reps: usize) -> PyResult<Vec<f64>> {
    bench::secgw_encrypt(cipher, frame_len, packets, reps).map_err(err)
}

/// Mpps per repetition of one NF at `frame_len` over `flows` flows.
#[pyfunction]
#[pyo3(signature = (kind, frame_len = 64, flows = 1000, packets = 2_000_000, reps = 5))]
fn nf_bench_mpps(kind: &str, frame_len: usize, flows: u32, packets: usize, reps: usize) -> PyResult<Vec<f64>> {
    bench::nf_mpps(kind, frame_len, flows, packets, reps).map_err(err)
}

/// (seconds per repetition, flows, bytes per flow, shared bytes) for export + import.
#[pyfunction]
#[pyo3(signature = (kind, flows = 1000, reps = 5))]
fn nf_bench_state(kind: &str, flows: usize, reps: usize) -> PyResult<(Vec<f64>, usize, f64, usize)> {
    let m = bench::state_move(kind, flows, reps).map_err(err)?;
    Ok((m.seconds, m.flows, m.bytes_per_flow, m.shared_bytes))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Nf>()?;
    m.add_function(wrap_pyfunction!(nf_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(nf_blob_reseal, m)?)?;
    m.add_function(wrap_pyfunction!(nf_check_config, m)?)?;
    m.add_function(wrap_pyfunction!(nf_bench_secgw_decrypt, m)?)?;
    m.add_function(wrap_pyfunction!(nf_bench_secgw_encrypt, m)?)?;
    m.add_function(wrap_pyfunction!(nf_bench_mpps, m)?)?;
    m.add_function(wrap_pyfunction!(nf_bench_state, m)?)?;
    Ok(())
}
