//! Slash commands of installed Claude Code plugins (`commands/*.md`): a prompt template a person
//! runs as `/plugin:command ARGS` (or `/command` when no other plugin has one of that name and
//! Bosun has no command of its own by it). Front matter `description`, `argument-hint`,
//! `allowed-tools` and `model`; the body is the prompt, with `$ARGUMENTS` (everything after the
//! name), `$1`…`$9` (the arguments one by one, quotes grouping words) and `@path` (a workspace
//! file the model is pointed at).
//!
//! What Bosun decides differently from Claude Code, because a command's text is the plugin
//! author's, not the person's:
//! - `@path` names the file for the model, which reads it through the chokepoint like every
//!   read (policy, labels and taint apply), the way the terminal's `@path` works; a path outside
//!   the workspace refuses the command, and one policy denies reading stays text whatever is
//!   there (listing it only when it exists would tell the model what a denied place holds).
//! - A `` !`cmd` `` line (run by Claude Code before the prompt is sent) refuses the command: a
//!   program the plugin names would run before the person sees what the model is asked. The
//!   model can run it through the chokepoint if the task needs it.
//! - `allowed-tools` only narrows ([`crate::allowed_tools`]).
//!
//! Each file is read only when its bytes are the ones reviewed at install.

use std::sync::Arc;

use bosun_claude::LoadedPlugin;
use bosun_core::{Capability, CapabilityRequest, Decision, ErrorCode};
use bosun_policy::{Policy, Subject};

use crate::Workspace;
use crate::allowed_tools::AllowedTools;

/// The names Bosun's faces use for their own commands: a plugin command of one of these names
/// is reached only as `/plugin:name`.
pub const RESERVED: &[&str] = &[
    "help", "plugins", "policy", "model", "skills", "sessions", "inspect", "quit", "exit", "mcp",
    "clear", "new", "resume", "diff", "init", "compact", "mouse", "undo", "rewind", "status",
    "mode", "review",
];

/// The largest expanded prompt, in bytes.
pub const MAX_PROMPT_BYTES: usize = 64 * 1024;

/// One plugin command.
#[derive(Debug, Clone)]
pub struct PluginCommand {
    /// `plugin:command`.
    pub name: String,
    /// Its own name (the file's).
    pub short: String,
    /// The plugin's id, `name@marketplace`.
    pub plugin: String,
    /// What it does.
    pub description: String,
    /// What its arguments are (`argument-hint`).
    pub argument_hint: Option<String>,
    /// `allowed-tools`, as written.
    pub allowed_tools: Option<Vec<String>>,
    /// `model`, when it names one.
    pub model: Option<String>,
    body: String,
}

/// A command expanded for one prompt.
#[derive(Debug, Clone)]
pub struct Expanded {
    /// `/plugin:command`.
    pub command: String,
    /// The prompt the model is sent.
    pub prompt: String,
    /// The narrowing of this prompt's tools, when the command has `allowed-tools`.
    pub allowed: Option<Arc<AllowedTools>>,
    /// The model it asks for.
    pub model: Option<String>,
    /// What was left out or could not be mapped.
    pub notes: Vec<String>,
}

/// Why a command cannot run; each says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// `/name` that several plugins have.
    #[error("/{name} is a command of several plugins: write one of {choices}")]
    Ambiguous {
        /// The short name.
        name: String,
        /// `/plugin:name`, comma-separated.
        choices: String,
    },
    /// A `` !`cmd` `` line.
    #[error(
        "{command} runs `{line}` before the prompt (a !`…` line), which Bosun does not do: a program a plugin names would run before you see what the model is asked; ask the model to run it, or copy the command without that line into your own prompt"
    )]
    Shell {
        /// `/plugin:command`.
        command: String,
        /// The program line.
        line: String,
    },
    /// An `@path` outside the workspace.
    #[error(
        "{command} names @{path}, which is outside the workspace: a command may only point at the workspace's files"
    )]
    Outside {
        /// `/plugin:command`.
        command: String,
        /// The path.
        path: String,
    },
    /// The expanded prompt is too large.
    #[error(
        "{command} expands to {bytes} bytes; the most a command's prompt may be is {MAX_PROMPT_BYTES}"
    )]
    TooLarge {
        /// `/plugin:command`.
        command: String,
        /// Its size.
        bytes: usize,
    },
    /// Its file cannot be used.
    #[error("{command} cannot be used: {why}")]
    Unusable {
        /// `/plugin:command`.
        command: String,
        /// Why.
        why: String,
    },
}

