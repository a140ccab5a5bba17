//! Slash commands: what the person can ask of Bosun itself rather than of the model. Parsing is
//! here, with the read-only answers; each one calls the function its `bosun` subcommand calls,
//! so the two faces cannot drift. Commands that change something (trust) only prepare here; the
//! app asks for a confirmation before acting.

use std::fmt::Write as _;

use anyhow::Result;
use bosun_agent::session_store::SessionStore;
use bosun_core::Risk;
use bosun_host::approval::sanitize_for_terminal;
use bosun_models::{KeyStatus, process_env};
use bosun_plugins::PluginScope;

use crate::env::Env;

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Slash {
    Help,
    Plugins,
    Trust(String),
    Untrust(String),
    /// `/plugins search QUERY [--from SOURCE]`: the registries' plugins matching QUERY.
    PluginSearch {
        query: String,
        from: Option<String>,
    },
    /// `/plugins install NAME[@VERSION] [--from SOURCE]`: through the chokepoint, reviewed.
    PluginInstall {
        spec: String,
        from: Option<String>,
    },
    Policy,
    PolicyCheck {
        action: String,
        capabilities: Vec<String>,
    },
    Model(Option<String>),
    Skills,
    Sessions,
    Inspect,
    Quit,
    Mcp,
    McpTrust(String),
    McpUntrust(String),
    Clear,
    Resume(Option<String>),
    Diff,
    Init,
    Compact,
    Mouse,
    /// `/undo [--force]`: the last run's file changes.
    Undo {
        force: bool,
    },
    /// `/rewind`: the points; `/rewind N [--force]`: back to before point N.
    Rewind(Option<(usize, bool)>),
    Status,
    /// `/config`: each setting in force and the layer that set it.
    Config,
    /// `/mode [NAME]`: the permission mode, or switch to NAME.
    Mode(Option<String>),
    /// `/review [FOCUS]`: a review of the working tree's changes, changing nothing.
    Review(Option<String>),
}

/// Every command with what it does, as `/help` lists them.
pub(crate) const COMMANDS: &[(&str, &str)] = &[
    ("/help", "this list"),
    ("/plugins", "plugins in every scope, with their state"),
    (
        "/plugins trust NAME",
        "trust a project plugin as it is (asks first)",
    ),
    (
        "/plugins untrust NAME",
        "forget a project plugin's trust (asks first)",
    ),
    (
        "/plugins search QUERY [--from SOURCE]",
        "plugins in your registries, signed or not",
    ),
    (
        "/plugins install NAME[@VERSION] [--from SOURCE]",
        "install from a registry after its review",
    ),
    ("/policy", "the mode and the rules in force"),
    (
        "/config",
        "each setting in force, the layer that set it and where",
    ),
    (
        "/policy check ACTION [CAP]...",
        "the decision for an action, and why",
    ),
    (
        "/model [NAME]",
        "the model; with NAME, switch from the next turn",
    ),
    ("/skills", "the skills a run offers ($NAME selects one)"),
    ("/sessions", "stored sessions, most recent first"),
    ("/mcp", "MCP servers and whether their tools are approved"),
    (
        "/mcp trust NAME",
        "start a server, review its tools, approve them (asks first)",
    ),
    (
        "/mcp untrust NAME",
        "forget a server's approval (asks first)",
    ),
    (
        "/resume [N|ID]",
        "pick a session of this workspace and continue it",
    ),
    (
        "/clear",
        "start a new session (the current one stays stored)",
    ),
    (
        "/compact",
        "summarise the earlier turns (no tools offered); keep the summary and the last turns",
    ),
    (
        "/diff",
        "the changes this session's tools made to the workspace",
    ),
    (
        "/init",
        "have the model write AGENTS.md for this repository (asks first)",
    ),
    (
        "/undo [--force]",
        "put back the files the last run changed with Bosun's file tools",
    ),
    (
        "/rewind [N [--force]]",
        "list the runs that changed files; with N, go back to before run N: conversation and files",
    ),
    (
        "/status",
        "model, context, tokens, mode, sandbox, plugins, MCP servers, session, trace",
    ),
    (
        "/mode [NAME]",
        "the permission mode (read-only, workspace-write, full, plan); Shift-Tab cycles it",
    ),
    (
        "/review [FOCUS]",
        "the model reviews the working tree's changes (git diff HEAD) in plan mode: comments, no edits",
    ),
    ("/inspect", "the trace of this session's last run"),
    (
        "/mouse",
        "switch the wheel between scrolling here and the terminal's own selection",
    ),
    ("/quit", "leave; the session is saved"),
];

