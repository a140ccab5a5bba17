//! Permission modes: the defaults a decision starts from, by risk. A mode is the floor of the
//! table, not a rule file: it never sees a scope and knows nothing of actions whose risk is not
//! known (those fall back to `ask` in every mode).

use std::fmt;
use std::str::FromStr;

use bosun_core::{Capability, Decision, Risk};
use serde::{Deserialize, Serialize};

use crate::PolicyError;

/// How much a session may do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Reads only; everything else is denied unless a rule says otherwise.
    ReadOnly,
    /// Reads and writes in the workspace; processes, network, models and secrets ask.
    #[default]
    WorkspaceWrite,
    /// Everything whose risk is known is allowed.
    Full,
}

impl Mode {
    /// Every mode, strictest first.
    pub const ALL: [Mode; 3] = [Mode::ReadOnly, Mode::WorkspaceWrite, Mode::Full];

    /// The name as config spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::Full => "full",
        }
    }

    /// The default for an action of the given risk; `None` (risk not known) is the fallback `ask`.
    pub fn default_for(self, risk: Option<Risk>) -> Decision {
        risk.map_or(Decision::Ask, |risk| self.default_for_risk(risk))
    }

    /// The default for an action of a known risk.
    pub fn default_for_risk(self, risk: Risk) -> Decision {
        match (self, risk) {
            (_, Risk::Read) | (Self::Full, _) => Decision::Allow,
            (Self::ReadOnly, _) => Decision::Deny,
            (Self::WorkspaceWrite, Risk::Write) => Decision::Allow,
            (Self::WorkspaceWrite, Risk::Process | Risk::Network | Risk::Model) => Decision::Ask,
        }
    }

    /// The default for reading a named secret (`secret.<name>`), which has no risk of its own.
    pub fn default_for_secret(self) -> Decision {
        match self {
            Self::ReadOnly => Decision::Deny,
            Self::WorkspaceWrite => Decision::Ask,
            Self::Full => Decision::Allow,
        }
    }

    /// The default for using a capability.
    pub fn default_for_capability(self, capability: &Capability) -> Decision {
        match capability_risk(capability) {
            Some(risk) => self.default_for_risk(risk),
            None => self.default_for_secret(),
        }
    }
}

/// The risk of a capability; `None` for `secret.<name>`, whose default is its own
/// ([`Mode::default_for_secret`]).
pub fn capability_risk(capability: &Capability) -> Option<Risk> {
    match capability {
        Capability::FsRead => Some(Risk::Read),
        Capability::FsWrite => Some(Risk::Write),
        Capability::ProcessSpawn => Some(Risk::Process),
        Capability::NetHttp => Some(Risk::Network),
        Capability::ModelCall => Some(Risk::Model),
        Capability::Secret(_) => None,
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = PolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|mode| mode.as_str() == s)
            .ok_or_else(|| PolicyError::UnknownMode(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Decision::{Allow, Ask, Deny};
    use pretty_assertions::assert_eq;

    #[test]
    fn defaults_by_risk_match_the_table() {
        let table: Vec<(Mode, [Decision; 5], Decision)> = vec![
            (Mode::ReadOnly, [Allow, Deny, Deny, Deny, Deny], Deny),
            (Mode::WorkspaceWrite, [Allow, Allow, Ask, Ask, Ask], Ask),
            (Mode::Full, [Allow, Allow, Allow, Allow, Allow], Allow),
        ];
        for (mode, by_risk, secret) in table {
            let got: Vec<Decision> = Risk::ALL
                .iter()
                .map(|r| mode.default_for(Some(*r)))
                .collect();
            assert_eq!(got, by_risk.to_vec(), "{mode}");
            assert_eq!(mode.default_for_secret(), secret, "{mode}");
            assert_eq!(
                mode.default_for(None),
                Ask,
                "{mode}: unknown risk falls back to ask"
            );
        }
    }

    #[test]
    fn capabilities_map_to_risks() {
        let mode = Mode::WorkspaceWrite;
        for (name, decision) in [
            ("fs.read", Allow),
            ("fs.write", Allow),
            ("process.spawn", Ask),
            ("net.http", Ask),
            ("model.call", Ask),
            ("secret.GH_TOKEN", Ask),
        ] {
            let capability: Capability = name.parse().unwrap();
            assert_eq!(mode.default_for_capability(&capability), decision, "{name}");
        }
        assert_eq!(
            Mode::ReadOnly.default_for_capability(&Capability::Secret("K".into())),
            Deny
        );
    }

    #[test]
    fn names_round_trip_through_fromstr_display_and_serde() {
        for mode in Mode::ALL {
            assert_eq!(mode.to_string().parse::<Mode>().unwrap(), mode);
            let quoted = format!("\"{mode}\"");
            let parsed: Mode = via_toml(&quoted);
            assert_eq!(parsed, mode);
        }
        assert_eq!(Mode::default(), Mode::WorkspaceWrite);
        assert_eq!(
            "readonly".parse::<Mode>().unwrap_err().to_string(),
            "unknown mode `readonly`: use read-only, workspace-write or full"
        );
    }

    /// Parses a quoted mode through serde via TOML, the format config uses.
    fn via_toml(quoted: &str) -> Mode {
        #[derive(Deserialize)]
        struct Doc {
            mode: Mode,
        }
        toml::from_str::<Doc>(&format!("mode = {quoted}"))
            .unwrap()
            .mode
    }
}
