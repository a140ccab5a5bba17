//! The engine's built-in modules (zod, the layer's runtime, the `node:` modules) and the
//! prelude's scripts are compiled to bytecode without their source text (`crates/js/engine/build.rs`), so no instance and no
//! snapshot carries a copy of it; the plugin's own code keeps its source, and the built-ins keep
//! their line numbers.

use bosun_sandbox::Grants;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{PluginSource, call};

/// A tool that reports what `Function.prototype.toString` shows of zod, the layer, a `node:`
/// module, the prelude (`fetch`) and the plugin's own code, and the stack of an error its call
/// raises.
const PROBE: &str = r#"import { z } from "zod";
import { join } from "node:path";

function ownFunction(a) { return a + 1; }

export default function activate(api) {
  api.registerTool({ name: "probe", description: "Reports function sources.", risk: "read",
    inputSchema: api.z.object({}),
    execute: async () => {
      const source = (f) => Function.prototype.toString.call(f);
      let stack = "";
      try { z.string().parse(42); } catch (e) { stack = String(e.stack); }
      return { ok: true, truncated: false, output: JSON.stringify({
        zod: source(z.object),
        layer: source(api.registerTool),
        node: source(join),
        prelude: source(fetch),
        own: source(ownFunction),
        stack,
      }) };
    } });
}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_in_modules_and_the_prelude_carry_no_source_text_and_keep_their_line_numbers() {
    let mut plugin = PluginSource::forge("probe", &["tools:register"], PROBE)
        .activate_with(Grants::default())
        .await
        .unwrap();
    let outcome = call(&mut plugin, "probe", json!({})).await;
    let bosun_js::ToolOutcome::Ok {
        output: Value::String(text),
        ..
    } = outcome
    else {
        panic!("expected text, got {outcome:?}");
    };
    let seen: Value = serde_json::from_str(&text).unwrap();
    // zod is minified: its functions' names are its bundler's.
    for module in ["zod", "layer", "node", "prelude"] {
        let shown = seen[module].as_str().unwrap();
        assert!(
            shown.starts_with("function ") && shown.ends_with("() {\n    [native code]\n}"),
            "{module}: {seen}"
        );
    }
    assert_eq!(
        seen["layer"],
        "function registerTool() {\n    [native code]\n}"
    );
    assert_eq!(seen["prelude"], "function fetch() {\n    [native code]\n}");
    assert_eq!(seen["own"], "function ownFunction(a) { return a + 1; }");
    // A stack through the layer still names its lines: `(bosun:runtime:<line>:<column>)`.
    let stack = seen["stack"].as_str().unwrap();
    let layer_frame = |frame: &str| {
        frame
            .split_once("(bosun:runtime:")
            .and_then(|(_, place)| place.strip_suffix(')'))
            .and_then(|place| place.split_once(':'))
            .is_some_and(|(line, column)| {
                line.parse::<u32>().is_ok_and(|n| n > 0) && column.parse::<u32>().is_ok()
            })
    };
    assert!(stack.lines().any(layer_frame), "{stack}");
}
