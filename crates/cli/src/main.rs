//! `bosun`: a thin face over Bosun's libraries. It parses arguments, loads configuration, calls
//! the chokepoint or the policy engine, prints, and maps outcomes to documented exit codes.
//! Without a command it opens the interactive terminal UI ([`tui`]).
//!
//!
//! | code | meaning |
//! | --- | --- |
//! | 0 | success |
//! | 1 | the tool returned an error |
//! | 2 | usage or configuration error |
//! | 3 | denied by policy (or by the person asked) |
//! | 4 | approval needed and nobody to ask |
//! | 5 | `bosun run`: a budget ran out (the session is saved) |
//! | 6 | `bosun run`: the model provider failed after its retries |
//! | 130 | `bosun run`: cancelled with Ctrl-C (the session is saved) |

mod acp;
mod claude;
mod commands;
mod doctor;
mod env;
mod first_run;
mod mcp;
mod plugin_commands;
mod plugins;
mod registry;
mod run;
mod serve;
mod sessions;
mod term;
mod tui;
mod workspace_trust;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit codes.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// The tool returned an error.
    pub const TOOL_ERROR: u8 = 1;
    /// Usage or configuration error.
    pub const USAGE: u8 = 2;
    /// Denied.
    pub const DENIED: u8 = 3;
    /// Approval needed and nobody to ask.
    pub const NEEDS_APPROVAL: u8 = 4;
}

/// `bosun --version`: the crate's version, and the commit and date it was built from (set by
/// `build.rs`, which always sets both: `unknown` when the build had neither git nor the
/// packager's variables). A constant, so printing it needs nothing built first.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("BOSUN_COMMIT"),
    ", ",
    env!("BOSUN_COMMIT_DATE"),
    ")"
);

/// What `bosun --version` prints: clap's own version line, byte for byte
/// (`tests::the_early_version_line_is_what_clap_prints`).
const VERSION_LINE: &str = concat!(
    "bosun ",
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("BOSUN_COMMIT"),
    ", ",
    env!("BOSUN_COMMIT_DATE"),
    ")\n"
);

/// Whether the whole command line is `bosun --version` (or `-V`): answered before clap builds
/// the definition of every command to parse one flag, which was a third of the command's time.
/// Anything else on the line goes through clap as before.
fn version_alone(mut args: impl Iterator<Item = std::ffi::OsString>) -> bool {
    matches!((args.next(), args.next()), (Some(flag), None) if flag == "--version" || flag == "-V")
}

#[derive(Debug, Parser)]
#[command(
    name = "bosun",
    version = VERSION,
    about = "An agent host whose every tool call passes one chokepoint.",
    long_about = "An agent host whose every tool call passes one chokepoint.\n\nWithout a command, opens the interactive terminal UI (/help there lists its commands). With no model configured it offers to configure the OpenAI or Anthropic key or the local Ollama or vLLM it finds, else opens on a scripted demo model. `bosun doctor` checks the whole setup.",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Interactive: continue a stored session (an id, a unique prefix, or `last`).
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// Interactive: the model entry ([models.NAME]) to start with.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// Trust this folder as the workspace without asking, and remember it (its AGENTS.md,
    /// .bosun/config.toml, skills and agents then apply).
    #[arg(long)]
    trust_workspace: bool,
}

