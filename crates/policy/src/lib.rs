//! Bosun's decision table: every tool call, and every capability it uses, is judged here.
//!
//! The crate is pure: it parses text it is given, compiles patterns and answers questions. It
//! never reads files, the environment or the clock, so `bosun policy check ACTION` and the
//! chokepoint get the same answer from the same inputs.
//!
//! ```
//! use bosun_core::{CapabilityRequest, Decision, Layer, Risk};
//! use bosun_policy::{Mode, Policy, PolicyFile, Source, Subject};
//!
//! let text = r#"
//! [policy]
//! examples = [{ action = "fs.write", path = "secrets/key", expect = "deny" }]
//!
//! [[policy.rules]]
//! action = "fs.write"
//! path = "secrets/**"
//! decision = "deny"
//! reason = "keys live here"
//! "#;
//! let file = PolicyFile::parse(text)?;
//! let policy = Policy::builder(Mode::WorkspaceWrite)
//!     .user(file, Source::with_text("config.toml", text))?
//!     .build();
//!
//! let call = [
//!     Subject::tool("builtin.tool.write_file", Risk::Write),
//!     Subject::capability(&CapabilityRequest::parse("fs.write:secrets/../secrets/key")?),
//! ];
//! let explanation = policy.decide(&call, &[], &[]);
//! assert_eq!(explanation.decision, Decision::Deny);
//! let rule = explanation.deciding_rule().unwrap();
//! assert_eq!(rule.layer, Layer::User);
//! assert_eq!(rule.source.as_deref(), Some("config.toml:5"));
//! assert!(rule.rule.contains("keys live here"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Decisions and rules
//!
//! Decisions are ordered `allow < review < ask < deny`; "stricter" means greater. A [`Rule`]
//! matches a [`Subject`] when its `action` matches the subject's action and every narrowing key
//! it sets matches the subject's scope. A narrowing key set on the rule but absent from the
//! subject does not match (a rule for `path = "src/**"` says nothing about a call without a
//! path).
//!
//! - `action`: exact, or a glob when it holds one of `* ? [ ] { } \`; `*` matches any run of
//!   characters (actions hold no `/`), so `plugin.hello.tool.*` and `secret.*` work. An action
//!   pattern holding `:` or `/` is refused: the scope goes in its own key.
//! - `host`: a case-insensitive glob (`*.example.com`). A trailing dot on the subject's host is
//!   dropped first.
//! - `path`: a glob over workspace-relative `/`-separated paths; `*` stays within a directory,
//!   `**` crosses directories (`src/**` matches `src/a/b.rs`, not `src`). The subject's path is
//!   normalised lexically first: `./`, empty and `.` components are dropped and `dir/..` folds,
//!   so `src/../secrets/key` is judged as `secrets/key`; a leading `..` stays.
//! - `program`: a glob over the program as the call names it, with `/` treated like a path:
//!   `cargo` matches only `cargo`; `**/rm` matches `rm` and `/bin/rm`.
//!
//! Within one layer, the strictest matching rule wins; among equally strict ones, the first
//! written.
//!
//! # Layers, per subject
//!
//! 1. **Mode** ([`Mode`]): the default for the subject's risk — given with the subject, found in
//!    the builder's known risks, or implied by a capability name (`fs.read` → read, `fs.write` →
//!    write, `process.spawn` → process, `net.http` → network, `model.call` → model;
//!    `secret.<name>` has its own default). When the risk is unknown there is no default and the
//!    **fallback** is `ask`.
//! 2. **User config**: if a user rule matches, the strictest one replaces the mode default; the
//!    user may loosen or tighten.
//! 3. **Project config**: for an untrusted workspace, project rules only tighten (the result is
//!    the stricter of the two). For a trusted workspace, the strictest project rule replaces the
//!    decision — except that nothing loosens a user rule's `deny`: a user's explicit deny is
//!    final.
//! 4. **Promises** ([`Promise`], `restrict_self`): only tighten.
//!
//! The [`MatchedRule`](bosun_core::MatchedRule) for a subject names the layer and rule that
//! produced its decision. On a tie the earlier layer's rule is kept, so the explanation points
//! at the original rule — with two exceptions: a matching rule always replaces the fallback
//! (which would otherwise claim that nothing matched), and when a trusted project rule tries to
//! loosen a user `deny`, the user rule is named, since it is what held. Rules from files carry
//! their source as `file:line` (the line where the rule starts: its `[[policy.rules]]` header or
//! inline table) and their `reason` in the rule text; a mode default's source is the mode's name
//! and a hook's is the plugin's.
//!
//! # Across a call
//!
//! [`Policy::decide`] judges every subject (the tool action, then each capability). The combined
//! decision is the strictest; `deciding` is the first subject that reached it. Plugin restrict
//! hooks ([`HookVerdict`]) then only tighten: if the strictest hook is stricter than the
//! combined decision, a check with layer `hook` (subject: the first subject's action, rule:
//! `plugin: reason`) is appended and becomes the deciding one. A hook's `allow` is ignored.
//!
//! # Loading
//!
//! [`PolicyBuilder`] compiles every pattern when a file is added; a bad glob is an error naming
//! the file, line and pattern. Each file's examples ([`Example`]) are checked when that file is
//! added, against the mode and every layer added so far including that file (no promises, no
//! hooks); a failing example is an error saying what was decided, by which rule, and what to
//! change.
//!
//! Several files added to one layer pool their rules (strictest wins across them). A workspace
//! has one trust state: adding project files as both trusted and untrusted is an error.
//!
//! # Cost
//!
//! Exact actions are found in a hash map and a layer's globs are matched in one
//! [`globset::GlobSet`] pass, so a decision costs the same order of time with a thousand rules
//! as with ten; narrowing patterns are only tried on rules whose action matched.

mod error;
mod example;
mod file;
mod matcher;
mod mode;
mod policy;
mod promise;
mod protected;
mod rule;
mod subject;

pub mod fuzzing;

pub use error::PolicyError;
pub use example::Example;
pub use file::{PolicyFile, Source};
pub use matcher::is_glob;
pub use mode::{Mode, capability_risk};
pub use policy::{Policy, PolicyBuilder};
pub use promise::{HookVerdict, Promise};
pub use protected::{PROTECTED_DIRS, PROTECTED_FILES, is_protected};
pub use rule::Rule;
pub use subject::Subject;