/// The commands of the installed plugins.
#[derive(Debug, Clone, Default)]
pub struct PluginCommands {
    commands: Vec<(Arc<LoadedPlugin>, PluginCommand, String)>,
    /// Commands that cannot run, by `plugin:command` and by plugin name (`plugin:`): a line
    /// naming one is refused with the reason, never sent to the model as words.
    refused: Vec<Refused>,
    warnings: Vec<String>,
}

/// A command, or every command of a plugin, that cannot run.
#[derive(Debug, Clone)]
struct Refused {
    /// The plugin's name.
    plugin: String,
    /// The command's own name; `None` for every command of the plugin.
    short: Option<String>,
    /// The command names the plugin's record lists (for `/command` without the plugin).
    shorts: Vec<String>,
    why: String,
}

impl PluginCommands {
    /// The commands of `plugins`; a file that cannot be read is a warning.
    pub fn of(plugins: &[LoadedPlugin]) -> PluginCommands {
        let mut out = PluginCommands::default();
        for plugin in plugins {
            let plugin = Arc::new(plugin.clone());
            for file in plugin.commands() {
                let read = plugin
                    .read_reviewed(&file.path)
                    .map_err(|e| e.to_string())
                    .and_then(|text| command(&plugin, &file.name, &text));
                match read {
                    Ok(command) => out.commands.push((plugin.clone(), command, file.path)),
                    Err(why) => {
                        out.warnings.push(format!(
                            "the command {} of the plugin `{}` is left out: {why}",
                            file.path, plugin.record.id
                        ));
                        out.refused.push(Refused {
                            plugin: plugin.name().to_owned(),
                            short: Some(file.name.clone()),
                            shorts: vec![file.name.clone()],
                            why,
                        });
                    }
                }
            }
        }
        out
    }

    /// These commands, and a refusal for every command of the `withheld` plugins (installed,
    /// not loaded): `/plugin:command` of one of them is refused with the reason.
    pub fn withholding(mut self, withheld: &[bosun_claude::Withheld]) -> PluginCommands {
        self.refused.extend(withheld.iter().map(|w| Refused {
            plugin: w.name.clone(),
            short: None,
            shorts: w.commands.clone(),
            why: w.why.clone(),
        }));
        self
    }

    /// The commands of the plugins installed under `home` (checked against their records).
    pub fn load(home: &std::path::Path) -> PluginCommands {
        let loaded = bosun_claude::Loaded::load(home);
        PluginCommands::of(&loaded.plugins).withholding(&loaded.withheld)
    }

    /// Every command, in plugin and name order.
    pub fn all(&self) -> impl Iterator<Item = &PluginCommand> {
        self.commands.iter().map(|(_, c, _)| c)
    }

    /// What could not be read.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The name a face shows for `command`: `/command` when that reaches it, else
    /// `/plugin:command`.
    pub fn shown_name(&self, command: &PluginCommand) -> String {
        if self.short_reaches(&command.short) {
            format!("/{}", command.short)
        } else {
            format!("/{}", command.name)
        }
    }

    fn short_reaches(&self, short: &str) -> bool {
        !RESERVED.contains(&short) && self.all().filter(|c| c.short == short).count() == 1
    }

