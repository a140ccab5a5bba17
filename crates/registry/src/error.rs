//! What can go wrong reading a registry, and what to do about it. Every variant fails closed:
//! nothing is installed, and no trusted state is written, after any of them.

use std::path::PathBuf;

/// A registry operation that did not complete.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// An OCI registry or artifact failed (`kind = "oci"`): refused content, a limit, the
    /// network.
    #[error(transparent)]
    Oci(#[from] bosun_oci::OciError),
    /// A plugin or skill name that is not `^[a-z0-9][a-z0-9-]*$` (at most 64 characters).
    #[error(
        "`{name}` is not a registry name: use 1-64 characters a-z, 0-9 and -, starting with a letter or digit"
    )]
    InvalidName {
        /// What was given (hidden characters escaped).
        name: String,
    },
    /// A version that is not `MAJOR.MINOR.PATCH[-PRERELEASE]`.
    #[error(
        "`{version}` is not a version: use MAJOR.MINOR.PATCH, optionally -PRERELEASE (a-z, A-Z, 0-9 and .)"
    )]
    InvalidVersion {
        /// What was given (hidden characters escaped).
        version: String,
    },
    /// Metadata that does not parse or breaks a rule of the format.
    #[error("{role} metadata is malformed: {message}")]
    Malformed {
        /// The role or file.
        role: String,
        /// What is wrong.
        message: String,
    },
    /// Fewer valid signatures from the role's keys than its threshold.
    #[error(
        "{role} metadata has {valid} valid signature(s) from its keys, below its threshold of {threshold}: the catalog may be forged; nothing was trusted"
    )]
    Threshold {
        /// The role.
        role: String,
        /// Distinct keys of the role whose signature verified.
        valid: usize,
        /// How many are needed.
        threshold: usize,
    },
    /// A version lower than the one already trusted.
    #[error(
        "{role} version {offered} is older than version {trusted} already trusted: a rollback; the source may be replaying old metadata, nothing was trusted"
    )]
    Rollback {
        /// The role (or plugin).
        role: String,
        /// The highest version trusted so far.
        trusted: u64,
        /// What was offered.
        offered: u64,
    },
    /// A version other than the one the signed metadata above it names.
    #[error(
        "{role} is version {got} but the signed {by} names version {expected}: files from different publications were mixed; nothing was trusted"
    )]
    Mismatch {
        /// The role.
        role: String,
        /// Which metadata names the version.
        by: String,
        /// What it names.
        expected: u64,
        /// What was served.
        got: u64,
    },
    /// A root whose version is not the next one.
    #[error(
        "{file} declares root version {got}, but the next root must be version {expected}: roots are trusted one version at a time"
    )]
    RootNotSequential {
        /// The file served.
        file: String,
        /// The version it had to have.
        expected: u64,
        /// What it declares.
        got: u64,
    },
    /// Metadata past its expiry.
    #[error(
        "{role} metadata expired at {expires}: the source is frozen or stale; ask its publisher to re-sign (nothing was trusted)"
    )]
    Expired {
        /// The role.
        role: String,
        /// When it expired (RFC 3339).
        expires: String,
    },
    /// More bytes than allowed or declared.
    #[error("{what} is larger than {limit} bytes: refused before reading the rest")]
    TooLarge {
        /// What was being read.
        what: String,
        /// The cap.
        limit: u64,
    },
    /// Bytes whose length differs from the signed length.
    #[error("{what} is {got} bytes but the catalog says {expected}: refused")]
    Length {
        /// What was read.
        what: String,
        /// The signed length.
        expected: u64,
        /// What arrived.
        got: u64,
    },
    /// Bytes whose SHA-256 differs from the catalog's.
    #[error(
        "{what} has SHA-256 {got} but the catalog says {expected}: refused (the download was altered or the catalog is wrong)"
    )]
    Digest {
        /// What was read.
        what: String,
        /// The catalog's digest.
        expected: String,
        /// The digest of what arrived.
        got: String,
    },
    /// Nothing of that name (and version) in the catalog, or a file the source does not have.
    #[error("{what} was not found")]
    NotFound {
        /// What was asked for.
        what: String,
    },
    /// A download that did not complete.
    #[error("fetching {url} failed: {message}")]
    Fetch {
        /// The address.
        url: String,
        /// Why.
        message: String,
    },
    /// A download that took too long.
    #[error("fetching {url} took longer than {seconds} s: gave up (is the source reachable?)")]
    Timeout {
        /// The address.
        url: String,
        /// The limit.
        seconds: u64,
    },
    /// Reading or writing a local file failed.
    #[error("{doing}: {source}")]
    Io {
        /// What was being done, with the path.
        doing: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A `[registries.<name>]` entry that cannot be used.
    #[error("registries.{source_name}: {message}")]
    Config {
        /// The source's name.
        source_name: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// A source whose root keys no person has confirmed yet.
    #[error(
        "the source `{source_name}` has no pinned key: its root is signed by {fingerprints}; confirm the fingerprint with its publisher, then run `bosun registry trust {source_name}`"
    )]
    Unpinned {
        /// The source.
        source_name: String,
        /// The root keys' fingerprints.
        fingerprints: String,
    },
    /// A plugin older than one already installed or trusted from the source.
    #[error(
        "{name} {offered} is older than {trusted}, which was already installed or trusted: a downgrade is refused (pass --force to install an older version on purpose)"
    )]
    Downgrade {
        /// The plugin.
        name: String,
        /// The highest version trusted.
        trusted: String,
        /// The version offered.
        offered: String,
    },
    /// The verified plugin does not say what the catalog said it does.
    #[error(
        "the catalog says {field} is {catalog} but the plugin itself declares {plugin}: refused (the catalog entry does not describe this plugin)"
    )]
    ClaimMismatch {
        /// The field (`name`, `version`, `tools`, …).
        field: String,
        /// What the catalog claims.
        catalog: String,
        /// What the plugin declares.
        plugin: String,
    },
    /// Delegations nested or repeated past the limit.
    #[error("{role}: {message}")]
    Delegation {
        /// The role.
        role: String,
        /// What limit was hit.
        message: String,
    },
    /// The key file or signing failed.
    #[error("{path}: {message}", path = path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// An archive entry that cannot be unpacked safely.
    #[error("the archive {what}: refused")]
    Archive {
        /// What is wrong with it.
        what: String,
    },
}

impl RegistryError {
    pub(crate) fn io(doing: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let doing = doing.into();
        move |source| Self::Io { doing, source }
    }

    pub(crate) fn malformed(role: impl Into<String>, message: impl ToString) -> Self {
        Self::Malformed {
            role: role.into(),
            message: message.to_string(),
        }
    }
}
