//! What the terminal UI's slash commands do (`/clear`, `/resume`, `/model`, `/plugins trust`, …)
//! and what a confirmed plugin or MCP change writes. Parsing them is [`super::slash`]'s job;
//! every change to trust asks the person first.

use std::sync::Arc;

use anyhow::Result;
use bosun_host::approval::sanitize_for_terminal;
use bosun_plugins::PluginScope;

use super::app::{App, Confirm, PluginAction, Running};
use super::events::CompactEnd;
use super::slash::{self, Slash};
use super::transcript::{Entry, ToolState, earlier_entries, sanitize_for_terminal_lines};
use crate::env::Env;

impl App {
    /// Runs the plugin command `line` (`name` is its full name) as a turn, or queues it behind
    /// the run going on.
    fn plugin_command(&mut self, line: &str, name: &str) {
        super::history::append(&self.env, line);
        if self.running.is_some() {
            self.entries.push(Entry::Notice(format!(
                "queued (sent when this run ends): {}",
                sanitize_for_terminal(line)
            )));
            self.queued.push_back(line.to_owned());
            return;
        }
        self.start_turn(
            line.to_owned(),
            &format!(
                "{}: the plugin's prompt goes to the model",
                sanitize_for_terminal(name)
            ),
        );
    }

    pub(super) fn slash(&mut self, line: &str) {
        let command = match slash::parse(line) {
            Ok(command) => command,
            Err(message) => {
                // Not Bosun's own: an installed plugin's command is a task the turn expands.
                let plugins =
                    bosun_host::plugin_commands::PluginCommands::load(&self.env.config.home);
                match plugins.find(line) {
                    Ok(Some((command, _))) => {
                        let name = format!("/{}", command.name);
                        self.plugin_command(line, &name);
                    }
                    Ok(None) => self.entries.push(Entry::Error(message)),
                    Err(e) => self.entries.push(Entry::Error(e.to_string())),
                }
                return;
            }
        };
        let env = self.env.clone();
        let shown = match command {
            Slash::Help => {
                let plugins = slash::plugin_command_lines(&env);
                Ok(if plugins.is_empty() {
                    slash::help()
                } else {
                    format!("{}\n{}", slash::help(), plugins.trim_end())
                })
            }
            Slash::Mouse => {
                self.mouse = !self.mouse;
                Ok(if self.mouse {
                    "mouse: the wheel scrolls the conversation (hold Shift to select text; /mouse again to leave the mouse to the terminal)".to_owned()
                } else {
                    "mouse: left to the terminal — select and copy as usual; PageUp/PageDown scroll (/mouse again for the wheel)".to_owned()
                })
            }
            Slash::Plugins => slash::plugins(&env),
            Slash::Trust(name) => self.ask_trust(&name).map(|()| String::new()),
            Slash::Untrust(name) => self.ask_untrust(&name).map(|()| String::new()),
            Slash::PluginSearch { query, from } => Ok(self.search_plugins(query, from)),
            Slash::PluginInstall { spec, from } => self.install_plugin(&spec, from.as_deref()),
            Slash::Policy => Ok(slash::policy(&env)),
            Slash::PolicyCheck {
                action,
                capabilities,
            } => slash::policy_check(&env, &action, &capabilities),
            // The config is read again, so a model added since the start is there.
            Slash::Model(None) => self
                .reload_env()
                .map(|env| slash::models(&env, &self.model)),
            Slash::Model(Some(name)) => self.reload_env().and_then(|env| {
                bosun_agent::assembly::open_model(&env.config, &name)
                    .map_err(anyhow::Error::from)
                    .map(|configured| {
                        self.model = name.clone();
                        self.context = bosun_agent::context::ContextBudget::of(&configured);
                        self.context_used = None;
                        format!("model: {name} from the next turn")
                    })
            }),
            Slash::Mcp => crate::mcp::list_lines(&env).map(|lines| lines.join("\n")),
            Slash::McpTrust(name) => self.ask_mcp_trust(&name).map(|()| String::new()),
            Slash::McpUntrust(name) => {
                self.confirm = Some(Confirm::new(
                    format!(
                        "Forget the approval of MCP server `{name}`? Its tools will not be offered until it is approved again."
                    ),
                    PluginAction::McpUntrust(name),
                ));
                Ok(String::new())
            }
            Slash::Clear => self.clear(),
            Slash::Resume(which) => self.resume(which.as_deref()),
            Slash::Diff => Ok(self.diff()),
            Slash::Init => self.init(),
            Slash::Compact => self.compact(),
            Slash::Undo { force } => self.undo(force),
            Slash::Rewind(None) => self.rewind_points(),
            Slash::Rewind(Some((n, force))) => self.rewind_to(n, force),
            Slash::Status => Ok(self.status()),
            Slash::Config => super::config_view::config(&env, self.permission, &self.model)
                .map_err(anyhow::Error::msg),
            Slash::Mode(name) => self.mode_command(name.as_deref()),
            Slash::Review(focus) => self.review(focus),
            Slash::Skills => Ok(slash::skills(&env)),
            Slash::Sessions => slash::sessions(&env, &self.session_id),
            Slash::Inspect => {
                let which = self.last_run.as_deref().unwrap_or("last");
                crate::commands::inspect_text(&env.config.home, which)
                    .map(|text| text.trim_end().to_owned())
            }
            Slash::Quit => {
                if let Some(run) = &mut self.running {
                    run.cancelling = true;
                    run.cancel.cancel();
                    self.quit_after_run = true;
                    self.deny_all();
                    Ok("cancelling the run; leaving when the session is stored".to_owned())
                } else {
                    self.exit = true;
                    Ok(String::new())
                }
            }
        };
        match shown {
            Ok(text) if text.is_empty() => {}
            Ok(text) => self.entries.push(Entry::Notice(text)),
            Err(e) => self.entries.push(Entry::Error(format!("{e:#}"))),
        }
    }