// Every subcommand enum is `defer`: a command's own arguments are defined only when the
// command line names it (or help, completions or the manual need them all), so parsing `tools
// call` does not build the flags of sixty other commands first.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum Command {
    /// List or call tools.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Ask the policy engine about an action.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Render a run's trace.
    Inspect {
        /// A run id (or unique prefix), or `last`.
        #[arg(default_value = "last")]
        run: String,
        /// Print the trace's JSON lines instead.
        #[arg(long)]
        json: bool,
        /// Only events whose type starts with this (`tool.`, `approval`, `taint.raised`).
        #[arg(long)]
        kind: Option<String>,
        /// Send the run (and its subagents' runs) to the OpenTelemetry collector of
        /// `[telemetry]`, as the run would have been exported live.
        #[arg(long, conflicts_with_all = ["json", "kind"])]
        export: bool,
    },
    /// Check configuration files, or write a starter one.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Check everything a run depends on (config, models and keys, sandbox, skills, plugins,
    /// MCP servers, the JavaScript engine), with a fix for each problem; exit code 1 when
    /// something is broken.
    Doctor {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script: `bosun completions bash > ~/.local/share/bash-completion/completions/bosun`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `bosun man | man -l -`.
    Man,
    /// List, inspect, trust, enable and scaffold plugins.
    #[command(subcommand)]
    Plugins(PluginsCommand),
    /// Run a task with a model; every tool call passes the chokepoint, the conversation is saved.
    Run {
        /// The task; `-` (or none, with stdin not a terminal) reads it from stdin.
        task: Option<String>,
        /// The model entry ([models.NAME]); default: the session's, default_model, or the only one.
        #[arg(long)]
        model: Option<String>,
        /// Continue a stored session: an id, a unique prefix, or `last`.
        #[arg(long, value_name = "ID")]
        resume: Option<String>,
        /// Attach an image in the workspace (PNG, JPEG, GIF or WebP; repeat for several), for a
        /// model that takes images (`images = true` in its [models.NAME]).
        #[arg(long, value_name = "FILE")]
        image: Vec<String>,
        /// Print JSON lines: the trace as it happens, each step's text as a `model.text` line,
        /// then a `run.result` event in the same envelope.
        #[arg(long)]
        json: bool,
        /// With --json: every piece of the model's text as it arrives (`model.text` lines).
        #[arg(long, requires = "json")]
        stream: bool,
        /// Approve what policy would ask about (never what it denies).
        #[arg(long)]
        yes: bool,
        /// Trust this folder as the workspace without asking, and remember it.
        #[arg(long)]
        trust_workspace: bool,
    },
    /// Stored sessions.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Configured models.
    #[command(subcommand)]
    Models(ModelsCommand),
    /// MCP servers whose tools Bosun offers: list them, approve their tools, remove approval.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// The OS sandbox every child process runs in: what this machine enforces.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Agent Skills (SKILL.md) offered to the model: built-in, user and project ones.
    #[command(subcommand)]
    Skills(SkillsCommand),
    /// Signed plugin catalogs: make a signing key, lay out and re-sign a catalog, pin a
    /// registry's root keys.
    #[command(subcommand)]
    Registry(RegistryCommand),
    /// Speak the Agent Client Protocol on stdin and stdout, for an editor's agent panel (Zed,
    /// JetBrains, Neovim, Emacs): its sessions are Bosun sessions, every call through policy.
    Acp,
    /// Serve the host's tools to other agents over MCP, each call through Bosun's policy.
    Serve {
        /// Serve one client over stdin and stdout (the default).
        #[arg(long, conflicts_with = "http")]
        stdio: bool,
        /// Serve Streamable HTTP at ADDR (e.g. 127.0.0.1:8765), path /mcp.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Allow a non-loopback --http address (needs --token-env or [serve.clients]).
        #[arg(long, requires = "http")]
        allow_remote: bool,
        /// The environment variable holding the bearer token every HTTP request must carry.
        #[arg(long, value_name = "VAR", requires = "http")]
        token_env: Option<String>,
        /// A browser origin allowed to call, e.g. https://app.example.com:443 (any other
        /// page's request is refused, loopback ones on other ports too; the server's own
        /// origin is served).
        #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
        allowed_origins: Vec<String>,
    },
    /// A scripted stand-in for a model (not a real model): try Bosun without an API key, as
    /// `scripts/demo` does.
    #[command(subcommand)]
    DemoModel(DemoModelCommand),
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum SkillsCommand {
    /// Every skill a run would offer, with what could not be used and why.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Search the configured registries' skills (name, description, tags).
    Search {
        /// What to look for (empty: everything).
        #[arg(default_value = "")]
        query: String,
        /// Only this registry.
        #[arg(long)]
        from: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Install a skill from a registry into $BOSUN_HOME/skills: verified, read as loading
    /// reads it, shown, and recorded in the integrity lock that every load checks.
    Install {
        /// NAME or NAME@VERSION.
        spec: String,
        /// Only this registry.
        #[arg(long)]
        from: Option<String>,
        /// Allow an older version, or replace a skill not installed from a registry.
        #[arg(long)]
        force: bool,
        /// Install without asking.
        #[arg(long)]
        yes: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Update skills installed from a registry: shows what changed and asks again when it
    /// grew; refuses a downgrade; a failed update leaves the old version in place.
    Update {
        /// One skill (default: every skill installed from a registry).
        name: Option<String>,
        /// Only say what could be updated.
        #[arg(long)]
        check: bool,
        /// Allow an older version.
        #[arg(long)]
        force: bool,
        /// Update without asking.
        #[arg(long)]
        yes: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Publish a skill to a signed catalog folder, an OCI layout folder or an OCI registry:
    /// read by the skills' discovery (nothing runs), its version from the front matter's `version`, signed with
    /// the key.
    Publish {
        /// The skill's folder (its name is the skill's).
        path: std::path::PathBuf,
        /// A catalog folder, an OCI layout folder, a configured registry,
        /// oci://HOST[:PORT]/NAMESPACE, or oci-layout:FOLDER (a new air-gapped bundle).
        #[arg(long)]
        to: String,
        /// The signing key (default: $BOSUN_HOME/registry/signing-key.json).
        #[arg(long)]
        key: Option<std::path::PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum RegistryCommand {
    /// Make an Ed25519 signing key (default: $BOSUN_HOME/registry/signing-key.json).
    Keygen {
        /// Where to write it; an existing file is never overwritten.
        file: Option<std::path::PathBuf>,
    },
    /// Lay out a new signed catalog in DIR, all four roles held by the key.
    Init {
        /// The catalog's folder (serve it as it is, or copy it for an offline bundle).
        dir: std::path::PathBuf,
        /// The signing key (default: $BOSUN_HOME/registry/signing-key.json).
        #[arg(long)]
        key: Option<std::path::PathBuf>,
    },
    /// Re-sign a catalog's targets, snapshot and timestamp with fresh expiries (before the
    /// timestamp expires, or clients refuse it as frozen).
    Refresh {
        /// The catalog's folder.
        dir: std::path::PathBuf,
        /// The signing key.
        #[arg(long)]
        key: Option<std::path::PathBuf>,
    },
    /// Show a signed registry's root keys and pin them in your config once you confirm them.
    Trust {
        /// The registry's name in [registries.NAME].
        name: String,
        /// Pin without asking.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum SandboxCommand {
    /// What each layer of the sandbox enforces on this machine, and what is missing.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum McpCommand {
    /// The configured servers and what is approved of each.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Start a server, show its tools and approve them exactly as shown.
    Trust {
        /// The server ([mcp.NAME]).
        name: String,
        /// Approve without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Remove a server's approval: its tools are no longer offered.
    Untrust {
        /// The server.
        name: String,
    },
    /// Sign in to a URL server that requires OAuth: prints the address to open in a browser
    /// and waits for it to come back; the tokens are kept for later connections.
    Login {
        /// The server.
        name: String,
    },
    /// Forget a server's OAuth sign-in.
    Logout {
        /// The server.
        name: String,
    },
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum SessionsCommand {
    /// This workspace's stored sessions, most recently used first.
    List {
        /// Every workspace's sessions, with the workspace of each.
        #[arg(long)]
        all: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// One stored session: its model, workspace, runs and conversation.
    Show {
        /// An id, a unique prefix, or `last`.
        id: String,
        /// Print the stored session as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove one stored session.
    Rm {
        /// An id, a unique prefix, or `last`.
        id: String,
    },
    /// Remove this workspace's old sessions: those last used before an age, or beyond a count.
    Prune {
        /// Remove sessions last used longer ago than this (`30d`, `12h`, `2w`, `90m`).
        #[arg(long, value_name = "AGE", value_parser = sessions::parse_age)]
        older_than: Option<std::time::Duration>,
        /// Keep only the N most recently used.
        #[arg(long, value_name = "N")]
        keep: Option<usize>,
        /// Every workspace's sessions, not only this one's.
        #[arg(long)]
        all: bool,
    },
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum ModelsCommand {
    /// Configured models and whether each key is set (never the key).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum DemoModelCommand {
    /// Serve a script on 127.0.0.1 as an OpenAI Chat Completions endpoint until Ctrl-C.
    Serve {
        /// The script (JSON: {"steps": [...]}).
        script: std::path::PathBuf,
        /// The port; 0 picks a free one. The base URL is printed on stdout.
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum PluginsCommand {
    /// Every plugin in every scope with its state (never runs plugin code).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// One plugin's metadata, tools, capabilities and state.
    Info {
        /// The plugin's local name.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Review and trust plugins exactly as they are (content hash and capabilities).
    Trust {
        /// One plugin; without it, every untrusted or changed project plugin here.
        name: Option<String>,
        /// Trust without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Forget a plugin's trust: its code no longer loads.
    Untrust {
        /// The plugin's local name.
        name: String,
    },
    /// Enable a user plugin under a local name (and trust it as it is).
    Enable {
        /// The local name; policy actions are `plugin.<name>.tool.<tool>`.
        name: String,
        /// The plugin directory or module file: under $BOSUN_HOME/plugins, or absolute
        /// (default: the path already configured for NAME, else NAME).
        #[arg(long)]
        path: Option<std::path::PathBuf>,
        /// Trust without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Disable a user plugin (keeps its entry).
    Disable {
        /// The plugin's local name.
        name: String,
    },
    /// Run a command a Forge plugin registered (`api.registerCommand`), in the sandbox.
    Run {
        /// The command's name.
        name: String,
        /// Its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Scan a JavaScript/TypeScript plugin's source for risky code (never runs it).
    Scan {
        /// The plugin directory (read recursively), or one source file.
        path: std::path::PathBuf,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Scaffold a plugin crate.
    New {
        /// The plugin's name.
        name: String,
        /// Where to create it (default: ./NAME).
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
        /// A Forge plugin (plugin.json and index.mjs) instead of a Rust crate.
        #[arg(long, conflicts_with = "triggerfish")]
        forge: bool,
        /// A Triggerfish plugin (mod.ts) instead of a Rust crate.
        #[arg(long)]
        triggerfish: bool,
        /// Use the Rust SDK at this path instead of a copy inside the crate.
        #[arg(long, conflicts_with_all = ["forge", "triggerfish"])]
        sdk_path: Option<std::path::PathBuf>,
    },
    /// Install a plugin from a directory (a Rust crate built for wasm32-wasip2, a directory
    /// with plugin.wasm, plugin.json or mod.ts) or a .wasm file, or NAME[@VERSION] from a
    /// registry (verified, scanned and reviewed first): copy it into $BOSUN_HOME/plugins,
    /// enable it and trust it as it is.
    Install {
        /// The plugin's directory or .wasm file, or NAME[@VERSION] from a registry.
        path: std::path::PathBuf,
        /// The registry to install NAME from (default: the one registry that has it).
        #[arg(long, conflicts_with = "link")]
        from: Option<String>,
        /// Print the installed record as JSON (registry installs).
        #[arg(long)]
        json: bool,
        /// Its local name (default: the directory's, or the crate's, name).
        #[arg(long)]
        name: Option<String>,
        /// Use the directory where it is instead of a copy: every change is read again and
        /// asks for trust again (for a plugin you are writing).
        #[arg(long)]
        link: bool,
        /// Replace an installed plugin of that name (a rebuilt one): the old copy stays if the new
        /// one cannot be installed or is not trusted.
        #[arg(long, conflicts_with = "link")]
        force: bool,
        /// Trust it without asking.
        #[arg(long)]
        yes: bool,
        /// A Claude Code plugin (NAME@MARKETPLACE) whose source pins no commit: take what its
        /// branch holds now.
        #[arg(long)]
        allow_unpinned: bool,
        /// A Claude Code plugin's `userConfig` answer, KEY=VALUE (repeat it; a list's items
        /// comma-separated). Without a terminal every required value needs one.
        #[arg(long = "config", value_name = "KEY=VALUE")]
        config: Vec<String>,
    },
    /// Search the configured registries' plugins (name, description, tags, author).
    Search {
        /// What to look for (empty: everything).
        #[arg(default_value = "")]
        query: String,
        /// Only this registry.
        #[arg(long)]
        from: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Update plugins installed from a registry: shows what changed and asks again when it
    /// grew; refuses a downgrade; a failed update leaves the old version serving.
    Update {
        /// One plugin (default: every plugin installed from a registry).
        name: Option<String>,
        /// Only say what could be updated.
        #[arg(long)]
        check: bool,
        /// Allow an older version.
        #[arg(long)]
        force: bool,
        /// Update without asking.
        #[arg(long)]
        yes: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check registry plugins' files against their integrity records.
    Verify {
        /// One plugin (default: every plugin installed from a registry).
        name: Option<String>,
        /// Accept a changed plugin as it is now (then trust it again).
        #[arg(long)]
        accept: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Publish a plugin to a signed catalog folder, an OCI layout folder or an OCI registry
    /// (its metadata is read, never run).
    Publish {
        /// The plugin's directory.
        path: std::path::PathBuf,
        /// Where: a configured registry (a folder or `kind = "oci"`), a catalog folder, an OCI
        /// layout folder, `oci://HOST[:PORT]/NAMESPACE`, or `oci-layout:FOLDER` (a new
        /// air-gapped bundle, created).
        #[arg(long)]
        to: String,
        /// The signing key (default: $BOSUN_HOME/registry/signing-key.json).
        #[arg(long)]
        key: Option<std::path::PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a user plugin: its entry, its trust and its installed copy (a linked plugin's
    /// directory is kept).
    Remove {
        /// The plugin's local name.
        name: String,
        /// Remove without asking.
        #[arg(long)]
        yes: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum ToolsCommand {
    /// List every tool with its risk and capabilities.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run one tool through the full chokepoint.
    Call {
        /// The tool's exact name.
        tool: String,
        /// The input, as a JSON object.
        input: String,
        /// Print the result object as JSON.
        #[arg(long)]
        json: bool,
        /// Approve what policy would ask about (never what it denies).
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum PolicyCommand {
    /// The decision for an action and its explanation.
    Check {
        /// The action, e.g. `builtin.tool.run_command`.
        action: String,
        /// A capability used with it: `fs.read`, `net.http:api.example.com`, `fs.write:src/x.rs`.
        #[arg(long = "capability", value_name = "CAP")]
        capabilities: Vec<String>,
        /// Judge it in a session that holds data of this level (`INTERNAL`, `CONFIDENTIAL`,
        /// `RESTRICTED`), as information-flow rules would.
        #[arg(long, value_name = "LEVEL")]
        level: Option<String>,
        /// Judge it in a session that has read untrusted input from this source.
        #[arg(long, value_name = "SOURCE")]
        untrusted: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
enum ConfigCommand {
    /// Validate every config file Bosun would read here.
    Check {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Each setting in force; with --layers, the layer that set it (managed, user, project,
    /// flag, default), where (file:line), and the managed rule constraining it.
    Show {
        /// Say which layer set each setting, and where.
        #[arg(long)]
        layers: bool,
        /// Show the settings as `bosun run --model NAME` would have them.
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write a commented starter config to $BOSUN_HOME/config.toml, with the models found on
    /// this machine (OPENAI_API_KEY, ANTHROPIC_API_KEY, a local Ollama or vLLM).
    Init {
        /// Replace an existing config file.
        #[arg(long)]
        force: bool,
    },
}

/// Whether the command line asks for JSON: its errors are then a JSON object on stdout too.
fn json_requested() -> bool {
    std::env::args_os().skip(1).any(|a| a == "--json")
}

/// `{"type": "error", "exit_code": …, "error": …}` on stdout, for a script reading `--json`.
fn json_error(code: u8, message: &str) {
    let error = serde_json::json!({"type": "error", "exit_code": code, "error": message});
    term::write_stdout(&format!("{}\n", term::json_safe(&error.to_string())));
}

fn main() -> ExitCode {
    if version_alone(std::env::args_os().skip(1)) {
        term::write_stdout(VERSION_LINE);
        return ExitCode::from(exit::OK);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            if code != exit::OK && json_requested() {
                let text = e.to_string();
                json_error(
                    code,
                    text.lines()
                        .next()
                        .unwrap_or_default()
                        .trim_start_matches("error: "),
                );
            }
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // What a killed Bosun left half-written in its home is removed before anything starts.
    if let Ok(home) = bosun_host::config::bosun_home() {
        bosun_plugins::sweep_stale_temporaries(&home);
    }
    let Some(command) = cli.command else {
        return finish(tui::interactive(
            cli.resume.as_deref(),
            cli.model.as_deref(),
            cli.trust_workspace,
        ));
    };
    let result = match command {
        Command::Tools(ToolsCommand::List { json }) => commands::tools_list(json),
        Command::Tools(ToolsCommand::Call {
            tool,
            input,
            json,
            yes,
        }) => commands::tools_call(&tool, &input, json, yes),
        Command::Policy(PolicyCommand::Check {
            action,
            capabilities,
            level,
            untrusted,
            json,
        }) => commands::policy_check(
            &action,
            &capabilities,
            &commands::SessionState { level, untrusted },
            json,
        ),
        Command::Inspect {
            run, export: true, ..
        } => commands::inspect_export(&run),
        Command::Inspect {
            run, json, kind, ..
        } => commands::inspect(&run, json, kind.as_deref()),
        Command::Config(ConfigCommand::Check { json }) => commands::config_check(json),
        Command::Config(ConfigCommand::Show {
            layers,
            model,
            json,
        }) => commands::config_show(layers, model, json),
        Command::Config(ConfigCommand::Init { force }) => first_run::config_init(force),
        Command::Doctor { json } => doctor::doctor(json),
        Command::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "bosun",
                &mut out,
            );
            term::write_stdout(&String::from_utf8_lossy(&out));
            Ok(exit::OK)
        }
        Command::Man => man(),
        Command::Run {
            task,
            model,
            resume,
            image,
            json,
            stream,
            yes,
            trust_workspace,
        } => run::run(
            task.as_deref(),
            model.as_deref(),
            resume.as_deref(),
            &image,
            run::Flags {
                json,
                stream,
                yes,
                trust_workspace,
            },
        ),
        Command::Sessions(SessionsCommand::List { all, json }) => run::sessions_list(all, json),
        Command::Sessions(SessionsCommand::Show { id, json }) => sessions::show(&id, json),
        Command::Sessions(SessionsCommand::Rm { id }) => sessions::rm(&id),
        Command::Sessions(SessionsCommand::Prune {
            older_than,
            keep,
            all,
        }) => sessions::prune(older_than, keep, all),
        Command::Models(ModelsCommand::List { json }) => run::models_list(json),
        Command::Mcp(McpCommand::List { json }) => mcp::list(json),
        Command::Mcp(McpCommand::Trust { name, yes }) => mcp::trust(&name, yes),
        Command::Mcp(McpCommand::Untrust { name }) => mcp::untrust(&name),
        Command::Mcp(McpCommand::Login { name }) => mcp::login(&name),
        Command::Mcp(McpCommand::Logout { name }) => mcp::logout(&name),
        Command::Sandbox(SandboxCommand::Status { json }) => commands::sandbox_status(json),
        Command::Skills(SkillsCommand::List { json }) => commands::skills_list(json),
        Command::Skills(SkillsCommand::Search { query, from, json }) => registry::search(
            bosun_registry::ArtifactKind::Skill,
            &query,
            from.as_deref(),
            json,
        ),
        Command::Skills(SkillsCommand::Install {
            spec,
            from,
            force,
            yes,
            json,
        }) => registry::install(
            bosun_registry::ArtifactKind::Skill,
            &spec,
            from.as_deref(),
            force,
            yes,
            json,
        ),
        Command::Skills(SkillsCommand::Update {
            name,
            check,
            force,
            yes,
            json,
        }) => registry::update(
            bosun_registry::ArtifactKind::Skill,
            name.as_deref(),
            check,
            force,
            yes,
            json,
        ),
        Command::Skills(SkillsCommand::Publish {
            path,
            to,
            key,
            json,
        }) => registry::publish(
            bosun_registry::ArtifactKind::Skill,
            &path,
            &to,
            key.as_deref(),
            json,
        ),
        Command::Registry(command) => match command {
            RegistryCommand::Keygen { file } => registry::keygen(file.as_deref()),
            RegistryCommand::Init { dir, key } => registry::init(&dir, key.as_deref()),
            RegistryCommand::Refresh { dir, key } => registry::refresh(&dir, key.as_deref()),
            RegistryCommand::Trust { name, yes } => registry::trust(&name, yes),
        },
        Command::Acp => acp::acp(),
        Command::Serve {
            stdio: _,
            http,
            allow_remote,
            token_env,
            allowed_origins,
        } => serve::serve(serve::ServeArgs {
            http,
            allow_remote,
            token_env,
            allowed_origins,
        }),
        Command::DemoModel(DemoModelCommand::Serve { script, port }) => {
            run::demo_model_serve(&script, port)
        }
        Command::Plugins(command) => match command {
            PluginsCommand::List { json } => plugins::list(json),
            PluginsCommand::Info { name, json } => plugins::info(&name, json),
            PluginsCommand::Trust { name, yes } => plugins::trust(name.as_deref(), yes),
            PluginsCommand::Untrust { name } => plugins::untrust(&name),
            PluginsCommand::Enable { name, path, yes } => {
                plugins::enable(&name, path.as_deref(), yes)
            }
            PluginsCommand::Disable { name } => plugins::disable(&name),
            PluginsCommand::Scan { path, json } => plugins::scan(&path, json),
            PluginsCommand::Run { name, args } => plugin_commands::run(&name, &args),
            PluginsCommand::New {
                name,
                dir,
                forge,
                triggerfish,
                sdk_path,
            } => plugins::new(
                &name,
                dir.as_deref(),
                if forge {
                    plugins::NewKind::Forge
                } else if triggerfish {
                    plugins::NewKind::Triggerfish
                } else {
                    plugins::NewKind::Rust
                },
                sdk_path.as_deref(),
            ),
            PluginsCommand::Install {
                path,
                from,
                json,
                name,
                link,
                force,
                yes,
                allow_unpinned,
                config,
            } => {
                if let Some((plugin, marketplace)) = path
                    .to_str()
                    .and_then(claude::names_claude_plugin)
                    .filter(|_| from.is_none())
                {
                    claude::install(&plugin, &marketplace, allow_unpinned, yes, json, &config)
                } else if !config.is_empty() {
                    Err(anyhow::anyhow!(
                        "--config answers a Claude Code plugin's userConfig (NAME@MARKETPLACE of a claude-marketplace registry); `{}` is not one",
                        path.display()
                    ))
                } else if registry::names_registry_plugin(&path, from.as_deref()) {
                    registry::install(
                        bosun_registry::ArtifactKind::Plugin,
                        &path.to_string_lossy(),
                        from.as_deref(),
                        force,
                        yes,
                        json,
                    )
                } else {
                    plugins::install(&path, name.as_deref(), link, force, yes)
                }
            }
            PluginsCommand::Search { query, from, json } => registry::search(
                bosun_registry::ArtifactKind::Plugin,
                &query,
                from.as_deref(),
                json,
            ),
            PluginsCommand::Update {
                name,
                check,
                force,
                yes,
                json,
            } => registry::update(
                bosun_registry::ArtifactKind::Plugin,
                name.as_deref(),
                check,
                force,
                yes,
                json,
            ),
            PluginsCommand::Verify { name, accept, json } => {
                registry::verify(name.as_deref(), accept, json)
            }
            PluginsCommand::Publish {
                path,
                to,
                key,
                json,
            } => registry::publish(
                bosun_registry::ArtifactKind::Plugin,
                &path,
                &to,
                key.as_deref(),
                json,
            ),
            PluginsCommand::Remove { name, yes, json } => plugins::remove(&name, yes, json),
        },
    };
    finish(result)
}

/// `bosun man`: the manual page, rendered from the same definitions as `--help`.
fn man() -> anyhow::Result<u8> {
    let mut out = Vec::new();
    clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(&mut out)?;
    term::write_stdout(&String::from_utf8_lossy(&out));
    Ok(exit::OK)
}

/// The exit code of a command, printing its error.
fn finish(result: anyhow::Result<u8>) -> ExitCode {
    // The last spans of the command go out before the process does, for a bounded time.
    bosun_host::telemetry::flush_at_exit();
    match result {
        Ok(code) => ExitCode::from(code),
        // The reader went away (`bosun tools list | head -1`): not an error.
        Err(e)
            if e.chain().any(|cause| {
                cause
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::from(exit::OK)
        }
        Err(e) => {
            term::errln!("bosun: {e:#}");
            if json_requested() {
                json_error(exit::USAGE, &format!("{e:#}"));
            }
            ExitCode::from(exit::USAGE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    /// The build script links libgcc's unwinder into this package's targets (`build.rs`): a
    /// panic still unwinds, running the drops on its way, and is caught.
    #[test]
    fn a_panic_unwinds_through_the_linked_unwinder() {
        struct Dropped<'a>(&'a std::cell::Cell<bool>);
        impl Drop for Dropped<'_> {
            fn drop(&mut self) {
                self.0.set(true);
            }
        }
        let dropped = std::cell::Cell::new(false);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _guard = Dropped(&dropped);
            std::hint::black_box(None::<u8>).expect("the panic this test unwinds")
        }));
        assert!(caught.is_err());
        assert!(dropped.get(), "the unwinder skipped a drop");
    }

    #[test]
    fn the_early_version_line_is_what_clap_prints() {
        assert_eq!(Cli::command().render_version(), VERSION_LINE);
        assert!(VERSION_LINE.starts_with(&format!("bosun {VERSION}")));
    }

    /// Parsing defines only the arguments of the command named; everything that shows the
    /// whole command line (help, completions, the manual) builds it whole first.
    #[test]
    fn only_the_named_command_has_its_arguments_defined() {
        let unbuilt = Cli::command();
        let run = unbuilt.find_subcommand("run").unwrap();
        assert_eq!(
            run.get_arguments().count(),
            0,
            "`run` defined before it was named"
        );
        let mut built = Cli::command();
        built.build();
        let run = built.find_subcommand("run").unwrap();
        assert!(run.get_arguments().any(|a| a.get_id() == "resume"));
        let call = built
            .find_subcommand("tools")
            .and_then(|t| t.find_subcommand("call"))
            .unwrap();
        assert!(call.get_arguments().any(|a| a.get_id() == "yes"));
        Cli::command().debug_assert();
        let parsed = Cli::try_parse_from(["bosun", "tools", "call", "read_file", "{}", "--yes"]);
        assert!(matches!(
            parsed.map(|cli| cli.command),
            Ok(Some(Command::Tools(ToolsCommand::Call { yes: true, .. })))
        ));
    }

    #[test]
    fn only_a_lone_version_flag_is_answered_early() {
        let args = |list: &[&str]| {
            list.iter()
                .map(std::ffi::OsString::from)
                .collect::<Vec<_>>()
                .into_iter()
        };
        assert!(version_alone(args(&["--version"])));
        assert!(version_alone(args(&["-V"])));
        assert!(!version_alone(args(&[])));
        assert!(!version_alone(args(&["--version", "--json"])));
        assert!(!version_alone(args(&["tools", "--version"])));
        assert!(!version_alone(args(&["--versions"])));
        assert!(!version_alone(args(&["-v"])));
    }
}
