//! Going back, and the switches of a session: `/undo`, `/rewind` and Esc Esc over the session's
//! checkpoints ([`bosun_host::checkpoint`], through [`Conversation::rewind`]), the permission
//! mode (Shift-Tab, `/mode`) and `/status`. What a rewind restores is decided by the library;
//! this module asks first where it destroys a run's work and says what happened.

use std::fmt::Write as _;

use anyhow::Result;
use bosun_agent::conversation::{Conversation, RewindError, Rewound};
use bosun_host::approval::sanitize_for_terminal;
use bosun_host::checkpoint::CheckpointError;
use bosun_host::permission::PermissionMode;
use bosun_host::workspace_trust::WorkspaceTrust;

use super::app::{App, Confirm, PluginAction};
use super::transcript::{Entry, earlier_entries};

/// The first line of a request, shortened for a list.
fn headline(task: &str) -> String {
    let line = task.lines().next().unwrap_or_default();
    let mut shown: String = line.chars().take(60).collect();
    if line.chars().count() > 60 || task.lines().nth(1).is_some() {
        shown.push('…');
    }
    sanitize_for_terminal(&shown)
}

/// `a, b and 3 more`.
fn files_list(files: &[String]) -> String {
    let shown: Vec<String> = files
        .iter()
        .take(5)
        .map(|f| sanitize_for_terminal(f))
        .collect();
    let mut text = shown.join(", ");
    if files.len() > shown.len() {
        let _ = write!(text, " and {} more", files.len() - shown.len());
    }
    text
}

/// What the model is told of an undo: which files are back to what they were before which
/// request.
fn undo_note(restored: &[String], removed: &[String], task: &str) -> String {
    let mut note = format!(
        "The person undid the file changes of the run for \"{task}\": those files are back to \
         what they were before it, and your edits of them in that run are gone."
    );
    if !restored.is_empty() {
        let _ = write!(note, "\nRestored: {}.", restored.join(", "));
    }
    if !removed.is_empty() {
        let _ = write!(
            note,
            "\nRemoved (that run created them): {}.",
            removed.join(", ")
        );
    }
    note
}

