//! The subcommands. Each loads what it needs, calls a library and prints.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use bosun_core::{CapabilityRequest, ErrorCode, Event, Explanation, RunOutcome, ToolResult};
use bosun_host::approval::sanitize_for_terminal;
use bosun_host::config::{ConfigError, bosun_home};
use bosun_host::trace;
use bosun_host::{Session, ToolCall, TraceBuilder};
use bosun_policy::Subject;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::exit;
use crate::term::{errln, out, outln};

pub fn tools_list(json: bool) -> Result<u8> {
    let env = crate::env::load()?;
    let tools = env.host_for_one_command()?.tools();
    if json {
        let list: Vec<Value> = tools
            .iter()
            .map(|t| {
                let s = t.spec();
                json!({
                    "name": s.name, "action": t.action(), "description": s.description, "risk": s.risk,
                    "capabilities": s.capabilities, "classification": s.classification, "input_schema": s.input_schema,
                })
            })
            .collect();
        crate::env::print_json(&list)?;
    } else {
        // Columns as wide as their widest entry.
        let rows: Vec<[String; 4]> = tools
            .iter()
            .map(|t| {
                let s = t.spec();
                let caps: Vec<String> = s.capabilities.iter().map(ToString::to_string).collect();
                [
                    s.name.to_string(),
                    s.risk.to_string(),
                    caps.join(","),
                    first_line(&s.description).to_owned(),
                ]
            })
            .collect();
        let width = |i: usize| {
            rows.iter()
                .map(|r| unicode_width::UnicodeWidthStr::width(r[i].as_str()))
                .max()
                .unwrap_or(0)
        };
        let (name, risk, caps) = (width(0), width(1), width(2));
        for [n, r, c, d] in &rows {
            outln!("{n:<name$}  {r:<risk$}  {c:<caps$}  {d}");
        }
    }
    Ok(exit::OK)
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

fn exit_code(result: &ToolResult) -> u8 {
    match result.error().map(|e| e.code) {
        None => exit::OK,
        Some(ErrorCode::Denied) => exit::DENIED,
        Some(ErrorCode::NeedsApproval) => exit::NEEDS_APPROVAL,
        Some(_) => exit::TOOL_ERROR,
    }
}

pub(crate) fn run_outcome(result: &ToolResult) -> RunOutcome {
    match result.error().map(|e| e.code) {
        None => RunOutcome::Completed,
        Some(ErrorCode::Denied) => RunOutcome::Denied,
        Some(ErrorCode::NeedsApproval) => RunOutcome::NeedsApproval,
        Some(ErrorCode::Cancelled) => RunOutcome::Cancelled,
        Some(_) => RunOutcome::ToolError,
    }
}

pub fn tools_call(tool: &str, input: &str, json: bool, yes: bool) -> Result<u8> {
    let input: Value = match serde_json::from_str(input) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => bail!("the input must be a JSON object, e.g. '{{\"path\": \"README.md\"}}'"),
        Err(e) => bail!(
            "the input is not valid JSON ({e}); quote it for your shell, e.g. '{{\"path\": \"README.md\"}}'"
        ),
    };
    let env = crate::env::load()?;
    let host = env.host_for_one_command()?;
    let chokepoint = host.chokepoint_reviewed(
        crate::env::broker(yes),
        bosun_agent::assembly::reviewer(&env.config)?,
    )?;
    // One call in a session of its own: it starts holding nothing.
    let trace = TraceBuilder::for_config(&env.config).start(
        &chokepoint,
        &format!("tools call {tool}"),
        bosun_core::Classification::Public,
    )?;
    let run_id = trace.run_id().to_owned();
    let session = Arc::new(Session::new(run_id.clone()));
    // One call: its future, Ctrl-C's watcher and whatever the tool spawns take turns on this
    // thread. Worker threads would cost their start and a hand-off at every wake-up, and a
    // blocking step still goes to tokio's blocking pool.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let cancel = CancellationToken::new();
    let call = ToolCall {
        id: "call_1".to_owned(),
        name: tool.to_owned(),
        input,
    };
    let outcome = runtime.block_on(async {
        let ctrl_c = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                ctrl_c.cancel();
            }
        });
        let outcome = chokepoint.call(call, &session, &trace, &cancel).await;
        // Nothing the call started (a stdio MCP server) outlives the command.
        host.shutdown().await;
        outcome
    });
    trace.record(Event::RunFinished {
        outcome: run_outcome(&outcome.result),
    });
    trace.finish()?;
    let code = exit_code(&outcome.result);
    if json {
        crate::env::print_json(&outcome.result)?;
    } else {
        match &outcome.result {
            ToolResult::Ok {
                output, truncated, ..
            } => {
                crate::env::print_json(output)?;
                if *truncated {
                    errln!(
                        "(output truncated to {} bytes)",
                        env.config.user.limits.max_output_bytes
                    );
                }
            }
            ToolResult::Err { error, .. } => errln!("{}: {}", error.code, error.message),
        }
        if std::io::stderr().is_terminal() {
            errln!("trace: bosun inspect {run_id}");
        }
    }
    Ok(code)
}

