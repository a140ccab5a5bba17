//! `restrict_self`: the model binds itself. A promise is a policy rule that can only make
//! decisions stricter (`ask`, `review` or `deny`); it binds from the very next call to the end of
//! the session and cannot be withdrawn.

use async_trait::async_trait;
use bosun_core::{Decision, ErrorCode, Risk, SpecError, ToolError, ToolName, ToolOutput, ToolSpec};
use bosun_policy::{Promise, Rule};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::tool::{Tool, ToolContext};

/// The `restrict_self` tool.
#[derive(Debug)]
pub struct RestrictSelf {
    spec: ToolSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    action: String,
    decision: Decision,
    reason: Option<String>,
    path: Option<String>,
    host: Option<String>,
    program: Option<String>,
}

impl RestrictSelf {
    /// Builds the tool.
    pub fn new() -> Result<Self, SpecError> {
        let spec = ToolSpec::builder(
            ToolName::new("restrict_self")?,
            "Promise to restrict yourself for the rest of this session: from the next call on, calls \
             matching `action` (a policy action such as builtin.tool.run_command or fs.write, globs \
             allowed) are asked about, reviewed or denied. A promise can only make policy stricter \
             and cannot be withdrawn.",
        )
        .risk(Risk::Read)
        .input_schema(json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "minLength": 1, "maxLength": 256},
                "decision": {"type": "string", "enum": ["ask", "review", "deny"]},
                "reason": {"type": "string", "maxLength": 500},
                "path": {"type": "string", "minLength": 1, "maxLength": 1024},
                "host": {"type": "string", "minLength": 1, "maxLength": 255},
                "program": {"type": "string", "minLength": 1, "maxLength": 512}
            },
            "required": ["action", "decision"],
            "additionalProperties": false
        }))
        .build_builtin()?;
        Ok(Self { spec })
    }
}

#[async_trait]
impl Tool for RestrictSelf {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self) -> &str {
        "builtin.tool.restrict_self"
    }

    fn summarize(&self, input: &Value) -> String {
        format!(
            "promise: {} → {}",
            input.get("action").and_then(Value::as_str).unwrap_or("?"),
            input.get("decision").and_then(Value::as_str).unwrap_or("?")
        )
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = serde_json::from_value(input).map_err(|e| {
            ToolError::new(ErrorCode::InvalidInput, format!("restrict_self input: {e}"))
        })?;
        let mut rule = Rule::new(input.action.clone(), input.decision);
        if let Some(path) = input.path {
            rule = rule.path(path);
        }
        if let Some(host) = input.host {
            rule = rule.host(host);
        }
        if let Some(program) = input.program {
            rule = rule.program(program);
        }
        if let Some(reason) = input.reason {
            rule = rule.reason(reason);
        }
        let promise = Promise::new(rule)
            .map_err(|e| ToolError::new(ErrorCode::InvalidInput, e.to_string()))?;
        ctx.session.promise(promise);
        Ok(ToolOutput::new(json!({
            "promised": {"action": input.action, "decision": input.decision},
            "binds": "every later call of this session"
        })))
    }
}