impl App {
    /// `/undo [--force]`: the files of the session's last run that changed any go back.
    pub(super) fn undo(&mut self, force: bool) -> Result<String> {
        self.idle("/undo")?;
        let Some(open) = &mut self.session else {
            return Ok(String::new());
        };
        let store = open.checkpoints(&self.env.config.home);
        match store.undo_last(&self.env.workspace, force) {
            Ok(restored) => {
                let task = restored
                    .earliest
                    .as_ref()
                    .map(|p| headline(&p.task))
                    .unwrap_or_default();
                let mut text = format!("undid the file changes of the run for \"{task}\"");
                if !restored.restored.is_empty() {
                    let _ = write!(text, "\nrestored: {}", files_list(&restored.restored));
                }
                if !restored.removed.is_empty() {
                    let _ = write!(
                        text,
                        "\nremoved (the run created them): {}",
                        files_list(&restored.removed)
                    );
                }
                // The model would otherwise go on from files that are no longer there.
                let stored = open.note(undo_note(&restored.restored, &restored.removed, &task));
                text.push_str(
                    "\nthe model is told with your next message; /rewind takes the conversation back too",
                );
                if let Err(e) = stored {
                    let _ = write!(
                        text,
                        "\nwarning: the session could not be stored: {}",
                        sanitize_for_terminal(&e.to_string())
                    );
                }
                Ok(text)
            }
            Err(e @ CheckpointError::Changed { .. }) => {
                anyhow::bail!("{e} (/undo --force)")
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `/rewind`: the runs of this session that changed files, numbered.
    pub(super) fn rewind_points(&self) -> Result<String> {
        let Some(open) = &self.session else {
            return Ok(String::new());
        };
        let points = open.checkpoints(&self.env.config.home).points()?;
        if points.is_empty() {
            return Ok(
                "no run of this session changed a file through Bosun's file tools; Esc Esc at an empty prompt goes back to before your last message"
                    .to_owned(),
            );
        }
        let mut lines: Vec<String> = points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                format!(
                    "{:>2}. {}  \"{}\"  {}",
                    i + 1,
                    p.started_at.format("%H:%M"),
                    headline(&p.task),
                    files_list(&p.files)
                )
            })
            .collect();
        lines.push(
            "/rewind N goes back to before run N: the conversation, and the files it and every later run changed"
                .to_owned(),
        );
        Ok(lines.join("\n"))
    }

    /// `/rewind N [--force]`.
    pub(super) fn rewind_to(&mut self, n: usize, force: bool) -> Result<String> {
        self.idle("/rewind")?;
        let Some(open) = &self.session else {
            return Ok(String::new());
        };
        let points = open.checkpoints(&self.env.config.home).points()?;
        let Some(point) = points.get(n - 1) else {
            anyhow::bail!("no run {n}: /rewind lists them");
        };
        let run_id = point.run_id.clone();
        self.rewind(Some(&run_id), force, &format!("/rewind {n} --force"))
    }

    /// Esc Esc: asks before going back to before the last request.
    pub(super) fn ask_rewind(&mut self) {
        let Some(open) = &self.session else {
            return;
        };
        let Some(task) = open.stored.messages.iter().rev().find_map(|m| match m {
            bosun_models::Message::User { text, .. } => Some(text.clone()),
            _ => None,
        }) else {
            self.entries.push(Entry::Notice(
                "nothing to go back to yet (Esc Esc edits your last message)".to_owned(),
            ));
            return;
        };
        let files = last_run_files(open, &self.env.config.home);
        let mut question = format!(
            "Go back to before your last message?\n  \"{}\"\nThe conversation returns to before it and its text comes back to the prompt to edit.",
            headline(&task)
        );
        if files.is_empty() {
            question.push_str("\nIts run changed no file through Bosun's file tools.");
        } else {
            let _ = write!(
                question,
                "\nThe files its run changed are put back: {}.",
                files_list(&files)
            );
        }
        self.confirm = Some(Confirm::new(question, PluginAction::Rewind));
    }

    /// Goes back to before run `run_id` (or the last request), puts the request back at the
    /// prompt and shows the conversation as it now is.
    pub(super) fn rewind(
        &mut self,
        run_id: Option<&str>,
        force: bool,
        forced: &str,
    ) -> Result<String> {
        self.idle("going back")?;
        let home = self.env.config.home.clone();
        let workspace = self.env.workspace.clone();
        let Some(open) = &mut self.session else {
            return Ok(String::new());
        };
        let rewound = match open.rewind(&home, &workspace, run_id, force) {
            Ok(rewound) => rewound,
            Err(RewindError::Files(e @ CheckpointError::Changed { .. })) => {
                anyhow::bail!("{e} ({forced})")
            }
            Err(e) => return Err(e.into()),
        };
        let Rewound {
            task,
            files,
            conversation,
        } = rewound;
        if conversation {
            self.entries = earlier_entries(&open.stored.messages);
            self.context_used = None;
            self.context_warned = false;
            self.scroll = 0;
            self.input.clear();
            self.input.insert_str(&task);
        }
        let mut text = if conversation {
            "back to before that message: edit it at the prompt and press Enter to send it again"
                .to_owned()
        } else {
            "the files went back, but the conversation could not: that message was summarised by a compaction".to_owned()
        };
        if !files.restored.is_empty() {
            let _ = write!(text, "\nrestored: {}", files_list(&files.restored));
        }
        if !files.removed.is_empty() {
            let _ = write!(
                text,
                "\nremoved (the run created them): {}",
                files_list(&files.removed)
            );
        }
        Ok(text)
    }

    /// Shift-Tab: the next permission mode, from the next run.
    pub(super) fn cycle_mode(&mut self) {
        let next = self.permission.next();
        self.set_mode(next);
    }

    /// Sets the permission mode of the next runs and says what it means.
    pub(super) fn set_mode(&mut self, mode: PermissionMode) {
        if self.env.config.workspace_trust == WorkspaceTrust::Refused
            && mode.policy_mode() != bosun_policy::Mode::ReadOnly
        {
            self.entries.push(Entry::Notice(format!(
                "this folder is not trusted, so Bosun stays read-only here (plan mode works too); \
                 to trust it, leave and start `{}`",
                crate::workspace_trust::TRUST_COMMAND
            )));
            return;
        }
        self.permission = mode;
        let what = match mode {
            PermissionMode::Plan => {
                "plan: the model may only read, and proposes a plan; every other call is denied"
            }
            PermissionMode::ReadOnly => "read-only: reads allowed, everything else denied",
            PermissionMode::WorkspaceWrite => {
                "workspace-write: reads and workspace writes allowed; commands and network ask"
            }
            PermissionMode::Full => "full: every known action allowed, except what your rules deny",
        };
        let when = if self.running.is_some() {
            " (from the next run)"
        } else {
            ""
        };
        self.entries.push(Entry::Notice(format!(
            "mode {what}{when}; Shift-Tab cycles"
        )));
    }

    /// `/mode [NAME]`.
    pub(super) fn mode_command(&mut self, name: Option<&str>) -> Result<String> {
        match name {
            None => Ok(format!(
                "mode: {} (configured: {}); /mode NAME or Shift-Tab switches: read-only, workspace-write, full, plan",
                self.permission, self.env.config.user.mode
            )),
            Some(name) => {
                let Some(mode) = PermissionMode::parse(name) else {
                    anyhow::bail!(
                        "unknown mode {}: read-only, workspace-write, full or plan",
                        sanitize_for_terminal(name)
                    );
                };
                self.set_mode(mode);
                Ok(String::new())
            }
        }
    }

    /// `/status`: what this session runs with.
    pub(super) fn status(&self) -> String {
        let env = &self.env;
        let mut lines = vec![format!("model: {}", sanitize_for_terminal(&self.model))];
        let window = self
            .context
            .context_window
            .map_or_else(|| "not known".to_owned(), |w| format!("{w} tokens"));
        let context = match self
            .context_used
            .and_then(|used| self.context.percent_left(used))
        {
            Some(left) => format!("context: window {window}, {left}% left"),
            None => format!("context: window {window}"),
        };
        lines.push(context);
        lines.push(format!(
            "tokens: {} in, {} out (this session, this window)",
            self.tokens.0, self.tokens.1
        ));
        lines.push(format!(
            "mode: {} (configured: {})",
            self.permission, env.config.user.mode
        ));
        lines.push(format!(
            "workspace: {} ({})",
            sanitize_for_terminal(&env.workspace.root().display().to_string()),
            env.config.workspace_trust.as_str()
        ));
        let launcher = bosun_launch::Launcher::new(env.config.user.sandbox.clone())
            .cache_in(env.config.home.join("cache"));
        lines.push(launcher.status().summary());
        match env.listing() {
            Ok(catalog) => {
                let loaded: Vec<String> = catalog
                    .entries()
                    .iter()
                    .filter(|e| matches!(e.state, bosun_plugins::PluginState::Enabled))
                    .map(|e| sanitize_for_terminal(&e.local_name))
                    .collect();
                lines.push(if loaded.is_empty() {
                    "plugins: none active (/plugins)".to_owned()
                } else {
                    format!("plugins: {} (/plugins)", loaded.join(", "))
                });
            }
            Err(e) => lines.push(format!("plugins: cannot be listed: {e:#}")),
        }
        let servers: Vec<&String> = env.config.user.mcp.keys().collect();
        lines.push(if servers.is_empty() {
            "MCP servers: none configured".to_owned()
        } else {
            format!(
                "MCP servers: {} (/mcp)",
                servers
                    .iter()
                    .map(|s| sanitize_for_terminal(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
        lines.push(format!(
            "session: {}{}",
            self.session_id,
            if self.stored {
                ""
            } else {
                " (stored after its first run)"
            }
        ));
        lines.push(format!("workspace: {}", env.workspace.root().display()));
        match &self.last_run {
            Some(run) => lines.push(format!(
                "trace: {} (/inspect)",
                env.config.runs_dir().join(format!("{run}.jsonl")).display()
            )),
            None => lines.push(format!(
                "trace: none yet; runs are traced in {}",
                env.config.runs_dir().display()
            )),
        }
        lines.join("\n")
    }
}

/// The files the conversation's last run changed through the file tools, if it kept any.
fn last_run_files(open: &Conversation, home: &std::path::Path) -> Vec<String> {
    let Some(last) = open.stored.run_ids.last() else {
        return Vec::new();
    };
    open.checkpoints(home)
        .points()
        .unwrap_or_default()
        .into_iter()
        .find(|p| &p.run_id == last)
        .map(|p| p.files)
        .unwrap_or_default()
}