/// The session a `policy check` imagines the call in: what it holds and what untrusted input
/// it read (neither, by default).
#[derive(Debug, Default)]
pub struct SessionState {
    /// `--level`: the highest level of data the session holds.
    pub level: Option<String>,
    /// `--untrusted`: where its untrusted input came from.
    pub untrusted: Option<String>,
}

pub fn policy_check(
    action: &str,
    capabilities: &[String],
    state: &SessionState,
    json: bool,
) -> Result<u8> {
    let env = crate::env::load()?;
    let mut explanation = policy_explanation(&env, action, capabilities)?;
    if state.level.is_some() || state.untrusted.is_some() {
        let session = bosun_host::session::Session::new("policy-check");
        if let Some(level) = &state.level {
            let level: bosun_core::Classification = level.parse().map_err(|e| {
                anyhow::anyhow!(
                    "--level {level}: {e}; use PUBLIC, INTERNAL, CONFIDENTIAL or RESTRICTED"
                )
            })?;
            session.raise_taint(level);
            session.set_taint_source("--level".to_owned());
        }
        if let Some(source) = &state.untrusted {
            session.mark_untrusted(source.clone());
        }
        let requests = capabilities
            .iter()
            .map(|cap| {
                CapabilityRequest::parse(cap).map_err(|e| anyhow::anyhow!("capability {cap}: {e}"))
            })
            .collect::<Result<Vec<_>>>()?;
        let flow = env.config.flow();
        for check in flow.checks(&requests, None, &session) {
            bosun_host::flow::tighten(&mut explanation, check);
        }
    }
    if json {
        crate::env::print_json(&explanation)?;
    } else {
        out!("{}", render_explanation(&explanation));
    }
    Ok(exit::OK)
}

/// The decision policy would make here for `action` used with `capabilities` (`fs.read`,
/// `net.http:api.example.com`, …), with every check that led to it.
pub fn policy_explanation(
    env: &crate::env::Env,
    action: &str,
    capabilities: &[String],
) -> Result<Explanation> {
    let risks = env.known_risks()?;
    let risk = risks.iter().find(|(a, _)| a == action).map(|(_, r)| *r);
    let policy = env.config.policy(risks)?;
    let mut subjects = vec![Subject {
        action: action.to_owned(),
        scope: Default::default(),
        risk,
    }];
    for cap in capabilities {
        let request =
            CapabilityRequest::parse(cap).map_err(|e| anyhow::anyhow!("capability {cap}: {e}"))?;
        subjects.push(Subject::capability(&request));
    }
    Ok(policy.decide(&subjects, &[], &[]))
}

/// An explanation for a person: the decision, then each check, the deciding one starred.
pub fn render_explanation(explanation: &Explanation) -> String {
    use std::fmt::Write as _;
    let mut out = format!("{}\n", explanation.decision);
    for (i, check) in explanation.checks.iter().enumerate() {
        let marker = if i == explanation.deciding { "*" } else { " " };
        let source = check
            .source
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{marker} {:<6} {} — {} rule {}{}",
            check.decision.to_string(),
            check.subject,
            check.layer,
            check.rule,
            source
        );
    }
    out
}

pub fn inspect(run: &str, json: bool, kind: Option<&str>) -> Result<u8> {
    let home = bosun_home()?;
    let mut out = Stdout::default();
    if json {
        inspect_json(&home, run, kind, &mut out)?;
    } else {
        inspect_to(&home, run, kind, &mut out)?;
    }
    out.flush();
    Ok(exit::OK)
}

