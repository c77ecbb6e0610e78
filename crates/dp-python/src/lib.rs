//! tandem._dp — PyO3 wrappers over dp-core, dp-emu, dp-nf and dp-place. Conversions
//! only: no data-plane logic lives here. Each area registers its own functions.

use pyo3::prelude::*;

mod acl_api;
mod core_api;
mod emu_api;
mod nf_api;
mod place_api;

#[pymodule]
fn _dp(m: &Bound<'_, PyModule>) -> PyResult<()> {
    core_api::register(m)?;
    acl_api::register(m)?;
    emu_api::register(m)?;
    nf_api::register(m)?;
    place_api::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