/// Parses a line that starts with `/`. The error says what was wrong and names `/help`.
pub(crate) fn parse(line: &str) -> Result<Slash, String> {
    let mut words = line.split_whitespace();
    let command = words.next().unwrap_or("/");
    let args: Vec<&str> = words.collect();
    let usage = |form: &str| Err(format!("usage: {form} (/help lists the commands)"));
    match (command, args.as_slice()) {
        ("/help" | "/?", []) => Ok(Slash::Help),
        ("/plugins", []) => Ok(Slash::Plugins),
        ("/plugins", ["trust", name]) => Ok(Slash::Trust((*name).to_owned())),
        ("/plugins", ["untrust", name]) => Ok(Slash::Untrust((*name).to_owned())),
        ("/plugins", ["search", rest @ ..]) => match super::registry::with_from(rest) {
            Some((words, from)) if !words.is_empty() => Ok(Slash::PluginSearch {
                query: words.join(" "),
                from,
            }),
            _ => usage("/plugins search QUERY [--from SOURCE]"),
        },
        ("/plugins", ["install", rest @ ..]) => match super::registry::with_from(rest) {
            Some((words, from)) if words.len() == 1 => Ok(Slash::PluginInstall {
                spec: words[0].to_owned(),
                from,
            }),
            _ => usage("/plugins install NAME[@VERSION] [--from SOURCE]"),
        },
        ("/plugins", _) => usage(
            "/plugins [trust NAME | untrust NAME | search QUERY | install NAME[@VERSION]] [--from SOURCE]",
        ),
        ("/policy", []) => Ok(Slash::Policy),
        ("/policy", ["check", action, capabilities @ ..]) => Ok(Slash::PolicyCheck {
            action: (*action).to_owned(),
            capabilities: capabilities.iter().map(|c| (*c).to_owned()).collect(),
        }),
        ("/policy", _) => usage("/policy [check ACTION [CAP]...]"),
        ("/model", []) => Ok(Slash::Model(None)),
        ("/model", [name]) => Ok(Slash::Model(Some((*name).to_owned()))),
        ("/model", _) => usage("/model [NAME]"),
        ("/skills", []) => Ok(Slash::Skills),
        ("/sessions", []) => Ok(Slash::Sessions),
        ("/inspect", []) => Ok(Slash::Inspect),
        ("/quit" | "/exit", []) => Ok(Slash::Quit),
        ("/mcp", []) => Ok(Slash::Mcp),
        ("/mcp", ["trust", name]) => Ok(Slash::McpTrust((*name).to_owned())),
        ("/mcp", ["untrust", name]) => Ok(Slash::McpUntrust((*name).to_owned())),
        ("/mcp", _) => usage("/mcp [trust NAME | untrust NAME]"),
        ("/clear" | "/new", []) => Ok(Slash::Clear),
        ("/resume", []) => Ok(Slash::Resume(None)),
        ("/resume", [which]) => Ok(Slash::Resume(Some((*which).to_owned()))),
        ("/resume", _) => usage("/resume [N|ID]"),
        ("/diff", []) => Ok(Slash::Diff),
        ("/init", []) => Ok(Slash::Init),
        ("/compact", []) => Ok(Slash::Compact),
        ("/mouse", []) => Ok(Slash::Mouse),
        ("/undo", []) => Ok(Slash::Undo { force: false }),
        ("/undo", ["--force"]) => Ok(Slash::Undo { force: true }),
        ("/undo", _) => usage("/undo [--force]"),
        ("/rewind", []) => Ok(Slash::Rewind(None)),
        ("/rewind", [n, rest @ ..]) if rest.is_empty() || *rest == ["--force"] => {
            match n.parse::<usize>() {
                Ok(n) if n > 0 => Ok(Slash::Rewind(Some((n, !rest.is_empty())))),
                _ => usage("/rewind [N [--force]]"),
            }
        }
        ("/rewind", _) => usage("/rewind [N [--force]]"),
        ("/status", []) => Ok(Slash::Status),
        ("/config", []) => Ok(Slash::Config),
        ("/mode", []) => Ok(Slash::Mode(None)),
        ("/mode", [name]) => Ok(Slash::Mode(Some((*name).to_owned()))),
        ("/mode", _) => usage("/mode [read-only | workspace-write | full | plan]"),
        ("/review", []) => Ok(Slash::Review(None)),
        ("/review", focus) => Ok(Slash::Review(Some(focus.join(" ")))),
        (
            "/help" | "/?" | "/skills" | "/sessions" | "/inspect" | "/quit" | "/exit" | "/clear"
            | "/new" | "/diff" | "/init" | "/compact" | "/mouse" | "/status" | "/config",
            _,
        ) => usage(command),
        _ => Err(format!(
            "unknown command {}: /help lists the commands",
            sanitize_for_terminal(command)
        )),
    }
}