    /// Reads the configuration again (for `/model`): a config that no longer parses is
    /// reported and the one in use kept.
    pub(super) fn reload_env(&mut self) -> Result<Arc<Env>> {
        let env = crate::env::load_in(self.env.workspace.root(), &self.env.config.home)
            .map_err(|e| e.context("reading the configuration again"))?;
        self.env = Arc::new(env);
        Ok(self.env.clone())
    }

    /// Refuses what needs the session while a run holds it.
    pub(super) fn idle(&self, what: &str) -> Result<()> {
        if self.running.is_some() {
            anyhow::bail!("{what} waits for the run to end (Ctrl-C cancels it)");
        }
        Ok(())
    }

    /// `/clear`: a new session in this window; the old one stays stored.
    pub(super) fn clear(&mut self) -> Result<String> {
        self.idle("/clear")?;
        let open = crate::run::open_session(&self.env, None, Some(&self.model))?;
        let before = std::mem::replace(&mut self.session_id, open.stored.id.clone());
        let kept = self.stored;
        self.session = Some(open);
        self.entries.clear();
        self.stored = false;
        self.last_run = None;
        self.steps = 0;
        self.tool_calls = 0;
        self.tokens = (0, 0);
        self.labels = (bosun_core::Classification::Public, None);
        self.scroll = 0;
        Ok(if kept {
            format!("new session; the previous one is stored: /resume or `bosun --resume {before}`")
        } else {
            "new session".to_owned()
        })
    }