/// `bosun inspect RUN --export`: the saved run and its subagents' runs, projected and sent to
/// the collector of `[telemetry]` as they would have been live (their own timestamps); fails
/// when the collector does not take them.
pub fn inspect_export(run: &str) -> Result<u8> {
    let env = crate::env::load()?;
    let telemetry = env.config.telemetry();
    if !telemetry.enabled() {
        bail!(
            "telemetry is off: set `[telemetry] traces = {{ otlp-http = {{ endpoint = \"...\" }} }}` in {} to export runs",
            env.config.home.join("config.toml").display()
        );
    }
    let Some(exporter) = bosun_host::telemetry::exporter_for(telemetry) else {
        bail!("telemetry cannot start (the warning above says why)");
    };
    let runs = env.config.runs_dir();
    let path = trace::find_run(&runs, run)?;
    let mut envelopes = trace::read_run(&path)?;
    let Some(run_id) = envelopes.first().map(|e| e.run_id.clone()) else {
        bail!("{} holds no events", path.display());
    };
    // Its subagents' runs, and theirs: merged by time, so a child's run starts while the
    // parent's call that started it is open.
    let mut pending = vec![run_id.clone()];
    while let Some(parent) = pending.pop() {
        for (child, _) in trace::children_of(&runs, &parent) {
            envelopes.extend(trace::read_run(&trace::find_run(&runs, &child)?)?);
            pending.push(child);
        }
    }
    envelopes.sort_by_key(|e| e.timestamp);
    let observer = bosun_host::telemetry::TelemetryObserver::new(exporter.clone(), None);
    for envelope in &envelopes {
        bosun_host::trace::Observer::observe(&observer, envelope);
    }
    observer.finish();
    if !exporter.flush(std::time::Duration::from_secs(30)) || exporter.failures() > 0 {
        bail!(
            "run {run_id} was not exported (the warning above says why); its trace file is unchanged, so try again"
        );
    }
    outln!(
        "exported run {run_id} ({} events) to {}",
        envelopes.len(),
        [
            exporter.settings().traces.as_ref(),
            exporter.settings().metrics.as_ref(),
            exporter.settings().logs.as_ref()
        ]
        .into_iter()
        .flatten()
        .map(|e| e.url.as_str())
        .collect::<Vec<_>>()
        .join(", ")
    );
    Ok(exit::OK)
}

/// Output gathered into pieces of about 64 KiB, each written to stdout through the escape of
/// its kind once it ends a line, so that `bosun inspect` holds one piece of a trace of any size.
#[derive(Default)]
struct Stdout {
    text: String,
    json: bool,
}

impl Stdout {
    const PIECE: usize = 64 * 1024;