/// `/help`.
pub(crate) fn help() -> String {
    let width = COMMANDS.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    let mut text = String::from("Commands:\n");
    for (command, what) in COMMANDS {
        let _ = writeln!(text, "  {command:<width$}  {what}");
    }
    text.push_str(
        "Anything else is a task for the model; typed while a run goes, it is queued. !cmd runs a \
         shell command yourself, through the same policy and sandbox: its output is shown and \
         goes to the model with your next message.\n\
         Keys: Enter sends; Ctrl-J or Alt-Enter starts a new line (a paste keeps its lines); @ opens \
         a list of the workspace's files (fuzzy, ignore files honoured: type to narrow, Up/Down \
         choose, Enter takes one, Esc closes it; Tab completes the typed start); Up/Down move between lines, then through this \
         workspace's history; PageUp/PageDown or the mouse wheel scroll (Shift-drag selects text; \
         /mouse leaves the mouse to the terminal), End returns; Ctrl-O shows all of each result and each call's JSON input (again: hides them).\n\
         Approvals: o or y allow once, s allow for this session, w always here, d or Esc deny, f deny with a reason.\n\
         Esc or Ctrl-C cancels a run (what it wrote stays; queued tasks come back to the prompt); \
         Ctrl-C again leaves now; at the prompt it clears the line, and twice leaves. Ctrl-D on \
         an empty prompt leaves.\n\
         Shift-Tab cycles the permission mode (read-only, workspace-write, full, plan: in plan \
         mode the model may only read, and proposes); it applies from the next run. Esc Esc at an \
         empty prompt goes back to before your last message (asks first): its text returns to \
         the prompt and the files its run changed through Bosun's file tools are put back.\n\
         Undo: /undo and /rewind restore what Bosun's file tools wrote (exact bytes and modes; \
         files they created are removed); changes made by commands a run started are not \
         captured.\n\
         Context: the status line shows how much of the model's window is left; near the end \
         the earlier turns are summarised automatically.",
    );
    text
}

/// The commands of the installed Claude Code plugins, for `/help`.
pub(crate) fn plugin_command_lines(env: &Env) -> String {
    let plugins = bosun_host::plugin_commands::PluginCommands::load(&env.config.home);
    let mut text = String::new();
    for command in plugins.all() {
        let mut form = plugins.shown_name(command);
        if let Some(hint) = &command.argument_hint {
            form.push(' ');
            form.push_str(hint);
        }
        let _ = writeln!(
            text,
            "  {}  {} (plugin {})",
            sanitize_for_terminal(&form),
            sanitize_for_terminal(&command.description),
            sanitize_for_terminal(&command.plugin)
        );
    }
    if text.is_empty() {
        return text;
    }
    format!(
        "Plugin commands (their prompt goes to the model; /plugin:name always reaches one):\n{text}"
    )
}

/// `/skills`: what `bosun skills list` shows, diagnostics included.
pub(crate) fn skills(env: &Env) -> String {
    let skills = bosun_host::skills::Skills::of(&env.config, env.workspace.root());
    let (mut lines, diagnostics) = crate::commands::skill_lines(&skills);
    lines.extend(diagnostics);
    if lines.is_empty() {
        "no skills".to_owned()
    } else {
        lines.join("\n")
    }
}

/// `/plugins`: the listing of `bosun plugins list`, and the catalog's warnings.
pub(crate) fn plugins(env: &Env) -> Result<String> {
    let catalog = env.listing()?;
    let mut text = crate::plugins::list_lines(&catalog).join("\n");
    for warning in catalog.warnings() {
        let _ = write!(text, "\nwarning: {warning}");
    }
    if catalog
        .entries()
        .iter()
        .any(|e| matches!(e.scope, PluginScope::Project { .. }))
    {
        text.push_str("\n/plugins trust NAME and /plugins untrust NAME decide on a project plugin");
    }
    Ok(text)
}

