//! The processes a JavaScript tool of risk `process` starts: each judged mid-call, then run in
//! the OS sandbox the granter confines it to.

use std::collections::BTreeMap;
use std::sync::Arc;

use bosun_core::{Capability, CapabilityRequest, Scope};
use bosun_sandbox::{JsProcesses, SpawnRequest, Spawned, StartError, StartFuture};

use crate::plugin_runtime::granter;

/// Starts the processes one call of a JavaScript tool of risk `process` asks for: each is
/// judged as `process.spawn` of its program by the chokepoint running the call (a person may
/// be asked, shown the plugin and the command line), then started in the OS sandbox with the
/// workspace as its directory, the scrubbed environment plus the plugin's own variables, and
/// the network this call was granted.
#[derive(Debug)]
pub(super) struct HostProcesses {
    pub(super) plugin: String,
    pub(super) judge: Option<crate::tool::MidCallJudge>,
    pub(super) workspace: Arc<crate::Workspace>,
    pub(super) launcher: Arc<bosun_launch::Launcher>,
    pub(super) env: Arc<BTreeMap<String, String>>,
    pub(super) plugin_env: BTreeMap<String, String>,
    pub(super) granted: Vec<CapabilityRequest>,
    pub(super) timeout_ms: u64,
    /// The calling tool's span, handed to each process as `TRACEPARENT`.
    pub(super) traceparent: Option<String>,
}

impl JsProcesses for HostProcesses {
    fn start(&self, request: SpawnRequest) -> StartFuture<'_> {
        Box::pin(async move {
            let program = &request.program;
            if program.chars().count() > 512
                || program
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control() || "|&;<>()$`".contains(c))
            {
                return Err(StartError::Refused(format!(
                    "`{}` is not a program name or path: Bosun runs no shell",
                    crate::builtin::display_text(program)
                )));
            }
            if request.args.len() > 1000 || request.args.iter().any(|a| a.len() > 65_536) {
                return Err(StartError::Refused(
                    "too many or too long arguments".to_owned(),
                ));
            }
            let line = crate::builtin::display_text(&command_line(&request));
            let capability = CapabilityRequest {
                capability: Capability::ProcessSpawn,
                scope: Scope {
                    program: Some(program.clone()),
                    ..Scope::default()
                },
            };
            crate::tool::judge(
                self.judge.as_ref(),
                capability,
                format!("plugin `{}` starts: $ {line}", self.plugin),
            )
            .await
            .map_err(|e| {
                StartError::Refused(format!("starting `{program}` was denied: {}", e.message))
            })?;
            let cwd = self.cwd(request.cwd.as_deref())?;
            // The scrubbed environment and the plugin's own variables; what the plugin passes
            // may set those names only (no LD_PRELOAD, no secrets it made up a name for).
            let mut env: BTreeMap<String, String> = (*self.env).clone();
            env.extend(self.plugin_env.clone());
            for (name, value) in request.env {
                if env.contains_key(&name) {
                    env.insert(name, value);
                }
            }
            let mut command = tokio::process::Command::new(program);
            command
                .args(&request.args)
                .current_dir(&cwd)
                .env_clear()
                .envs(&env)
                .envs(self.traceparent.as_ref().map(|t| ("TRACEPARENT", t)))
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .kill_on_drop(true);
            let mut confinement =
                granter::spawn_confinement(self.workspace.root(), &self.granted, self.timeout_ms);
            // The files the approved command line names are its to read.
            confinement.name_arguments(std::iter::once(program).chain(&request.args));
            // The launcher starts it in a session (and so a process group) of its own.
            let (child, jail) =
                self.launcher
                    .spawn(command, &confinement)
                    .map_err(|e| match e {
                        bosun_launch::LaunchError::Spawn(e)
                            if e.kind() == std::io::ErrorKind::NotFound =>
                        {
                            StartError::NotFound {
                                program: program.clone(),
                            }
                        }
                        bosun_launch::LaunchError::Spawn(source) => StartError::Spawn {
                            program: program.clone(),
                            source,
                        },
                        other => StartError::Confinement(other.to_string()),
                    })?;
            Ok(Spawned {
                child,
                guard: Box::new(jail),
            })
        })
    }
}

impl HostProcesses {
    /// The directory to start in: the workspace (as the plugin sees it, `/workspace/...`, or
    /// relative to it); never outside.
    fn cwd(&self, asked: Option<&str>) -> Result<std::path::PathBuf, StartError> {
        let Some(asked) = asked else {
            return Ok(self.workspace.cwd().to_path_buf());
        };
        let guest = bosun_sandbox::WORKSPACE_GUEST_PATH;
        let relative = match asked.strip_prefix(guest) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                rest.trim_start_matches('/').to_owned()
            }
            _ => asked.to_owned(),
        };
        let relative = if relative.is_empty() { "." } else { &relative };
        let dir = self
            .workspace
            .resolve(relative)
            .map_err(|e| StartError::Refused(e.message))?;
        if !dir.is_dir() {
            return Err(StartError::Refused(format!(
                "cwd `{asked}` is not a directory in the workspace"
            )));
        }
        Ok(dir)
    }
}

/// `program 'arg' …` as a person reads it.
fn command_line(request: &SpawnRequest) -> String {
    let mut line = request.program.clone();
    for arg in &request.args {
        line.push_str(" '");
        line.push_str(&arg.replace('\'', r"'\''"));
        line.push('\'');
    }
    line
}