    /// The command `line` (`/name args…`) runs, if it names one: `/plugin:command`, or
    /// `/command` when it is not Bosun's and only one plugin has it.
    ///
    /// # Errors
    /// [`CommandError::Ambiguous`] for a short name several plugins have;
    /// [`CommandError::Unusable`] for a command whose file or plugin changed since it was
    /// reviewed (the line is refused, not sent on as words).
    pub fn find(&self, line: &str) -> Result<Option<(&PluginCommand, String)>, CommandError> {
        let Some(rest) = line.trim_start().strip_prefix('/') else {
            return Ok(None);
        };
        let (word, args) = rest
            .split_once(char::is_whitespace)
            .map_or((rest, ""), |(w, a)| (w, a.trim()));
        if let Some(command) = self.all().find(|c| c.name == word) {
            return Ok(Some((command, args.to_owned())));
        }
        let unusable = |refused: &Refused, short: &str| CommandError::Unusable {
            command: format!("/{}:{short}", refused.plugin),
            why: refused.why.clone(),
        };
        if let Some((plugin, short)) = word.split_once(':')
            && let Some(refused) = self
                .refused
                .iter()
                .find(|r| r.plugin == plugin && r.short.as_deref().is_none_or(|s| s == short))
        {
            return Err(unusable(refused, short));
        }
        if RESERVED.contains(&word) {
            return Ok(None);
        }
        let matching: Vec<&PluginCommand> = self.all().filter(|c| c.short == word).collect();
        match matching.as_slice() {
            [] => match self
                .refused
                .iter()
                .find(|r| r.shorts.iter().any(|s| s == word))
            {
                Some(refused) => Err(unusable(refused, word)),
                None => Ok(None),
            },
            [one] => Ok(Some((one, args.to_owned()))),
            many => Err(CommandError::Ambiguous {
                name: word.to_owned(),
                choices: many
                    .iter()
                    .map(|c| format!("/{}", c.name))
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// `line` expanded, when it runs a plugin command: the file read again (it must still be
    /// what was reviewed), the arguments put in, `@path`s checked against `workspace`.
    ///
    /// # Errors
    /// A [`CommandError`] saying why the command cannot run.
    pub fn expand(
        &self,
        line: &str,
        workspace: &Workspace,
        policy: &Policy,
    ) -> Result<Option<Expanded>, CommandError> {
        let Some((command, args)) = self.find(line)? else {
            return Ok(None);
        };
        let shown = format!("/{}", command.name);
        let (plugin, path) = self
            .commands
            .iter()
            .find(|(_, c, _)| c.name == command.name)
            .map(|(p, _, path)| (p, path))
            .ok_or_else(|| CommandError::Unusable {
                command: shown.clone(),
                why: "it is no longer listed".to_owned(),
            })?;
        // Read again: the text sent is the text reviewed, even if the file changed since the
        // list was made.
        let text = plugin
            .read_reviewed(path)
            .map_err(|e| CommandError::Unusable {
                command: shown.clone(),
                why: e.to_string(),
            })?;
        let fresh =
            self::command(plugin, &command.short, &text).map_err(|why| CommandError::Unusable {
                command: shown.clone(),
                why,
            })?;
        fresh.expand(&args, workspace, policy).map(Some)
    }
}

/// Reads one command file.
fn command(plugin: &LoadedPlugin, stem: &str, text: &str) -> Result<PluginCommand, String> {
    // A command without front matter is all prompt, as in Claude Code.
    let (front, body) = match crate::front_matter::parse(text) {
        Ok((front, body)) => (Some(front), body),
        Err(crate::front_matter::FrontMatterError::NoOpening) => (None, text),
        Err(e) => return Err(e.to_string()),
    };
    if let Some((key, found)) = front.as_ref().and_then(|f| f.hidden()) {
        return Err(format!("`{key}` holds a hidden character ({found})"));
    }
    if let Some(found) = bosun_core::hidden::find_hidden(body) {
        return Err(format!("its text holds a hidden character ({found})"));
    }
    let text = |key: &str| {
        front
            .as_ref()
            .and_then(|f| f.text(key))
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let description = text("description").unwrap_or_else(|| {
        body.lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default()
            .chars()
            .take(100)
            .collect()
    });
    Ok(PluginCommand {
        name: bosun_claude::components::qualified(plugin.name(), stem),
        short: stem.to_owned(),
        plugin: plugin.record.id.clone(),
        description,
        argument_hint: text("argument-hint"),
        allowed_tools: front.as_ref().and_then(|f| f.list("allowed-tools")),
        model: text("model").filter(|m| m != "inherit"),
        body: body.trim().to_owned(),
    })
}

impl PluginCommand {
    /// The prompt for `args`, checked.
    ///
    /// # Errors
    /// A [`CommandError`] saying why the command cannot run.
    pub fn expand(
        &self,
        args: &str,
        workspace: &Workspace,
        policy: &Policy,
    ) -> Result<Expanded, CommandError> {
        let shown = format!("/{}", self.name);
        if let Some(line) = shell_line(&self.body) {
            return Err(CommandError::Shell {
                command: shown,
                line,
            });
        }
        let mut prompt = substitute(&self.body, args);
        let mut files = Vec::new();
        for path in mentions(&prompt) {
            // Judged by its name first, as a read of it would be: where policy denies reading,
            // a mention stays text whatever is there (a file, nothing, a link leading out), so
            // the prompt never tells the model what exists in a denied place.
            if read_denied(workspace, policy, &path) {
                continue;
            }
            match workspace.resolve(&path) {
                Ok(real) if real.is_file() => {
                    let relative = workspace.relative(&real);
                    if !files.contains(&relative) {
                        files.push(relative);
                    }
                }
                Err(e) if e.code == ErrorCode::OutsideWorkspace => {
                    return Err(CommandError::Outside {
                        command: shown,
                        path,
                    });
                }
                // A word that names no file (a person's handle, a decorator) stays text.
                Ok(_) | Err(_) => {}
            }
        }
        if !files.is_empty() {
            prompt.push_str(
                "\n\nFiles this command names (in the workspace; read them with read_file):",
            );
            for file in &files {
                prompt.push_str("\n- ");
                prompt.push_str(file);
            }
        }
        if prompt.len() > MAX_PROMPT_BYTES {
            return Err(CommandError::TooLarge {
                command: shown,
                bytes: prompt.len(),
            });
        }
        let (allowed, notes) = match &self.allowed_tools {
            Some(items) => {
                let (allowed, notes) = AllowedTools::parse(&shown, items);
                (Some(Arc::new(allowed)), notes)
            }
            None => (None, Vec::new()),
        };
        Ok(Expanded {
            command: shown,
            prompt,
            allowed,
            model: self.model.clone(),
            notes,
        })
    }
}

/// Whether policy denies reading `path` (as a `read_file` of it would be judged): a path whose
/// text alone leaves the workspace is not, and refuses the command instead.
fn read_denied(workspace: &Workspace, policy: &Policy, path: &str) -> bool {
    let Ok(scope) = workspace.judged_scope(path) else {
        return false;
    };
    let request = CapabilityRequest {
        capability: Capability::FsRead,
        scope,
    };
    policy
        .decide_one(&Subject::capability(&request), &[])
        .decision
        == Decision::Deny
}

/// The first `` !`cmd` `` of `body`, if it has one.
fn shell_line(body: &str) -> Option<String> {
    let start = body.find("!`")?;
    let rest = &body[start + 2..];
    let end = rest.find('`')?;
    Some(rest[..end].to_owned())
}

/// `$ARGUMENTS` and `$1`…`$9` put in, in one pass (an argument holding `$1` stays as it is);
/// when the body uses neither, the arguments follow it as Claude Code adds them.
fn substitute(body: &str, args: &str) -> String {
    let words = split_args(args);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut used = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            out.push_str(args);
            used = true;
            rest = tail;
        } else if let Some(digit) = after.chars().next().and_then(|c| c.to_digit(10))
            && digit >= 1
        {
            if let Some(word) = words.get(digit as usize - 1) {
                out.push_str(word);
            }
            used = true;
            rest = &after[1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    if !used && !args.is_empty() {
        out.push_str("\n\nARGUMENTS: ");
        out.push_str(args);
    }
    out
}

/// The arguments one by one: whitespace separates, `"…"` and `'…'` group.
fn split_args(args: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in args.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut current));
                    started = false;
                }
            }
            (None, c) => {
                current.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(current);
    }
    words
}

/// The `@path` words of `text` (an `@` at the start of a word), trailing punctuation left out.
fn mentions(text: &str) -> Vec<String> {
    text.split_whitespace()
        .filter_map(|w| w.strip_prefix('@'))
        .map(|w| w.trim_end_matches([',', '.', ';', ':', ')', '!', '?', '"', '\'']))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_go_in_once_and_quotes_group() {
        assert_eq!(
            substitute("Greet $1 and $2. All: $ARGUMENTS.", "\"Ada L\" Bob $1"),
            "Greet Ada L and Bob. All: \"Ada L\" Bob $1."
        );
        assert_eq!(substitute("Cost $5 is $0", ""), "Cost  is $0");
        assert_eq!(substitute("Review.", "src"), "Review.\n\nARGUMENTS: src");
        assert_eq!(split_args(" a  'b c' \"\" d"), ["a", "b c", "", "d"]);
    }

    /// Where policy denies reading, a mention says nothing of what is there: a file, nothing,
    /// a directory and links — one leading out of the workspace, absolute or climbing — all
    /// stay text and the command runs (before, an existing file was listed for the model, and
    /// a link leading out refused the command, each an oracle for what a denied folder holds).
    #[test]
    fn a_mention_where_reading_is_denied_says_nothing_of_what_is_there() {
        use bosun_policy::{Mode, PolicyFile, Source};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let secrets = root.join("secrets");
        std::fs::create_dir_all(secrets.join("dir")).unwrap();
        std::fs::write(secrets.join("key.txt"), "k").unwrap();
        std::fs::write(root.join("notes.txt"), "n").unwrap();
        std::os::unix::fs::symlink("/etc", secrets.join("out")).unwrap();
        let climb = "../".repeat(secrets.components().count() - 1);
        std::os::unix::fs::symlink(format!("{climb}etc/hostname"), secrets.join("up")).unwrap();
        std::os::unix::fs::symlink("secrets", root.join("innocent")).unwrap();
        let workspace = Workspace::new(&root, &root).unwrap();
        let text =
            "[[policy.rules]]\naction = \"fs.read\"\npath = \"secrets/**\"\ndecision = \"deny\"\n";
        let policy = Policy::builder(Mode::WorkspaceWrite)
            .user(
                PolicyFile::parse(text).unwrap(),
                Source::with_text("u.toml", text),
            )
            .unwrap()
            .build();
        let command = PluginCommand {
            name: "p:look".to_owned(),
            short: "look".to_owned(),
            plugin: "p@m".to_owned(),
            description: String::new(),
            argument_hint: None,
            allowed_tools: None,
            model: None,
            body: "Look at @$1 and @notes.txt.".to_owned(),
        };
        let prompt = |name: &str| {
            command
                .expand(name, &workspace, &policy)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .prompt
                .replace(name, "<path>")
        };
        let first = prompt("secrets/key.txt");
        for name in [
            "secrets/missing",
            "secrets/dir",
            "secrets/out",
            "secrets/out/hostname",
            "secrets/up",
            "innocent/key.txt",
            "innocent/up",
        ] {
            assert_eq!(
                prompt(name),
                first,
                "{name} told apart from secrets/key.txt"
            );
        }
        assert!(first.ends_with("\n- notes.txt"), "{first}");
        // An allowed file is still listed, and a path written outside still refuses.
        let allowed = command.expand("notes.txt", &workspace, &policy).unwrap();
        assert!(
            allowed.prompt.ends_with("\n- notes.txt"),
            "{}",
            allowed.prompt
        );
        assert!(matches!(
            command.expand("../x", &workspace, &policy),
            Err(CommandError::Outside { .. })
        ));
    }

    #[test]
    fn shell_lines_and_mentions_are_found() {
        assert_eq!(
            shell_line("Status:\n!`git status`\nthen").as_deref(),
            Some("git status")
        );
        assert_eq!(shell_line("no ! here `x`"), None);
        assert_eq!(
            mentions("read @src/lib.rs, and mail a@b.c or @/etc/passwd."),
            ["src/lib.rs", "/etc/passwd"]
        );
    }
}