    /// `/resume`: this workspace's sessions numbered; `/resume N` or `/resume ID` continues one.
    pub(super) fn resume(&mut self, which: Option<&str>) -> Result<String> {
        let store = bosun_agent::session_store::SessionStore::in_home(&self.env.config.home);
        let (mut sessions, _) = store.list()?;
        sessions.retain(|s| s.workspace == self.env.workspace.root() && s.id != self.session_id);
        let Some(which) = which else {
            if sessions.is_empty() {
                return Ok("no other session in this workspace".to_owned());
            }
            let mut lines: Vec<String> = sessions
                .iter()
                .take(20)
                .enumerate()
                .map(|(i, s)| {
                    format!(
                        "{:>2}. {}  {}  {}",
                        i + 1,
                        s.updated_at.format("%Y-%m-%d %H:%M"),
                        &s.id[..s.id.len().min(13)],
                        sanitize_for_terminal(&s.title)
                    )
                })
                .collect();
            lines.push("/resume N continues one".to_owned());
            return Ok(lines.join("\n"));
        };
        self.idle("/resume")?;
        let id = match which.parse::<usize>() {
            Ok(n) if (1..=sessions.len()).contains(&n) => sessions[n - 1].id.clone(),
            Ok(n) => anyhow::bail!("no session {n}: /resume lists them"),
            Err(_) => which.to_owned(),
        };
        let open = crate::run::open_session(&self.env, Some(&id), None)?;
        self.session_id.clone_from(&open.stored.id);
        self.model.clone_from(&open.stored.model);
        self.entries = earlier_entries(&open.stored.messages);
        self.stored = !open.stored.run_ids.is_empty();
        self.last_run = open.stored.run_ids.last().cloned();
        self.tokens = (0, 0);
        // The resumed history's labels: the URL guard and the status line hold from its start.
        self.labels = super::app::held_labels(&open);
        self.scroll = 0;
        let text = format!(
            "resumed session {} ({} messages)",
            open.stored.id,
            open.stored.messages.len()
        );
        self.session = Some(open);
        Ok(text)
    }

    /// `/diff`: what this session's tools changed — each patch's diff, each file created.
    pub(super) fn diff(&self) -> String {
        let mut lines = Vec::new();
        for entry in &self.entries {
            let Entry::Tool(tool) = entry else { continue };
            let ToolState::Done(summary) = &tool.state else {
                continue;
            };
            match tool.tool.as_str() {
                "apply_patch" => {
                    lines.push(summary.clone());
                    lines.extend(tool.detail.iter().map(|d| format!("  {}", d.text)));
                }
                "create_file" => lines.push(summary.clone()),
                _ => {}
            }
        }
        if lines.is_empty() {
            "no changes by this session's tools (commands it ran are not tracked: run `git status`)"
                .to_owned()
        } else {
            lines.join("\n")
        }
    }

    /// `/init`: asks the model, as an ordinary turn, to write `AGENTS.md` (creating the file
    /// asks for approval like any write).
    pub(super) fn init(&mut self) -> Result<String> {
        self.idle("/init")?;
        if self.env.workspace.root().join("AGENTS.md").exists() {
            anyhow::bail!("AGENTS.md exists already: ask the model to update it if you want");
        }
        // AGENTS.md goes into every later prompt in this workspace: asked before a run starts.
        self.confirm = Some(Confirm::new(
            "Have the model write AGENTS.md at the workspace root? Every later run here carries it in its prompt; creating it still asks, as any write of it does.".to_owned(),
            PluginAction::Init,
        ));
        Ok(String::new())
    }

    /// `/compact`: the model summarises the earlier turns in a request that offers no tools;
    /// the session keeps the summary and the recent turns ([`bosun_agent::compaction`]).
    pub(super) fn compact(&mut self) -> Result<String> {
        self.idle("/compact")?;
        let Some(open) = self.session.take() else {
            return Ok(String::new());
        };
        if open.stored.messages.is_empty() {
            self.session = Some(open);
            anyhow::bail!("nothing to compact yet");
        }
        // The model `/model` chose last, not the one the last turn used.
        let cancel = self
            .engine
            .compact(self.env.clone(), open, self.model.clone());
        self.running = Some(Running {
            cancel,
            cancelling: false,
            text_entry: None,
            doing: ("summarising".to_owned(), std::time::Instant::now()),
            retry: None,
        });
        Ok("/compact: the model summarises the earlier turns (no tools offered)".to_owned())
    }

    pub(super) fn project_plugin(&self, name: &str) -> Result<()> {
        let (_, catalog) = self.env.catalog()?;
        let entry = crate::plugins::find(&catalog, name)?;
        if matches!(entry.scope, PluginScope::User) {
            anyhow::bail!(
                "`{name}` is a user plugin: it is trusted when enabled, with `bosun plugins enable {name}`, and stopped with `bosun plugins disable {name}`"
            );
        }
        Ok(())
    }