/// `/policy`: the mode's defaults by risk, then the rules of each config file.
pub(crate) fn policy(env: &Env) -> String {
    let mode = env.config.user.mode;
    let defaults: Vec<String> = [
        Risk::Read,
        Risk::Write,
        Risk::Process,
        Risk::Network,
        Risk::Model,
    ]
    .into_iter()
    .map(|risk| format!("{risk} {}", mode.default_for_risk(risk)))
    .collect();
    let mut text = format!("mode {mode}: {}", defaults.join(", "));
    let mut rules = 0;
    if let Some(file) = &env.config.user_file
        && !env.config.user.policy.rules.is_empty()
    {
        let _ = write!(text, "\nuser rules ({}):", file.path.display());
        for rule in &env.config.user.policy.rules {
            let _ = write!(text, "\n  {}", rule.get_ref());
            rules += 1;
        }
    }
    if let Some((project, file)) = &env.config.project
        && !project.policy.rules.is_empty()
    {
        let how = if env.config.trusted {
            "a trusted workspace: may loosen all but the user's deny"
        } else {
            "may only tighten"
        };
        let _ = write!(text, "\nproject rules ({}, {how}):", file.path.display());
        for rule in &project.policy.rules {
            let _ = write!(text, "\n  {}", rule.get_ref());
            rules += 1;
        }
    }
    if rules == 0 {
        text.push_str("\nno rules: the mode decides everything");
    }
    text.push_str("\n/policy check ACTION [CAP]... explains one decision");
    text
}

/// `/policy check ACTION [CAP]...`: what `bosun policy check` prints.
pub(crate) fn policy_check(env: &Env, action: &str, capabilities: &[String]) -> Result<String> {
    let explanation = crate::commands::policy_explanation(env, action, capabilities)?;
    Ok(crate::commands::render_explanation(&explanation)
        .trim_end()
        .to_owned())
}

/// `/model`: the model of the next turn and every configured one.
pub(crate) fn models(env: &Env, current: &str) -> String {
    let listing = env.config.user.models_config().list(process_env);
    let mut text = format!("model: {}", sanitize_for_terminal(current));
    for m in &listing {
        let key = match (m.key, &m.api_key_env) {
            (KeyStatus::Missing, Some(var)) => format!("  (key MISSING: set {var})"),
            _ => String::new(),
        };
        let _ = write!(
            text,
            "\n{} {:<12} {:<16} {}{key}",
            if m.name == current { "*" } else { " " },
            m.name,
            m.provider.as_str(),
            m.model,
        );
    }
    text.push_str("\n/model NAME switches from the next turn");
    text
}

/// `/sessions`: what `bosun sessions list` prints.
pub(crate) fn sessions(env: &Env, current: &str) -> Result<String> {
    let store = SessionStore::in_home(&env.config.home);
    let (mut sessions, warnings) = store.list()?;
    sessions.retain(|s| s.workspace == env.workspace.root());
    let mut lines = crate::run::session_lines(&store, &sessions, false);
    lines.extend(warnings.into_iter().map(|w| format!("warning: {w}")));
    lines.push(format!(
        "this session: {current}; `bosun --resume ID` opens another"
    ));
    Ok(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_and_mistakes_name_help() {
        assert_eq!(parse("/help"), Ok(Slash::Help));
        assert_eq!(
            parse("/plugins  trust  hello"),
            Ok(Slash::Trust("hello".into()))
        );
        assert_eq!(
            parse("/policy check builtin.tool.run_command process.spawn:ls"),
            Ok(Slash::PolicyCheck {
                action: "builtin.tool.run_command".into(),
                capabilities: vec!["process.spawn:ls".into()]
            })
        );
        assert_eq!(parse("/model"), Ok(Slash::Model(None)));
        assert_eq!(parse("/skills"), Ok(Slash::Skills));
        assert_eq!(
            parse("/plugins trust"),
            Err("usage: /plugins [trust NAME | untrust NAME | search QUERY | install NAME[@VERSION]] [--from SOURCE] (/help lists the commands)".into())
        );
        assert_eq!(
            parse("/frobnicate now"),
            Err("unknown command /frobnicate: /help lists the commands".into())
        );
        assert_eq!(
            parse("/\u{1b}[2J"),
            Err("unknown command /\\u{1b}[2J: /help lists the commands".into())
        );
    }

    #[test]
    fn help_names_every_command() {
        let text = help();
        for (command, _) in COMMANDS {
            assert!(text.contains(command), "{command} missing from\n{text}");
        }
    }
}
