//! The permission mode a person picks for a session at run time: one of the policy's modes
//! (the defaults by risk) or plan mode, in which the model may only read and must propose. The
//! terminal cycles through them (Shift-Tab) and the editor face offers the same ones; a turn
//! applies the policy mode to its host and plan mode to its session, where the chokepoint
//! enforces it. This module only names the modes; it decides nothing.

use std::fmt;

use bosun_policy::Mode;

/// The permission mode of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PermissionMode {
    /// The model may only read and must propose a plan: every other call is denied by the
    /// chokepoint whatever the rules say.
    Plan,
    /// The policy's `read-only` mode.
    ReadOnly,
    /// The policy's `workspace-write` mode.
    WorkspaceWrite,
    /// The policy's `full` mode.
    Full,
}

impl PermissionMode {
    /// Every mode, in the order Shift-Tab cycles through them.
    pub const CYCLE: [PermissionMode; 4] = [
        PermissionMode::ReadOnly,
        PermissionMode::WorkspaceWrite,
        PermissionMode::Full,
        PermissionMode::Plan,
    ];

    /// The mode after this one in [`PermissionMode::CYCLE`].
    #[must_use]
    pub fn next(self) -> PermissionMode {
        let at = Self::CYCLE.iter().position(|m| *m == self).unwrap_or(0);
        Self::CYCLE[(at + 1) % Self::CYCLE.len()]
    }

    /// The policy mode the host is built with (plan mode reads under `read-only`).
    pub fn policy_mode(self) -> Mode {
        match self {
            Self::Plan | Self::ReadOnly => Mode::ReadOnly,
            Self::WorkspaceWrite => Mode::WorkspaceWrite,
            Self::Full => Mode::Full,
        }
    }

    /// Whether this is plan mode.
    pub fn is_plan(self) -> bool {
        self == Self::Plan
    }

    /// The name shown and accepted (`plan`, or the policy mode's).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            _ => self.policy_mode().as_str(),
        }
    }

    /// The mode `name` names, if any.
    pub fn parse(name: &str) -> Option<PermissionMode> {
        Self::CYCLE.into_iter().find(|m| m.as_str() == name)
    }
}

impl From<Mode> for PermissionMode {
    fn from(mode: Mode) -> Self {
        match mode {
            Mode::ReadOnly => Self::ReadOnly,
            Mode::WorkspaceWrite => Self::WorkspaceWrite,
            Mode::Full => Self::Full,
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_tab_visits_every_mode_and_comes_back() {
        let mut mode = PermissionMode::WorkspaceWrite;
        let mut seen = Vec::new();
        for _ in 0..4 {
            mode = mode.next();
            seen.push(mode.as_str());
        }
        assert_eq!(seen, ["full", "plan", "read-only", "workspace-write"]);
        assert_eq!(PermissionMode::parse("plan"), Some(PermissionMode::Plan));
        assert_eq!(PermissionMode::Plan.policy_mode(), Mode::ReadOnly);
    }
}
