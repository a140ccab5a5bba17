//! `bosun doctor`: prints the doctor's report (`bosun_agent::doctor`), a line per check with
//! the fix when something is wrong; exit code 1 when something is broken.

use anyhow::{Context, Result};
use bosun_agent::doctor::{DoctorReport, Health};

use crate::exit;
use crate::term::{Paint, outln, paint};

/// `bosun doctor [--json]`. Exit code 1 when something is broken, else 0.
pub fn doctor(json: bool) -> Result<u8> {
    let cwd = std::env::current_dir().context("reading the current directory");
    let report = match (cwd, bosun_host::config::bosun_home()) {
        (Ok(cwd), Ok(home)) => DoctorReport::for_dir(&cwd, &home),
        (Err(e), _) => DoctorReport::unloadable(format!("{e:#}")),
        (_, Err(e)) => DoctorReport::unloadable(e.to_string()),
    };
    let broken = !report.ok;
    if json {
        crate::env::print_json(&report)?;
    } else {
        let colour = crate::term::colour_on_stdout();
        for c in &report.checks {
            let word = match c.health {
                Health::Ok => paint("ok    ", Paint::Green, colour),
                Health::Warn => paint("warn  ", Paint::Yellow, colour),
                Health::Broken => paint("BROKEN", Paint::Red, colour),
            };
            // The word is painted by Bosun; everything else passes through the escape.
            crate::term::write_stdout(&format!(
                "{word} {}\n",
                crate::term::escape(&format!("{:<10} {}", c.area, c.detail))
            ));
            if let Some(fix) = &c.fix {
                outln!("       {:<10} fix: {fix}", "");
            }
        }
    }
    Ok(if broken { exit::TOOL_ERROR } else { exit::OK })
}
