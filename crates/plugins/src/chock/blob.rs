//! The metadata blob of a Chock module (ABI 1 and 2), read with every bound Chock's own reader
//! has: nothing is allocated before its bound is checked, and unread bytes are refused.

use semver::{BuildMetadata, Prerelease, Version};

use crate::PluginError;
use crate::chock::{
    ChockAbi, ChockModule, ChockTool, DESCRIPTION_CUT, MAX_BLOB_CAPS, MAX_BLOB_TOOLS, MAX_DEPTH,
    MAX_LOCALES, MAX_PROPERTIES, MAX_STRING_BYTES, Property, Shape, refuse,
};

/// A bounded little-endian reader over the blob body.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PluginError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(refuse(
                "the metadata ends in the middle of a field: rebuild the plugin",
            ));
        };
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, PluginError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, PluginError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, PluginError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn count(&mut self, max: u32, what: &str) -> Result<u32, PluginError> {
        let n = self.u32()?;
        if n > max {
            return Err(refuse(format!(
                "the metadata lists {n} {what}: at most {max}"
            )));
        }
        Ok(n)
    }

    fn raw_string(&mut self) -> Result<&'a [u8], PluginError> {
        let len = self.u32()?;
        if len > MAX_STRING_BYTES {
            return Err(refuse(format!(
                "the metadata holds a string of {len} bytes: at most {MAX_STRING_BYTES}"
            )));
        }
        self.take(len as usize)
    }

    /// A name: must be UTF-8.
    fn name(&mut self) -> Result<String, PluginError> {
        let raw = self.raw_string()?;
        String::from_utf8(raw.to_vec())
            .map_err(|_| refuse("the metadata holds a name that is not UTF-8"))
    }

    fn tag(&mut self) -> Result<bool, PluginError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(refuse(format!(
                "the metadata holds an optional field tagged {other}: a tag is 0 or 1"
            ))),
        }
    }

    fn opt_string(&mut self) -> Result<Option<String>, PluginError> {
        if self.tag()? {
            Ok(Some(self.name()?))
        } else {
            Ok(None)
        }
    }

    fn version(&mut self) -> Result<Version, PluginError> {
        let (major, minor, patch) = (self.u64()?, self.u64()?, self.u64()?);
        let pre = self.opt_string()?;
        let build = self.opt_string()?;
        let mut version = Version::new(major, minor, patch);
        if let Some(pre) = pre {
            version.pre = Prerelease::new(&pre)
                .map_err(|_| refuse("the plugin's version has an invalid pre-release part"))?;
        }
        if let Some(build) = build {
            version.build = BuildMetadata::new(&build)
                .map_err(|_| refuse("the plugin's version has invalid build metadata"))?;
        }
        Ok(version)
    }

    fn opt_version(&mut self) -> Result<Option<Version>, PluginError> {
        if self.tag()? {
            Ok(Some(self.version()?))
        } else {
            Ok(None)
        }
    }

    /// The English text of a `locales` list, flattened and cut.
    fn description(&mut self) -> Result<String, PluginError> {
        let n = self.count(MAX_LOCALES, "locales in one description")?;
        let mut english = String::new();
        for _ in 0..n {
            let locale = self.raw_string()?;
            let value = self.raw_string()?;
            if locale == b"en" {
                english = flatten(value);
            }
        }
        Ok(english)
    }

    fn properties(&mut self, depth: usize) -> Result<Vec<Property>, PluginError> {
        if depth > MAX_DEPTH {
            return Err(refuse(format!(
                "the metadata nests argument shapes deeper than {MAX_DEPTH}"
            )));
        }
        let n = self.count(MAX_PROPERTIES, "fields in one object")?;
        let mut out = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let name = String::from_utf8_lossy(self.raw_string()?).into_owned();
            let description = flatten(self.raw_string()?);
            let required = self.tag()?;
            let shape = self.shape(depth)?;
            out.push(Property {
                name,
                description,
                required,
                shape,
            });
        }
        Ok(out)
    }

    fn shape(&mut self, depth: usize) -> Result<Shape, PluginError> {
        Ok(match self.u8()? {
            1 => Shape::String,
            2 => Shape::Boolean,
            3 => Shape::Integer,
            4 => Shape::Number,
            5 => {
                if depth >= MAX_DEPTH {
                    return Err(refuse(format!(
                        "the metadata nests argument shapes deeper than {MAX_DEPTH}"
                    )));
                }
                let items = if self.tag()? {
                    Some(Box::new(self.shape(depth + 1)?))
                } else {
                    None
                };
                Shape::Array { items }
            }
            6 => Shape::Object {
                properties: self.properties(depth + 1)?,
            },
            other => {
                return Err(refuse(format!(
                    "the metadata holds an argument of unknown kind {other}"
                )));
            }
        })
    }
}

pub(super) fn parse_body(abi: ChockAbi, body: &[u8]) -> Result<ChockModule, PluginError> {
    let mut c = Cursor { bytes: body, at: 0 };
    let name = c.name()?;
    // The author's name is shown (list, info, trust review) though policy never uses it, so it
    // passes the one name check every format applies; Chock's own naming is otherwise kept.
    crate::metadata::check_name_characters(&name).map_err(|problem| {
        refuse(format!(
            "the plugin's own name `{}` in its metadata {problem} (rebuild the plugin with a plain name)",
            crate::metadata::escape_name(&name)
        ))
    })?;
    let version = c.version()?;
    let _min = c.version()?;
    let _rec = c.opt_version()?;
    let _max = c.opt_version()?;
    let author = flatten(c.raw_string()?);
    let description = c.description()?;
    let count = c.count(MAX_BLOB_TOOLS, "tools")?;
    let mut tools = Vec::new();
    for index in 0..count {
        let name = String::from_utf8_lossy(c.raw_string()?).into_owned();
        let description = c.description()?;
        let ncap = c.count(MAX_BLOB_CAPS, "capabilities for one tool")?;
        let mut capabilities = Vec::new();
        for _ in 0..ncap {
            capabilities.push(String::from_utf8_lossy(c.raw_string()?).into_owned());
        }
        let properties = match abi {
            ChockAbi::V1 => None,
            ChockAbi::V2 => Some(c.properties(1)?),
        };
        tools.push(ChockTool {
            index,
            name,
            description,
            capabilities,
            properties,
        });
    }
    if c.at != body.len() {
        return Err(refuse(format!(
            "the metadata leaves {} bytes unread: its length or its fields are wrong",
            body.len() - c.at
        )));
    }
    Ok(ChockModule {
        abi,
        name,
        version,
        author,
        description,
        tools,
    })
}

/// Description text as Chock shows it: invalid UTF-8 becomes a fixed sentence, control
/// characters become spaces, and the text is cut at 200 bytes. Hidden characters stay, so the
/// spec check refuses the tool that carries them.
fn flatten(raw: &[u8]) -> String {
    let Ok(text) = std::str::from_utf8(raw) else {
        return "(this description is not valid UTF-8)".to_owned();
    };
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if out.len() > DESCRIPTION_CUT {
        let mut end = DESCRIPTION_CUT;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
        out.push('…');
    }
    out
}
