//! What the chokepoint benches share: a no-op tool and a 1,000-rule policy (900 exact actions,
//! 99 action globs and one catch-all glob).

#![allow(clippy::unwrap_used)]

use async_trait::async_trait;
use bosun_core::{ToolError, ToolOutput, ToolSpec};
use bosun_host::{Tool, ToolContext};
use bosun_policy::{Mode, Policy, PolicyFile, Source};
use serde_json::json;

pub struct Noop {
    pub spec: ToolSpec,
}

#[async_trait]
impl Tool for Noop {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn action(&self) -> &str {
        "builtin.tool.noop"
    }
    async fn call(
        &self,
        _input: serde_json::Value,
        _ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::new(json!({"ok": 1})))
    }
}

pub fn policy_with_1000_rules() -> Policy {
    let mut text = String::from("[policy]\n");
    for i in 0..900 {
        text.push_str(&format!(
            "[[policy.rules]]\naction = \"plugin.p{i}.tool.t{i}\"\ndecision = \"ask\"\n"
        ));
    }
    for i in 0..99 {
        text.push_str(&format!(
            "[[policy.rules]]\naction = \"plugin.g{i}.tool.*\"\ndecision = \"deny\"\n"
        ));
    }
    text.push_str("[[policy.rules]]\naction = \"builtin.tool.*\"\ndecision = \"allow\"\n");
    let file = PolicyFile::parse(&text).unwrap();
    Policy::builder(Mode::WorkspaceWrite)
        .user(
            file,
            Source {
                name: "bench.toml".into(),
                text: Some(text),
            },
        )
        .unwrap()
        .build()
}
