//! The engine's built-in modules: name → source. Read by the build script (`build.rs`), which
//! compiles each to QuickJS bytecode without its source text; the engine embeds only that
//! bytecode (`loader.rs`). `js/test/harness.mjs` reads the prelude's list and the
//! `bosun:runtime` list below.

/// Every built-in module a plugin or the layer can import, with its source.
pub const BUILTINS: [(&str, &str); 15] = [
    ("zod", include_str!("../js/zod.js")),
    // One module from pieces that share its scope (js/runtime/shared.js says why).
    (
        "bosun:runtime",
        concat!(
            include_str!("../js/runtime/shared.js"),
            include_str!("../js/runtime/forge.js"),
            include_str!("../js/runtime/triggerfish.js"),
            include_str!("../js/runtime/engine.js"),
        ),
    ),
    ("bosun:internal", include_str!("../js/modules/internal.js")),
    (
        "bosun:plugin-dir",
        include_str!("../js/modules/plugin_dir.js"),
    ),
    ("node:buffer", include_str!("../js/modules/buffer.js")),
    (
        "node:child_process",
        include_str!("../js/modules/child_process.js"),
    ),
    ("node:dns", include_str!("../js/modules/dns.js")),
    (
        "node:dns/promises",
        include_str!("../js/modules/dns_promises.js"),
    ),
    ("node:fs", include_str!("../js/modules/fs.js")),
    (
        "node:fs/promises",
        include_str!("../js/modules/fs_promises.js"),
    ),
    ("node:net", include_str!("../js/modules/net.js")),
    ("node:path", include_str!("../js/modules/path.js")),
    (
        "node:timers/promises",
        include_str!("../js/modules/timers_promises.js"),
    ),
    ("node:url", include_str!("../js/modules/url.js")),
    ("node:path/posix", include_str!("../js/modules/path.js")),
];

/// The prelude's files, evaluated in this order as classic scripts before `bosun:runtime`: each
/// takes what it needs from the files before it (js/prelude/shared.js says how).
/// test/harness.mjs reads this list.
pub const PRELUDE: [(&str, &str); 24] = [
    ("prelude/shared.js", include_str!("../js/prelude/shared.js")),
    ("prelude/bytes.js", include_str!("../js/prelude/bytes.js")),
    (
        "prelude/inspect.js",
        include_str!("../js/prelude/inspect.js"),
    ),
    (
        "prelude/console.js",
        include_str!("../js/prelude/console.js"),
    ),
    (
        "prelude/dom_exception.js",
        include_str!("../js/prelude/dom_exception.js"),
    ),
    ("prelude/events.js", include_str!("../js/prelude/events.js")),
    ("prelude/timers.js", include_str!("../js/prelude/timers.js")),
    ("prelude/io.js", include_str!("../js/prelude/io.js")),
    ("prelude/abort.js", include_str!("../js/prelude/abort.js")),
    (
        "prelude/cancellation.js",
        include_str!("../js/prelude/cancellation.js"),
    ),
    (
        "prelude/encoding.js",
        include_str!("../js/prelude/encoding.js"),
    ),
    ("prelude/url.js", include_str!("../js/prelude/url.js")),
    (
        "prelude/headers.js",
        include_str!("../js/prelude/headers.js"),
    ),
    ("prelude/body.js", include_str!("../js/prelude/body.js")),
    (
        "prelude/request.js",
        include_str!("../js/prelude/request.js"),
    ),
    (
        "prelude/response.js",
        include_str!("../js/prelude/response.js"),
    ),
    ("prelude/fetch.js", include_str!("../js/prelude/fetch.js")),
    ("prelude/buffer.js", include_str!("../js/prelude/buffer.js")),
    (
        "prelude/structured_clone.js",
        include_str!("../js/prelude/structured_clone.js"),
    ),
    (
        "prelude/performance.js",
        include_str!("../js/prelude/performance.js"),
    ),
    (
        "prelude/process.js",
        include_str!("../js/prelude/process.js"),
    ),
    ("prelude/intl.js", include_str!("../js/prelude/intl.js")),
    (
        "prelude/code_from_strings.js",
        include_str!("../js/prelude/code_from_strings.js"),
    ),
    (
        "prelude/publish.js",
        include_str!("../js/prelude/publish.js"),
    ),
];
