//! Data classification levels. Labels are parsed strictly: an unknown label is an error, never a
//! silent downgrade to `PUBLIC`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How sensitive a piece of data is. Ordered: `Public < Internal < Confidential < Restricted`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Classification {
    /// Anyone may see it.
    #[default]
    Public,
    /// Inside the organisation.
    Internal,
    /// A need-to-know group.
    Confidential,
    /// The most sensitive data.
    Restricted,
}

/// An unknown classification label.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown classification `{0}`: use one of PUBLIC, INTERNAL, CONFIDENTIAL, RESTRICTED")]
pub struct ClassificationError(pub String);

impl FromStr for Classification {
    type Err = ClassificationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "PUBLIC" => Ok(Self::Public),
            "INTERNAL" => Ok(Self::Internal),
            "CONFIDENTIAL" => Ok(Self::Confidential),
            "RESTRICTED" => Ok(Self::Restricted),
            other => Err(ClassificationError(other.to_owned())),
        }
    }
}

impl Classification {
    /// Whether this is `PUBLIC`, the level of everything unlabelled.
    #[must_use]
    pub fn is_public(&self) -> bool {
        *self == Self::Public
    }
}

impl fmt::Display for Classification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Public => "PUBLIC",
            Self::Internal => "INTERNAL",
            Self::Confidential => "CONFIDENTIAL",
            Self::Restricted => "RESTRICTED",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_parse_strictly() {
        assert_eq!("INTERNAL".parse(), Ok(Classification::Internal));
        assert!("internal".parse::<Classification>().is_err());
        assert!("SECRET".parse::<Classification>().is_err());
        assert!(Classification::Public < Classification::Restricted);
    }
}