    fn written(&mut self) {
        if self.text.len() >= Self::PIECE && self.text.ends_with('\n') {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.text.is_empty() {
            return;
        }
        if self.json {
            crate::term::write_stdout(&crate::term::json_safe(&self.text));
        } else {
            crate::term::write_stdout(&crate::term::escape(&self.text));
        }
        self.text.clear();
    }
}

/// Where a rendered trace goes: a string (the terminal UI) or stdout in pieces.
trait Sink {
    fn text(&mut self) -> &mut String;
    /// Called after each envelope's lines.
    fn written(&mut self) {}
}

impl Sink for String {
    fn text(&mut self) -> &mut String {
        self
    }
}

impl Sink for Stdout {
    fn text(&mut self) -> &mut String {
        &mut self.text
    }
    fn written(&mut self) {
        Stdout::written(self);
    }
}

/// `bosun inspect --json`: the trace's lines as they are, or those of one kind, read and
/// written a line at a time.
fn inspect_json(home: &Path, run: &str, kind: Option<&str>, out: &mut Stdout) -> Result<()> {
    use std::io::BufRead as _;
    out.json = true;
    let path = trace::find_run(&home.join("runs"), run)?;
    let file = std::fs::File::open(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut reader = std::io::BufReader::with_capacity(64 * 1024, file);
    let mut line = String::new();
    loop {
        line.clear();
        let read = reader
            .read_line(&mut line)
            .with_context(|| format!("reading {}", path.display()))?;
        if read == 0 {
            return Ok(());
        }
        let keep = match kind {
            None => true,
            Some(kind) => serde_json::from_str::<Value>(&line).is_ok_and(|v| {
                v["event"]["type"]
                    .as_str()
                    .is_some_and(|t| t.starts_with(kind))
            }),
        };
        if !keep {
            continue;
        }
        if kind.is_some() {
            // A filtered line is written with a newline of its own, whatever ended it.
            let bare = line.strip_suffix('\n').unwrap_or(&line);
            out.text.push_str(bare.strip_suffix('\r').unwrap_or(bare));
            out.text.push('\n');
        } else {
            out.text.push_str(&line);
        }
        out.written();
    }
}

/// The trace of `run` (an id, a unique prefix, or `last`) rendered for a person.
pub fn inspect_text(home: &Path, run: &str) -> Result<String> {
    let mut text = String::new();
    inspect_to(home, run, None, &mut text)?;
    Ok(text)
}

/// Renders the trace of `run` into `out`, with only the events whose type starts with `kind`
/// when given. The trace is read twice, one envelope at a time — the timeline, then the labels
/// — so no envelope is held past its own lines.
fn inspect_to(home: &Path, run: &str, kind: Option<&str>, out: &mut impl Sink) -> Result<()> {
    let runs = home.join("runs");
    let path = trace::find_run(&runs, run)?;
    let wanted =
        |e: &bosun_core::Envelope| kind.is_none_or(|kind| e.event.kind().starts_with(kind));
    let mut timeline = trace::Timeline::default();
    let mut run_id = None;
    for envelope in trace::envelopes(&path)? {
        let envelope = envelope?;
        if !wanted(&envelope) {
            continue;
        }
        if run_id.is_none() {
            run_id = Some(envelope.run_id.clone());
        }
        timeline.write(&envelope, out.text());
        out.written();
    }
    let Some(run_id) = run_id else {
        out.text().push_str(trace::EMPTY);
        return Ok(());
    };
    let mut labels = trace::Labels::default();
    for envelope in trace::envelopes(&path)? {
        let envelope = envelope?;
        if wanted(&envelope) {
            labels.write(&envelope, out.text());
            out.written();
        }
    }
    // Its subagents' runs, each a trace of its own.
    let children = trace::children_of(&runs, &run_id);
    if !children.is_empty() {
        let text = out.text();
        text.push_str("children (open one with `bosun inspect <run>`):\n");
        for (id, command) in children {
            text.push_str(&format!("  {id}  {}\n", sanitize_for_terminal(&command)));
        }
    }
    Ok(())
}

/// `bosun sandbox status`: what each layer enforces on this machine, under the user's
/// `[sandbox]` settings.
pub fn sandbox_status(json: bool) -> Result<u8> {
    let env = crate::env::load()?;
    let launcher = bosun_launch::Launcher::new(env.config.user.sandbox.clone());
    let status = launcher.status();
    if json {
        let layers: Vec<_> = status
            .layers
            .iter()
            .map(|(layer, state)| {
                let (word, detail) = match state {
                    bosun_launch::LayerState::Enforced(t) => ("enforced", t.as_str()),
                    bosun_launch::LayerState::Partial(t) => ("partial", t.as_str()),
                    bosun_launch::LayerState::Missing(t) => ("missing", t.as_str()),
                    bosun_launch::LayerState::Off => ("off", ""),
                };
                json!({"layer": layer.name(), "state": word, "detail": detail})
            })
            .collect();
        crate::env::print_json(&json!({
            "summary": status.summary(),
            "full": status.is_full(),
            "required": launcher.config().require,
            "backend": status.backend().name(),
            "backend_fallback": status.fallback,
            "layers": layers,
        }))?;
    } else {
        outln!("{status}");
    }
    Ok(exit::OK)
}

/// One line per skill (name, source, whether only `$name` selects it, description) and one per
/// diagnostic, each safe for a terminal: `bosun skills list` and `/skills` show the same.
pub(crate) fn skill_lines(skills: &bosun_host::skills::Skills) -> (Vec<String>, Vec<String>) {
    let lines = skills
        .all()
        .iter()
        .map(|skill| {
            let description: String = skill.description.chars().take(70).collect();
            format!(
                "{:<24} {:<8} {}{}",
                sanitize_for_terminal(&skill.name),
                format!("{:?}", skill.source).to_lowercase(),
                if skill.explicit_only {
                    "($name only) "
                } else {
                    ""
                },
                sanitize_for_terminal(&description)
            )
        })
        .collect();
    let diagnostics = skills
        .diagnostics()
        .iter()
        .map(|d| {
            format!(
                "warning: {}: {} ({})",
                sanitize_for_terminal(&d.path),
                sanitize_for_terminal(&d.message),
                d.kind
            )
        })
        .collect();
    (lines, diagnostics)
}

/// `bosun skills list`: the skills a run would offer and the diagnostics of those it cannot.
pub fn skills_list(json: bool) -> Result<u8> {
    let env = crate::env::load()?;
    let skills = bosun_host::skills::Skills::of(&env.config, env.workspace.root());
    if json {
        let list: Vec<_> = skills
            .all()
            .iter()
            .map(|s| {
                json!({
                    "id": s.id,
                    "name": s.name,
                    "source": s.source,
                    "description": s.description,
                    "explicitOnly": s.explicit_only,
                    "shadowed": s.shadowed,
                    "resources": s.resources.iter().map(|r| json!({"id": r.id, "relativePath": r.relative})).collect::<Vec<_>>(),
                })
            })
            .collect();
        crate::env::print_json(&json!({"skills": list, "diagnostics": skills.diagnostics()}))?;
        return Ok(exit::OK);
    }
    let (lines, diagnostics) = skill_lines(&skills);
    for line in lines {
        outln!("{line}");
    }
    for diagnostic in diagnostics {
        errln!("{diagnostic}");
    }
    Ok(exit::OK)
}

/// `bosun config show [--layers] [--model NAME] [--json]`: each setting in force, and with
/// `--layers` the layer that set it and where.
pub fn config_show(layers: bool, model: Option<String>, json: bool) -> Result<u8> {
    let env = crate::env::load()?;
    if let Some(name) = &model
        && !env.config.user.models.contains_key(name)
    {
        bail!("no model named `{name}`: add a [models.{name}] entry, or see `bosun models list`");
    }
    let flags = bosun_host::layers::Flags {
        model,
        model_from: "--model",
        mode_from: "--mode",
        ..Default::default()
    };
    let settings = bosun_host::layers::layers(&env.config, &flags).map_err(anyhow::Error::msg)?;
    if json {
        crate::env::print_json(&json!({ "settings": settings }))?;
    } else if layers {
        crate::term::write_stdout(&crate::term::escape(&bosun_host::layers::render(&settings)));
    } else {
        for setting in &settings {
            crate::term::write_stdout(&crate::term::escape(&format!(
                "{} = {}\n",
                setting.key, setting.value
            )));
        }
    }
    Ok(exit::OK)
}

pub fn config_check(json: bool) -> Result<u8> {
    let checked = crate::env::load().and_then(|env| {
        env.config.policy(env.known_risks()?)?;
        Ok(env)
    });
    match checked {
        Ok(env) => {
            let mut files = Vec::new();
            if let Some(f) = &env.config.user_file {
                files.push(f.path.display().to_string());
            }
            if let Some((_, f)) = &env.config.project {
                files.push(f.path.display().to_string());
            }
            // A plugin the user's config names that cannot be used (missing, bad manifest).
            let (_, catalog) = env.catalog()?;
            let problems: Vec<String> = catalog
                .entries()
                .iter()
                .filter(|e| e.scope == bosun_plugins::PluginScope::User)
                .filter_map(|e| match &e.state {
                    bosun_plugins::PluginState::Invalid { reason } => {
                        Some(format!("[plugins.{}]: {reason}", e.local_name))
                    }
                    _ => None,
                })
                .collect();
            if !problems.is_empty() {
                if json {
                    crate::env::print_json(
                        &json!({"ok": false, "files": files, "problems": problems}),
                    )?;
                } else {
                    for problem in &problems {
                        errln!("bosun: {problem}");
                    }
                }
                return Ok(exit::USAGE);
            }
            let settings = env.config.settings();
            if let Some(managed) = &env.config.managed {
                files.insert(0, managed.path.display().to_string());
            }
            if json {
                crate::env::print_json(&json!({
                    "ok": true,
                    "files": files,
                    "trusted_workspace": env.config.trusted,
                    "workspace_trust": env.config.workspace_trust,
                    "managed": env.config.managed.as_ref().map(|m| m.path.display().to_string()),
                    "settings": settings,
                }))?;
            } else if files.is_empty() {
                outln!("no config files; defaults apply");
            } else {
                let colour = crate::term::colour_on_stdout();
                for f in files {
                    crate::term::write_stdout(&format!(
                        "{}  {}\n",
                        crate::term::paint("ok", crate::term::Paint::Green, colour),
                        crate::term::escape(&f)
                    ));
                }
                // Each setting in force and the layer it came from.
                outln!();
                crate::term::write_stdout(&crate::term::escape(&bosun_host::layers::render(
                    &settings,
                )));
            }
            Ok(exit::OK)
        }
        Err(e) => {
            let config_error = e.downcast_ref::<ConfigError>().is_some();
            if json {
                crate::env::print_json(&json!({"ok": false, "error": format!("{e:#}")}))?;
            } else {
                errln!("bosun: {e:#}");
            }
            if !config_error {
                return Err(e);
            }
            Ok(exit::USAGE)
        }
    }
}
