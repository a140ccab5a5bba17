//! A session: the state one conversation (or one CLI run) carries between tool calls — the
//! `restrict_self` promises the model has made and the approvals a person gave "for this
//! session". Both live only in memory: a grant is never written anywhere as authority, and a
//! promise can only be added, never withdrawn. It also carries the session's taint: the highest
//! classification of data that entered it, which only ever rises.

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError, RwLock};

use bosun_core::Classification;
use bosun_policy::Promise;

/// Per-session policy state.
#[derive(Debug, Default)]
pub struct Session {
    id: String,
    grants: Mutex<BTreeSet<String>>,
    promises: RwLock<Vec<Promise>>,
    taint: Mutex<Classification>,
}

impl Session {
    /// A new session with no grants and no promises.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            ..Self::default()
        }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session's taint: the highest classification of data that entered it.
    pub fn taint(&self) -> Classification {
        *self.taint.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Raises the taint to `level` if it is higher; never lowers it. Returns the taint after.
    pub fn raise_taint(&self, level: Classification) -> Classification {
        let mut taint = self.taint.lock().unwrap_or_else(PoisonError::into_inner);
        if level > *taint {
            *taint = level;
        }
        *taint
    }

    /// Records that a person allowed `action` for the rest of the session (the chokepoint passes
    /// the action with the exact capabilities shown: `approval::session_grant_key`).
    pub fn grant(&self, action: &str) {
        if let Ok(mut grants) = self.grants.lock() {
            grants.insert(action.to_owned());
        }
    }

    /// The actions a person allowed for the rest of the session (each with some capabilities).
    pub fn granted_actions(&self) -> std::collections::BTreeSet<String> {
        self.grants
            .lock()
            .map(|g| {
                g.iter()
                    .map(|key| key.split('\n').next().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// True when a person allowed `action` for the rest of the session.
    pub fn is_granted(&self, action: &str) -> bool {
        self.grants
            .lock()
            .map(|g| g.contains(action))
            .unwrap_or(false)
    }

    /// Adds a promise; it binds every later call of the session.
    pub fn promise(&self, promise: Promise) {
        // A poisoned lock still holds the promises made so far: keep adding to them.
        let mut promises = self.promises.write().unwrap_or_else(|e| e.into_inner());
        promises.push(promise);
    }

    /// Runs `f` with the session's promises.
    pub fn with_promises<R>(&self, f: impl FnOnce(&[Promise]) -> R) -> R {
        let promises = self.promises.read().unwrap_or_else(|e| e.into_inner());
        f(&promises)
    }
}

#[cfg(test)]
mod taint_tests {
    use super::*;

    #[test]
    fn taint_only_rises() {
        let session = Session::new("s");
        assert_eq!(session.taint(), Classification::Public);
        assert_eq!(
            session.raise_taint(Classification::Confidential),
            Classification::Confidential
        );
        assert_eq!(
            session.raise_taint(Classification::Internal),
            Classification::Confidential
        );
        assert_eq!(session.taint(), Classification::Confidential);
    }
}