    pub(super) fn ask_trust(&mut self, name: &str) -> Result<()> {
        self.project_plugin(name)?;
        let (_, catalog) = self.env.catalog()?;
        let Some(review) = crate::plugins::review_trust(&catalog, Some(name))? else {
            return Ok(());
        };
        self.confirm = Some(Confirm::new(
            format!(
                "{}Trust `{name}` exactly as it is?",
                sanitize_for_terminal_lines(&review.text)
            ),
            PluginAction::Trust(review),
        ));
        Ok(())
    }

    pub(super) fn ask_untrust(&mut self, name: &str) -> Result<()> {
        self.project_plugin(name)?;
        self.confirm = Some(Confirm::new(
            format!(
                "Forget the trust of `{name}`? Its code will not load until it is trusted again."
            ),
            PluginAction::Untrust(name.to_owned()),
        ));
        Ok(())
    }

    /// `/mcp trust NAME`: starts the server, shows what it offers and asks before pinning.
    pub(super) fn ask_mcp_trust(&mut self, name: &str) -> Result<()> {
        let review = crate::mcp::review(&self.env, name)?;
        self.confirm = Some(Confirm::new(
            format!(
                "MCP server `{name}` offers:\n{}\nApprove these {} tool(s) exactly as shown?",
                review.text, review.count
            ),
            PluginAction::McpTrust(name.to_owned(), review),
        ));
        Ok(())
    }

    pub(super) fn confirmed(&mut self, action: PluginAction) {
        let done = match action {
            PluginAction::Trust(review) => {
                let names = review.names.join(", ");
                crate::plugins::trust_store(&self.env.config)
                    .and_then(|mut store| crate::plugins::record_trust(&mut store, review))
                    .map(|()| format!("trusted {names}; its tools load from the next turn"))
            }
            PluginAction::Untrust(name) => crate::plugins::untrust_named(&self.env, &name),
            PluginAction::McpTrust(name, review) => crate::mcp::record(&self.env, &name, review)
                .map(|text| format!("{text}; its tools are offered from the next turn")),
            PluginAction::McpUntrust(name) => crate::mcp::remove(&self.env, &name),
            PluginAction::Rewind => self.rewind(None, false, "/rewind N --force"),
            PluginAction::Init => {
                self.start_turn(INIT_TASK.to_owned(), "/init: writing AGENTS.md");
                Ok(String::new())
            }
        };
        match done {
            Ok(text) if text.is_empty() => {}
            Ok(text) => self.entries.push(Entry::Notice(text)),
            Err(e) => self.entries.push(Entry::Error(format!("{e:#}"))),
        }
    }
}

/// What `/init` asks of the model.
const INIT_TASK: &str = "Write an AGENTS.md file at the root of this repository for coding agents \
that will work here. Look around first (list_files, read_file on the build files and the main \
entry points), then create AGENTS.md with: what the project is in two sentences; how to build, \
run the tests and the linters (exact commands); the layout (the main directories and what lives \
in each); conventions a contributor must follow. Keep it under 80 lines and factual: only what \
you found in the repository.";

impl App {
    /// After a `/compact`: the session back, with the summary and the recent turns or as it was.
    pub(super) fn compacted(&mut self, end: CompactEnd) {
        let CompactEnd { open, result } = end;
        self.session = Some(open);
        self.running = None;
        match result {
            Ok(done) => {
                self.context_used = None;
                self.context_warned = false;
                self.stored = true;
                self.entries.push(Entry::Assistant(done.summary.clone()));
                self.entries.push(Entry::Notice(format!(
                    "compacted {} messages into the summary above, kept the last {} as they were; the session continues from it",
                    done.summarised, done.kept
                )));
            }
            Err(e) => self.entries.push(Entry::Warning(sanitize_for_terminal(&e))),
        }
        if self.quit_after_run {
            self.exit = true;
        }
    }
}
