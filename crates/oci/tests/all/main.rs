//! The integration tests of `bosun-oci`, against real parts: Debian's `docker-registry` (the
//! CNCF distribution registry) started on a loopback port, Python's ORAS SDK as the other
//! client, and scripted loopback servers for the hostile cases a real registry will not play.
//! `scripts/oci-peers` installs the peers; a missing peer fails the test, naming it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fake;
mod hostile;
mod interop;
mod peers;
mod registry;

use bosun_oci::Annotations;

/// A small component: one imported function, a `description` and a `version` metadata
/// section, and `padding` bytes in a custom section (to make a large blob).
pub fn component(description: &str, padding: usize) -> Vec<u8> {
    use wasm_encoder::{
        Component, ComponentImportSection, ComponentTypeRef, ComponentTypeSection, CustomSection,
        PrimitiveValType,
    };
    let mut types = ComponentTypeSection::new();
    types
        .function()
        .params([("message", PrimitiveValType::String)])
        .result(None);
    let mut imports = ComponentImportSection::new();
    imports.import("host-log", ComponentTypeRef::Func(0));
    let mut component = Component::new();
    component.section(&types);
    component.section(&imports);
    component.section(&CustomSection {
        name: "description".into(),
        data: description.as_bytes().into(),
    });
    component.section(&CustomSection {
        name: "version".into(),
        data: b"1.0.0".as_slice().into(),
    });
    if padding > 0 {
        // Incompressible bytes, as a real binary's code mostly is.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let bytes: Vec<u8> = (0..padding)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        component.section(&CustomSection {
            name: "padding".into(),
            data: bytes.into(),
        });
    }
    component.finish()
}

/// Annotations with a fixed creation time, so digests are repeatable.
pub fn fixed_annotations() -> Annotations {
    [(
        "org.opencontainers.image.created".to_owned(),
        "2026-12-01T00:00:00Z".to_owned(),
    )]
    .into_iter()
    .collect()
}
