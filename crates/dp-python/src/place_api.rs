//! Bindings for dp-place's multi-sNIC fill search (`dp_place::fill`), called
//! by `tandem.placement.uno.fill`. Conversions only.

use dp_place::fill::{self, Edge, End, Limits, Pcie, Problem};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::time::{Duration, Instant};

fn end(x: i64) -> End {
    if x >= 0 { End::Node(x as usize) } else { End::At((-x - 1) as usize) }
}

/// Search a fill (see dp_place::fill). Edge ends: i ≥ 0 the searched node i,
/// −1 − l the fixed location l (0 host, k sNIC k). Returns (location per
/// searched node or None, value, complete, search nodes).
#[pyfunction]
#[pyo3(signature = (caps, pcie, mode, base_up, base_down, uses, values, host_ok, src, dst, gbps, ratio, need, improve_by, enough=f64::INFINITY, seconds=None, max_nodes=None))]
#[allow(clippy::too_many_arguments)]
fn uno_fill_search(
    py: Python<'_>,
    caps: Vec<u64>,
    pcie: Vec<f64>,
    mode: &str,
    base_up: Vec<f64>,
    base_down: Vec<f64>,
    uses: Vec<u64>,
    values: Vec<f64>,
    host_ok: Vec<bool>,
    src: Vec<i64>,
    dst: Vec<i64>,
    gbps: Vec<f64>,
    ratio: f64,
    need: f64,
    improve_by: f64,
    enough: f64,
    seconds: Option<f64>,
    max_nodes: Option<u64>,
) -> PyResult<(Option<Vec<usize>>, f64, bool, u64)> {
    let mode = match mode {
        "duplex" => Pcie::Duplex,
        "shared" => Pcie::Shared,
        "paper" => Pcie::Paper,
        m => return Err(PyValueError::new_err(format!("pcie mode {m:?}: one of duplex, shared, paper"))),
    };
    if src.len() != dst.len() || src.len() != gbps.len() {
        return Err(PyValueError::new_err("src, dst and gbps differ in length"));
    }
    let edges = src.iter().zip(&dst).zip(&gbps).map(|((&s, &d), &t)| Edge { src: end(s), dst: end(d), gbps: t }).collect();
    let p = Problem { caps, pcie, mode, base_up, base_down, uses, values, host_ok, edges, ratio };
    let deadline = seconds.map(|s| Instant::now() + Duration::from_secs_f64(s.clamp(0.0, 1e9)));
    let out = py.detach(|| fill::search(&p, need, improve_by, enough, Limits { deadline, max_nodes }));
    let out = out.map_err(PyValueError::new_err)?;
    Ok((out.best, out.value, out.complete, out.nodes))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(uno_fill_search, m)?)?;
    Ok(())
}
