//! `bosun`: a thin face over Bosun's libraries. It parses arguments, loads configuration, calls
//! the chokepoint or the policy engine, prints, and maps outcomes to documented exit codes:
//!
//! | code | meaning |
//! | --- | --- |
//! | 0 | success |
//! | 1 | the tool returned an error |
//! | 2 | usage or configuration error |
//! | 3 | denied by policy (or by the person asked) |
//! | 4 | approval needed and nobody to ask |

mod commands;

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

#[derive(Debug, Parser)]
#[command(
    name = "bosun",
    version,
    about = "An agent host whose every tool call passes one chokepoint."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
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
    },
    /// Check configuration files.
    #[command(subcommand)]
    Config(ConfigCommand),
}

#[derive(Debug, Subcommand)]
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
enum PolicyCommand {
    /// The decision for an action and its explanation.
    Check {
        /// The action, e.g. `builtin.tool.run_command`.
        action: String,
        /// A capability used with it: `fs.read`, `net.http:api.example.com`, `fs.write:src/x.rs`.
        #[arg(long = "capability", value_name = "CAP")]
        capabilities: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Validate every config file Bosun would read here.
    Check {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
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
            json,
        }) => commands::policy_check(&action, &capabilities, json),
        Command::Inspect { run, json } => commands::inspect(&run, json),
        Command::Config(ConfigCommand::Check { json }) => commands::config_check(json),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("bosun: {e:#}");
            ExitCode::from(exit::USAGE)
        }
    }
}
