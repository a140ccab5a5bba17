//! `bosun` with no command: the interactive terminal face. A conversation with a model in one
//! session, each line a new turn, every tool call through the same chokepoint as `bosun run`,
//! with approvals asked in a modal and slash commands for plugins, policy, models and sessions.
//!
//! The state machine ([`app::App`]) is apart from the terminal: it takes [`app::AppEvent`]s (keys,
//! the run's live events, trace envelopes, approval requests, the end of a turn) and draws on any
//! ratatui backend, so tests drive it headless. The agent runs on a tokio runtime
//! ([`engine::Engine`]); this thread only waits on the event channel, handles and draws, and
//! never waits on the agent. Nothing here decides what a tool may do.

mod actions;
mod app;
mod calls;
mod checkpoints;
mod config_view;
mod engine;
mod events;
mod follow;
mod highlight;
mod history;
mod input;
mod keys;
mod markdown;
mod mention;
mod person;
mod registry;
mod rendered;
mod results;
mod slash;
#[cfg(test)]
mod tests;
mod text;
mod transcript;
mod view;

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use ratatui::crossterm::event::{self, Event, KeyEventKind, MouseEventKind};

use crate::env::load;
use crate::exit;
use crate::term::errln;
use app::{App, AppEvent};

/// Lines one notch of the mouse wheel scrolls.
const WHEEL_LINES: i32 = 3;

/// How long leaving waits for a cancelled run to store its session.
const WIND_DOWN: Duration = Duration::from_secs(10);

/// `bosun [--resume ID] [--model NAME] [--trust-workspace]`: opens the session (as `bosun run` would) and runs the
/// terminal UI until the person leaves. Needs a terminal on stdin and stdout.
pub fn interactive(resume: Option<&str>, model: Option<&str>, trust: bool) -> Result<u8> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        bail!(
            "`bosun` without a command opens the interactive terminal UI, which needs a terminal; from a script use `bosun run \"task\"` (see `bosun --help`)"
        );
    }
    // With no model configured: the first run (offers what it finds, else the demo model).
    // A folder not seen before: asked about before anything of it is read into a run.
    let env = crate::workspace_trust::settle(load()?, trust)?;
    let (env, _demo) = crate::first_run::prepare_interactive(env)?;
    let env = Arc::new(env);
    let open = crate::run::open_session(&env, resume, model)?;
    let (events, inbox) = mpsc::channel();
    let mut app = App::new(env, open, events.clone())?;

    let mut terminal = ratatui::try_init().context("setting up the terminal")?;
    let restore = RestoreTerminal;
    // A paste arrives whole, newlines included, instead of as keys that would send its first line.
    let _ = ratatui::crossterm::execute!(
        std::io::stdout(),
        ratatui::crossterm::event::EnableBracketedPaste
    );
    report_mouse(app.wants_mouse());
    read_keys(events);
    let looped = event_loop(&mut app, &mut terminal, &inbox);
    app.wind_down(&inbox, Instant::now() + WIND_DOWN);
    let session_end = app
        .session
        .as_ref()
        .map(|open| app.engine.end_session(open))
        .unwrap_or_default();
    let width = terminal.size().map_or(80, |size| usize::from(size.width));
    drop(restore);
    // The alternate screen is gone with the conversation: print it into the terminal's own
    // scrollback, where it stays.
    for line in view::transcript_text(&app, width) {
        crate::term::outln!("{}", line.trim_end());
    }
    for warning in session_end {
        errln!("warning: {warning}");
    }
    looped?;
    if let Some(line) = app.farewell() {
        errln!("{line}");
    }
    Ok(exit::OK)
}

/// Draws, then waits for the next event and handles it with every one already queued, so a
/// burst of streamed text costs one frame.
fn event_loop(
    app: &mut App,
    terminal: &mut ratatui::DefaultTerminal,
    inbox: &Receiver<AppEvent>,
) -> Result<()> {
    let mut mouse = app.wants_mouse();
    let mut modal = app.modal_shown();
    loop {
        if app.modal_shown() != modal {
            modal = app.modal_shown();
            if modal.is_some() {
                // A new question is about to be drawn: what waits unread in the terminal was
                // typed before it and is no answer. Keys the reader thread already took carry
                // an earlier time, and the modal ignores them (`app::ARM_DELAY`).
                bosun_host::approval::discard_pending_input(std::io::stdin());
                // A run waits for the person: the terminal's bell says so to one looking away.
                if !app.approvals.is_empty() {
                    use std::io::Write as _;
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(b"\x07");
                    let _ = out.flush();
                }
            }
        }
        if app.wants_mouse() != mouse {
            mouse = app.wants_mouse();
            report_mouse(mouse);
        }
        terminal
            .draw(|frame| view::draw(app, frame))
            .context("drawing the terminal")?;
        if app.should_exit() {
            return Ok(());
        }
        // While a run goes, wake up to turn the spinner and count the seconds.
        let event = if app.is_running() {
            match inbox.recv_timeout(Duration::from_millis(100)) {
                Ok(event) => event,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
            }
        } else {
            let Ok(event) = inbox.recv() else {
                return Ok(());
            };
            event
        };
        app.handle(event);
        while !app.should_exit() {
            match inbox.try_recv() {
                Ok(event) => app.handle(event),
                Err(_) => break,
            }
        }
    }
}

/// Reads the terminal on its own thread and forwards key presses and resizes. The thread ends
/// when the UI's channel is gone or the terminal cannot be read.
fn read_keys(events: Sender<AppEvent>) {
    std::thread::spawn(move || {
        loop {
            let forwarded = match event::read() {
                Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => {
                    events.send(AppEvent::key(key))
                }
                Ok(Event::Resize(..)) => events.send(AppEvent::Redraw),
                Ok(Event::Paste(text)) => events.send(AppEvent::Paste(text)),
                Ok(Event::Mouse(mouse)) => match mouse.kind {
                    MouseEventKind::ScrollUp => events.send(AppEvent::Wheel(WHEEL_LINES)),
                    MouseEventKind::ScrollDown => events.send(AppEvent::Wheel(-WHEEL_LINES)),
                    _ => Ok(()),
                },
                Ok(_) => Ok(()),
                Err(_) => return,
            };
            if forwarded.is_err() {
                return;
            }
        }
    });
}

/// Asks the terminal to report mouse buttons and the wheel (X10 reporting with SGR
/// coordinates: presses only, no motion, so moving the mouse sends nothing), or to stop.
fn report_mouse(on: bool) {
    use std::io::Write as _;
    let sequence: &[u8] = if on {
        b"\x1b[?1000h\x1b[?1006h"
    } else {
        b"\x1b[?1006l\x1b[?1000l"
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(sequence);
    let _ = out.flush();
}

/// Leaves raw mode and the alternate screen however the UI ends.
struct RestoreTerminal;

impl Drop for RestoreTerminal {
    fn drop(&mut self) {
        report_mouse(false);
        let _ = ratatui::crossterm::execute!(
            std::io::stdout(),
            ratatui::crossterm::event::DisableBracketedPaste
        );
        ratatui::restore();
    }
}
