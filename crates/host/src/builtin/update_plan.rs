//! `update_plan`: the model keeps a plan of its work, in Codex's shape — a list of steps, each
//! `pending`, `in_progress` or `completed`, at most one in progress, and an optional
//! explanation of what changed. Each call replaces the whole plan. The tool touches nothing:
//! its result is the plan as accepted, which the trace records and the faces show (the
//! terminal's transcript, `bosun run`, an editor's `plan` update). [`Plan`] is the one reading
//! of that result for all of them.

use async_trait::async_trait;
use bosun_core::{ErrorCode, Risk, SpecError, ToolError, ToolName, ToolOutput, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::tool::{Tool, ToolContext};

/// The tool's name.
pub const NAME: &str = "update_plan";

/// Most steps in a plan.
pub const MAX_STEPS: usize = 50;

/// Most characters of a step.
pub const MAX_STEP_CHARS: usize = 500;

/// Most characters of an explanation.
pub const MAX_EXPLANATION_CHARS: usize = 2000;

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Being worked on (at most one step at a time).
    InProgress,
    /// Done.
    Completed,
}

impl StepStatus {
    /// The mark a terminal shows before the step.
    pub fn mark(self) -> &'static str {
        match self {
            Self::Pending => "○",
            Self::InProgress => "→",
            Self::Completed => "✓",
        }
    }
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// What the step does, in a sentence.
    pub step: String,
    /// Where it stands.
    pub status: StepStatus,
}

/// The plan as the model last set it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Why the plan changed, when the model said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The steps, in order.
    pub plan: Vec<PlanStep>,
}

impl Plan {
    /// The plan a completed call of `tool` returned, when it is an `update_plan` call (what the
    /// faces read from a `tool.completed` event).
    pub fn from_result(tool: &str, output: &Value) -> Option<Plan> {
        if tool != NAME {
            return None;
        }
        Plan::deserialize(output).ok()
    }

    /// How many steps are completed.
    pub fn completed(&self) -> usize {
        self.plan
            .iter()
            .filter(|s| s.status == StepStatus::Completed)
            .count()
    }

    /// `2 of 5 steps done`.
    pub fn progress(&self) -> String {
        format!("{} of {} steps done", self.completed(), self.plan.len())
    }

    fn check(&self) -> Result<(), ToolError> {
        let invalid = |message: String| ToolError::new(ErrorCode::InvalidInput, message);
        if self.plan.is_empty() || self.plan.len() > MAX_STEPS {
            return Err(invalid(format!(
                "a plan has 1 to {MAX_STEPS} steps; this one has {}",
                self.plan.len()
            )));
        }
        for (n, step) in self.plan.iter().enumerate() {
            let chars = step.step.trim().chars().count();
            if chars == 0 || chars > MAX_STEP_CHARS {
                return Err(invalid(format!(
                    "step {} must say what it does in 1 to {MAX_STEP_CHARS} characters",
                    n + 1
                )));
            }
        }
        let working = self
            .plan
            .iter()
            .filter(|s| s.status == StepStatus::InProgress)
            .count();
        if working > 1 {
            return Err(invalid(format!(
                "{working} steps are in_progress: mark at most one step in_progress at a time"
            )));
        }
        if self
            .explanation
            .as_ref()
            .is_some_and(|e| e.chars().count() > MAX_EXPLANATION_CHARS)
        {
            return Err(invalid(format!(
                "keep the explanation under {MAX_EXPLANATION_CHARS} characters"
            )));
        }
        Ok(())
    }
}

/// The `update_plan` tool.
#[derive(Debug)]
pub struct UpdatePlan {
    spec: ToolSpec,
}

impl UpdatePlan {
    /// Builds the tool.
    pub fn new() -> Result<Self, SpecError> {
        let spec = ToolSpec::builder(
            ToolName::new(NAME)?,
            "Keep a plan of your work and show it to the person: the whole list of steps, each \
             pending, in_progress or completed (at most one in_progress), with an optional \
             explanation of what changed. Call it when a task has several steps, again as each \
             step starts and ends; each call replaces the plan. It changes nothing else.",
        )
        .risk(Risk::Read)
        .input_schema(json!({
            "type": "object",
            "properties": {
                "explanation": {"type": "string", "maxLength": MAX_EXPLANATION_CHARS},
                "plan": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_STEPS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": {"type": "string", "minLength": 1, "maxLength": MAX_STEP_CHARS},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["step", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["plan"],
            "additionalProperties": false
        }))
        .build_builtin()?;
        Ok(Self { spec })
    }
}

#[async_trait]
impl Tool for UpdatePlan {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn action(&self) -> &str {
        "builtin.tool.update_plan"
    }

    fn summarize(&self, input: &Value) -> String {
        match Plan::deserialize(input) {
            Ok(plan) => format!("plan: {}", plan.progress()),
            Err(_) => "plan".to_owned(),
        }
    }

    async fn call(&self, input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut plan = Plan::deserialize(&input).map_err(|e| {
            ToolError::new(
                ErrorCode::InvalidInput,
                format!("update_plan input: {e}; follow the tool's input schema"),
            )
        })?;
        for step in &mut plan.plan {
            step.step = step.step.trim().to_owned();
        }
        plan.explanation = plan
            .explanation
            .map(|e| e.trim().to_owned())
            .filter(|e| !e.is_empty());
        plan.check()?;
        let value = serde_json::to_value(&plan)
            .map_err(|e| ToolError::new(ErrorCode::InvalidInput, format!("the plan: {e}")))?;
        Ok(ToolOutput::new(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(steps: &[(&str, StepStatus)]) -> Plan {
        Plan {
            explanation: None,
            plan: steps
                .iter()
                .map(|(s, status)| PlanStep {
                    step: (*s).to_owned(),
                    status: *status,
                })
                .collect(),
        }
    }

    #[test]
    fn a_plan_is_checked_and_read_back_from_its_result() {
        use StepStatus::*;
        let good = plan(&[("Read", Completed), ("Fix", InProgress), ("Test", Pending)]);
        assert!(good.check().is_ok());
        assert_eq!(good.progress(), "1 of 3 steps done");
        let value = serde_json::to_value(&good).unwrap();
        assert_eq!(Plan::from_result(NAME, &value), Some(good));
        assert_eq!(Plan::from_result("read_file", &value), None);

        let two = plan(&[("Fix", InProgress), ("Test", InProgress)]);
        let err = two.check().unwrap_err();
        assert!(err.message.contains("at most one"), "{}", err.message);
        assert!(plan(&[]).check().is_err());
        assert!(plan(&[("  ", Pending)]).check().is_err());
    }
}
