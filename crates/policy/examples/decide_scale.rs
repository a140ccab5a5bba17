//! How a decision's cost grows with the size of the rule table: the policy side of
//! `benches/scale.py`. Builds a table of RULES rules shaped like a large real one (nine in ten
//! exact actions, about one in ten action globs, one catch-all glob), times parsing and building
//! it, then times CALLS decisions of a two-subject call one by one and prints one JSON line:
//! `{"rules", "parse_ms", "build_ms", "p50_ns", "p99_ns", "mean_ns"}`.
//!
//! Usage: decide_scale RULES [CALLS]

use std::time::Instant;

use bosun_core::{CapabilityRequest, Risk};
use bosun_policy::{Mode, Policy, PolicyFile, Source, Subject};

fn table(rules: usize) -> String {
    let globs = (rules / 10).max(1);
    let exact = rules.saturating_sub(globs + 1);
    let mut text = String::from("[policy]\n");
    for i in 0..exact {
        text.push_str(&format!(
            "[[policy.rules]]\naction = \"plugin.p{i}.tool.t{i}\"\ndecision = \"ask\"\n"
        ));
    }
    for i in 0..globs {
        text.push_str(&format!(
            "[[policy.rules]]\naction = \"plugin.g{i}.tool.*\"\ndecision = \"deny\"\n"
        ));
    }
    text.push_str("[[policy.rules]]\naction = \"builtin.tool.*\"\ndecision = \"allow\"\n");
    text
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: decide_scale RULES [CALLS]";
    let rules: usize = args.next().ok_or(usage)?.parse()?;
    let calls: usize = args.next().map_or(Ok(100_000), |c| c.parse())?;
    let text = table(rules);

    let started = Instant::now();
    let file = PolicyFile::parse(&text)?;
    let parse_ms = started.elapsed().as_secs_f64() * 1e3;
    let started = Instant::now();
    let policy = Policy::builder(Mode::WorkspaceWrite)
        .user(file, Source::with_text("scale.toml", text.clone()))?
        .build();
    let build_ms = started.elapsed().as_secs_f64() * 1e3;

    let call = [
        Subject::tool("builtin.tool.read_file", Risk::Read),
        Subject::capability(&CapabilityRequest::parse("fs.read:src/main.rs")?),
    ];
    for _ in 0..1_000 {
        std::hint::black_box(policy.decide(&call, &[], &[]));
    }
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        std::hint::black_box(policy.decide(std::hint::black_box(&call), &[], &[]));
        times.push(started.elapsed().as_nanos() as f64);
    }
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    println!(
        "{{\"rules\": {rules}, \"parse_ms\": {parse_ms:.3}, \"build_ms\": {build_ms:.3}, \"p50_ns\": {:.0}, \"p99_ns\": {:.0}, \"mean_ns\": {mean:.0}}}",
        at(0.5),
        at(0.99)
    );
    Ok(())
}
