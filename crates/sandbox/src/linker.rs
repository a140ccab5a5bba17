//! The one linker every instance is made from: WASI 0.2 (preopens and environment are empty
//! unless the grants fill them), `wasi:http` through the guard, `bosun:plugin/host`, and the
//! JavaScript engine's `bosun:js/runtime`.

use wasmtime::component::HasSelf;

use crate::host::HostState;
use crate::js;
use crate::store::StoreState;
use crate::wit::v1::Plugin;

/// Adds everything a plugin may import to the linker: WASI 0.2 (whose filesystem, sockets and
/// environment are empty unless the grants fill them), `wasi:http` through the guard, and
/// `bosun:plugin/host`.
pub(crate) fn add_to_linker(
    linker: &mut wasmtime::component::Linker<StoreState>,
) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
    Plugin::add_to_linker::<StoreState, HasSelf<HostState>>(linker, |state| &mut state.host)?;
    js::bindings::bosun::js::runtime::add_to_linker::<StoreState, HasSelf<StoreState>>(
        linker,
        |state| state,
    )?;
    Ok(())
}
