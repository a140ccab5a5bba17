//! bosun-telemetry against a loopback collector in this process: what a run's events become on
//! the wire (OTLP/JSON and protobuf), a subagent's run under its parent's call, metrics, and a
//! collector that fails.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bosun_core::{
    Classification, Decision, Envelope, ErrorCode, Event, Explanation, Layer, MatchedRule,
    RunOutcome, TRACE_SCHEMA_VERSION, ToolError,
};
use bosun_telemetry::otlp::proto::read::{Field, fields};
use bosun_telemetry::{
    ContentConfig, Exporter, ExporterConfig, OtlpHttpConfig, Projection, Protocol, TelemetryConfig,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Requests a collector took: path, content type, body.
type Received = Arc<Mutex<Vec<(String, String, Vec<u8>)>>>;

/// A collector answering `status` to every request.
fn collector(status: u16) -> (String, Received) {
    collector_answering(format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\n\r\n"))
}

/// A collector answering every request with `answer`, a whole HTTP response.
fn collector_answering(answer: String) -> (String, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let received: Received = Arc::default();
    let keep = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let keep = keep.clone();
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split(' ').nth(1).unwrap_or("").to_owned();
                    let (mut length, mut kind) = (0, String::new());
                    loop {
                        line.clear();
                        reader.read_line(&mut line).unwrap();
                        let lower = line.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap();
                        }
                        if let Some(v) = lower.strip_prefix("content-type:") {
                            kind = v.trim().to_owned();
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    keep.lock().unwrap().push((path, kind, body));
                    if stream.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (base, received)
}

fn exporter(base: &str, protocol: Protocol, warnings: Arc<Mutex<Vec<String>>>) -> Arc<Exporter> {
    let otlp = |signal: &str| {
        ExporterConfig::OtlpHttp(OtlpHttpConfig {
            endpoint: Some(format!("{base}/v1/{signal}")),
            protocol: Some(protocol),
            ..OtlpHttpConfig::default()
        })
    };
    let config = TelemetryConfig {
        traces: otlp("traces"),
        metrics: otlp("metrics"),
        logs: otlp("logs"),
        instance_id: Some("instance-7".into()),
        ..TelemetryConfig::default()
    };
    let settings = config.resolve(&|_| None).unwrap();
    Exporter::start(
        settings,
        Arc::new(move |w: &str| warnings.lock().unwrap().push(w.to_owned())),
    )
    .unwrap()
}

fn envelope(run: &str, parent: Option<&str>, sequence: u64, event: Event) -> Envelope {
    Envelope {
        schema_version: TRACE_SCHEMA_VERSION,
        run_id: run.into(),
        parent_run_id: parent.map(str::to_owned),
        sequence,
        timestamp: chrono::Utc::now(),
        event,
    }
}

fn explanation(decision: Decision) -> Explanation {
    Explanation {
        decision,
        deciding: 0,
        checks: vec![MatchedRule {
            subject: "builtin.tool.x".into(),
            layer: Layer::User,
            rule: format!("action = \"builtin.tool.*\" decision = \"{decision}\""),
            source: Some("config.toml:3".into()),
            decision,
        }],
    }
}

/// A run that delegates to a subagent, whose own call is denied.
fn feed(projection: &Projection) {
    let started = |command: &str| Event::RunStarted {
        command: command.into(),
        workspace: "/w".into(),
        mode: "workspace-write".into(),
        sandbox: "sandbox: full".into(),
        level: Default::default(),
    };
    let events = [
        envelope("parent", None, 0, started("run")),
        envelope(
            "parent",
            None,
            1,
            Event::ModelStarted {
                step: 1,
                model: "gpt-x".into(),
                provider: "openai-responses".into(),
                messages: 2,
                estimated_input_tokens: 10,
            },
        ),
        envelope(
            "parent",
            None,
            2,
            Event::ModelCompleted {
                step: 1,
                finish: None,
                tool_calls: 1,
                usage: Some(bosun_core::TokenUsage {
                    input_tokens: 120,
                    output_tokens: 7,
                    ..Default::default()
                }),
            },
        ),
        envelope(
            "parent",
            None,
            3,
            Event::ToolProposed {
                call_id: "c1".into(),
                tool: "delegate_reviewer".into(),
                input: json!({"task": "secret task text"}),
            },
        ),
        envelope(
            "parent",
            None,
            4,
            Event::ToolDecided {
                call_id: "c1".into(),
                tool: "delegate_reviewer".into(),
                action: "builtin.tool.delegate".into(),
                capabilities: vec![],
                explanation: explanation(Decision::Allow),
            },
        ),
        envelope("child", Some("parent"), 0, started("subagent reviewer")),
        envelope(
            "child",
            Some("parent"),
            1,
            Event::ToolProposed {
                call_id: "k1".into(),
                tool: "mcp__github__create_issue".into(),
                input: json!({"title": "x"}),
            },
        ),
        envelope(
            "child",
            Some("parent"),
            2,
            Event::ToolDecided {
                call_id: "k1".into(),
                tool: "mcp__github__create_issue".into(),
                action: "mcp.github.tool.create_issue".into(),
                capabilities: vec![],
                explanation: explanation(Decision::Deny),
            },
        ),
        envelope(
            "child",
            Some("parent"),
            3,
            Event::ToolFailed {
                call_id: "k1".into(),
                tool: "mcp__github__create_issue".into(),
                error: ToolError::new(ErrorCode::Denied, "denied: the title said secret"),
                duration_us: 40,
            },
        ),
        envelope(
            "child",
            Some("parent"),
            4,
            Event::RunFinished {
                outcome: RunOutcome::Denied,
            },
        ),
        envelope(
            "parent",
            None,
            5,
            Event::ToolCompleted {
                call_id: "c1".into(),
                tool: "delegate_reviewer".into(),
                output: json!({"report": "secret output"}),
                truncated: false,
                duration_us: 900,
            },
        ),
        envelope(
            "parent",
            None,
            6,
            Event::RunFinished {
                outcome: RunOutcome::Completed,
            },
        ),
    ];
    for event in &events {
        projection.observe(event);
    }
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

#[test]
fn a_run_and_its_subagent_become_one_trace_in_otlp_json() {
    let (base, received) = collector(200);
    let warnings = Arc::default();
    let exporter = exporter(&base, Protocol::Json, warnings);
    feed(&Projection::new(exporter.clone(), None));
    assert!(exporter.flush(Duration::from_secs(10)));
    assert_eq!(exporter.failures(), 0);
    let received = received.lock().unwrap().clone();
    let bodies = |path: &str| -> Vec<Value> {
        received
            .iter()
            .filter(|(p, kind, _)| p == path && kind == "application/json")
            .map(|(_, _, body)| serde_json::from_slice(body).unwrap())
            .collect()
    };
    let traces = bodies("/v1/traces");
    let resource = &traces[0]["resourceSpans"][0]["resource"]["attributes"];
    assert!(
        resource.as_array().unwrap().contains(
            &json!({"key": "service.instance.id", "value": {"stringValue": "instance-7"}})
        )
    );
    let spans: Vec<Value> = traces
        .iter()
        .flat_map(|t| {
            t["resourceSpans"][0]["scopeSpans"][0]["spans"]
                .as_array()
                .unwrap()
                .clone()
        })
        .collect();
    let named = |name: &str| {
        spans
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {spans:#?}"))
    };
    let parent = named("invoke_agent bosun");
    let delegate = named("execute_tool delegate_reviewer");
    let child = named("invoke_agent reviewer");
    let mcp = named("execute_tool mcp__github__create_issue");
    let chat = named("chat gpt-x");
    assert_eq!(spans.len(), 5);
    for span in [delegate, child, mcp, chat] {
        assert_eq!(span["traceId"], parent["traceId"]);
    }
    assert_eq!(delegate["parentSpanId"], parent["spanId"]);
    assert_eq!(chat["parentSpanId"], parent["spanId"]);
    // The subagent's run hangs under the call that started it.
    assert_eq!(child["parentSpanId"], delegate["spanId"]);
    assert_eq!(mcp["parentSpanId"], child["spanId"]);
    assert_eq!(
        attr(mcp, "mcp.method.name"),
        Some(&json!({"stringValue": "tools/call"}))
    );
    assert_eq!(
        attr(mcp, "gen_ai.tool.type"),
        Some(&json!({"stringValue": "extension"}))
    );
    assert_eq!(
        attr(mcp, "bosun.policy.decision"),
        Some(&json!({"stringValue": "deny"}))
    );
    assert_eq!(
        attr(mcp, "error.type"),
        Some(&json!({"stringValue": "denied"}))
    );
    assert_eq!(mcp["status"]["code"], 2);
    assert_eq!(mcp["status"]["message"], "");
    assert_eq!(
        attr(chat, "gen_ai.usage.input_tokens"),
        Some(&json!({"intValue": "120"}))
    );
    // The provider, as the conventions name it, on the model step and on the agent's span;
    // the adapter itself beside it.
    for span in [chat, parent] {
        assert_eq!(
            attr(span, "gen_ai.provider.name"),
            Some(&json!({"stringValue": "openai"})),
            "{span:#}"
        );
    }
    assert_eq!(
        attr(chat, "bosun.model.api"),
        Some(&json!({"stringValue": "openai-responses"}))
    );
    assert_eq!(child["status"]["code"], 2);
    // No content: no input, output, or error message left.
    let all = serde_json::to_string(
        &received
            .iter()
            .map(|r| String::from_utf8_lossy(&r.2).into_owned())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(!all.contains("secret"), "{all}");
    // Metrics: the denial, by tool and rule; tokens by model.
    let metrics = bodies("/v1/metrics");
    let metrics = &metrics.last().unwrap()["resourceMetrics"][0]["scopeMetrics"][0]["metrics"];
    let metric = |name: &str| {
        metrics
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {metrics:#}"))
            .clone()
    };
    let denials = metric("bosun.tool.denials");
    assert_eq!(denials["sum"]["dataPoints"][0]["asInt"], "1");
    assert_eq!(
        denials["sum"]["dataPoints"][0]["attributes"][0],
        json!({"key": "gen_ai.tool.name", "value": {"stringValue": "mcp__github__create_issue"}})
    );
    let tokens = metric("gen_ai.client.token.usage");
    assert_eq!(
        tokens["histogram"]["dataPoints"].as_array().unwrap().len(),
        2
    );
    // The attributes the conventions require of the token histogram.
    for point in tokens["histogram"]["dataPoints"].as_array().unwrap() {
        let keys: Vec<&str> = point["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a["key"].as_str())
            .collect();
        for required in [
            "gen_ai.operation.name",
            "gen_ai.provider.name",
            "gen_ai.request.model",
            "gen_ai.token.type",
        ] {
            assert!(keys.contains(&required), "{required}: {point:#}");
        }
    }
    assert_eq!(
        metric("bosun.tool.calls")["sum"]["dataPoints"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // Logs: one per recorded event, tied to its span.
    let logs = bodies("/v1/logs");
    let records: Vec<&Value> = logs
        .iter()
        .flat_map(|l| {
            l["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
                .as_array()
                .unwrap()
        })
        .collect();
    assert_eq!(records.len(), 12);
    let decided = records
        .iter()
        .find(|r| r["eventName"] == "bosun.tool.decided" && r["spanId"] == mcp["spanId"])
        .unwrap();
    assert_eq!(
        decided["body"]["stringValue"],
        "mcp__github__create_issue: deny"
    );
}

#[test]
fn protobuf_bodies_decode_to_the_same_spans() {
    let (base, received) = collector(200);
    let exporter = exporter(&base, Protocol::Binary, Arc::default());
    feed(&Projection::new(exporter.clone(), None));
    assert!(exporter.flush(Duration::from_secs(10)));
    let received = received.lock().unwrap().clone();
    let (_, kind, body) = received.iter().find(|(p, _, _)| p == "/v1/traces").unwrap();
    assert_eq!(kind, "application/x-protobuf");
    // ExportTraceServiceRequest.resource_spans(1).scope_spans(2).spans(2).name(5)
    let len = |field: &Field| match field {
        Field::Len(bytes) => bytes.clone(),
        other => panic!("{other:?}"),
    };
    let request = fields(body).unwrap();
    let resource_spans = len(&request[0].1);
    let scope_spans = fields(&resource_spans)
        .unwrap()
        .into_iter()
        .find(|(n, _)| *n == 2)
        .unwrap();
    let names: Vec<String> = fields(&len(&scope_spans.1))
        .unwrap()
        .into_iter()
        .filter(|(n, _)| *n == 2)
        .map(|(_, span)| {
            let span = fields(&len(&span)).unwrap();
            let name = span.iter().find(|(n, _)| *n == 5).unwrap();
            String::from_utf8(len(&name.1)).unwrap()
        })
        .collect();
    assert_eq!(names.len(), 5);
    assert!(names.contains(&"execute_tool mcp__github__create_issue".to_owned()));
}

#[test]
fn a_failing_collector_warns_once_and_counts_what_it_lost() {
    let (base, _received) = collector(500);
    let warnings: Arc<Mutex<Vec<String>>> = Arc::default();
    let exporter = exporter(&base, Protocol::Binary, warnings.clone());
    for _ in 0..3 {
        feed(&Projection::new(exporter.clone(), None));
        assert!(exporter.flush(Duration::from_secs(10)));
    }
    assert!(exporter.failures() >= 3);
    let warnings = warnings.lock().unwrap().clone();
    let traces: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("export traces"))
        .collect();
    assert_eq!(traces.len(), 1, "{warnings:#?}");
    assert!(traces[0].contains("it answered HTTP 500"), "{}", traces[0]);
}

#[test]
fn a_collector_redirecting_elsewhere_never_hands_the_spans_or_its_headers_on() {
    let (elsewhere, taken) = collector(200);
    let (base, received) = collector_answering(format!(
        "HTTP/1.1 307 X\r\nlocation: {elsewhere}/v1/traces\r\ncontent-length: 0\r\n\r\n"
    ));
    let config = TelemetryConfig {
        traces: ExporterConfig::OtlpHttp(OtlpHttpConfig {
            endpoint: Some(format!("{base}/v1/traces")),
            protocol: Some(Protocol::Json),
            headers: [(
                "x-api-key".to_owned(),
                bosun_telemetry::HeaderValue::Literal("collector-key-4417".to_owned()),
            )]
            .into(),
            ..OtlpHttpConfig::default()
        }),
        ..TelemetryConfig::default()
    };
    let warnings: Arc<Mutex<Vec<String>>> = Arc::default();
    let keep = warnings.clone();
    let exporter = Exporter::start(
        config.resolve(&|_| None).unwrap(),
        Arc::new(move |w: &str| keep.lock().unwrap().push(w.to_owned())),
    )
    .unwrap();
    feed(&Projection::new(exporter.clone(), None));
    assert!(exporter.flush(Duration::from_secs(60)));
    assert!(
        !received.lock().unwrap().is_empty(),
        "the collector was asked"
    );
    // A 307 keeps the method, the body and a custom header: followed, the spans and the key
    // would reach an address nobody configured.
    assert!(
        taken.lock().unwrap().is_empty(),
        "the redirect was followed"
    );
    assert!(exporter.failures() >= 1);
    let warnings = warnings.lock().unwrap().clone();
    assert!(
        warnings.iter().any(|w| w.contains("export traces")),
        "{warnings:#?}"
    );
}

/// The spans and log records an exporter with every content switch on, its collector labelled
/// `sink`, sent for `events`.
fn export_with_content(
    sink: Option<Classification>,
    events: &[Envelope],
) -> (Vec<Value>, Vec<Value>) {
    let (base, received) = collector(200);
    let otlp = |signal: &str| {
        ExporterConfig::OtlpHttp(OtlpHttpConfig {
            endpoint: Some(format!("{base}/v1/{signal}")),
            protocol: Some(Protocol::Json),
            ..OtlpHttpConfig::default()
        })
    };
    let config = TelemetryConfig {
        traces: otlp("traces"),
        logs: otlp("logs"),
        content: ContentConfig {
            tool_inputs: true,
            tool_outputs: true,
            model_output: true,
        },
        classification: sink,
        ..TelemetryConfig::default()
    };
    let exporter =
        Exporter::start(config.resolve(&|_| None).unwrap(), Arc::new(|_: &str| {})).unwrap();
    let projection = Projection::new(exporter.clone(), None);
    for event in events {
        projection.observe(event);
    }
    drop(projection);
    assert!(exporter.flush(Duration::from_secs(10)));
    let received = received.lock().unwrap().clone();
    let mut spans = Vec::new();
    let mut logs = Vec::new();
    for (path, _, body) in &received {
        let body: Value = serde_json::from_slice(body).unwrap();
        match path.as_str() {
            "/v1/traces" => spans.extend(
                body["resourceSpans"][0]["scopeSpans"][0]["spans"]
                    .as_array()
                    .unwrap()
                    .clone(),
            ),
            "/v1/logs" => logs.extend(
                body["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
                    .as_array()
                    .unwrap()
                    .clone(),
            ),
            _ => {}
        }
    }
    (spans, logs)
}

fn call(run: &str, parent: Option<&str>, sequence: u64, id: &str, said: &str) -> [Envelope; 2] {
    [
        envelope(
            run,
            parent,
            sequence,
            Event::ToolProposed {
                call_id: id.into(),
                tool: "read_file".into(),
                input: json!({"path": said}),
            },
        ),
        envelope(
            run,
            parent,
            sequence + 1,
            Event::ToolCompleted {
                call_id: id.into(),
                tool: "read_file".into(),
                output: json!({"content": said}),
                truncated: false,
                duration_us: 5,
            },
        ),
    ]
}

/// The export judges content by the level of the session the run is in, not only by the rises
/// it saw: a conversation's later turn starts holding what earlier turns read (`run.started`'s
/// `level`), a subagent starts at its parent's, and a rise takes effect from the event that
/// records it. Content at or below the collector's level goes as it is; above, a marker naming
/// the session's level (never the data). A plugin's log level is never copied into a record.
#[test]
fn content_is_judged_by_the_sessions_level_from_the_start_of_each_run() {
    let started = |level: Classification| Event::RunStarted {
        command: "run".into(),
        workspace: "/w".into(),
        mode: "workspace-write".into(),
        sandbox: String::new(),
        level,
    };
    let mut events = vec![envelope(
        "turn-2",
        None,
        0,
        started(Classification::Confidential),
    )];
    events.extend(call("turn-2", None, 1, "t1", "held-from-turn-one"));
    events.push(envelope(
        "sub",
        Some("turn-2"),
        0,
        Event::RunStarted {
            command: "subagent reviewer".into(),
            workspace: "/w".into(),
            mode: "workspace-write".into(),
            sandbox: String::new(),
            // A trace written before `run.started` carried the level: the parent's is taken.
            level: Classification::Public,
        },
    ));
    events.extend(call("sub", Some("turn-2"), 1, "s1", "seen-by-the-subagent"));
    events.push(envelope(
        "sub",
        Some("turn-2"),
        3,
        Event::RunFinished {
            outcome: RunOutcome::Completed,
        },
    ));
    events.push(envelope("fresh", None, 0, started(Classification::Public)));
    events.extend(call("fresh", None, 1, "f1", "internal-is-fine-here"));
    events.push(envelope(
        "fresh",
        None,
        3,
        Event::TaintRaised {
            call_id: "f1".into(),
            tool: "read_file".into(),
            from: Classification::Public,
            to: Classification::Internal,
        },
    ));
    events.extend(call("fresh", None, 4, "f2", "still-internal"));
    events.push(envelope(
        "fresh",
        None,
        6,
        Event::ToolProposed {
            call_id: "f3".into(),
            tool: "read_file".into(),
            input: json!({"path": "raises-it"}),
        },
    ));
    events.push(envelope(
        "fresh",
        None,
        7,
        Event::ToolLog {
            call_id: "f3".into(),
            tool: "read_file".into(),
            level: "log-level-hush".into(),
            message: "a line".into(),
        },
    ));
    events.push(envelope(
        "fresh",
        None,
        8,
        Event::TaintRaised {
            call_id: "f3".into(),
            tool: "read_file".into(),
            from: Classification::Internal,
            to: Classification::Restricted,
        },
    ));
    events.push(envelope(
        "fresh",
        None,
        9,
        Event::ToolCompleted {
            call_id: "f3".into(),
            tool: "read_file".into(),
            output: json!({"content": "restricted-words"}),
            truncated: false,
            duration_us: 5,
        },
    ));
    events.push(envelope(
        "fresh",
        None,
        10,
        Event::RunFinished {
            outcome: RunOutcome::Completed,
        },
    ));
    events.push(envelope(
        "turn-2",
        None,
        3,
        Event::RunFinished {
            outcome: RunOutcome::Completed,
        },
    ));

    let (spans, logs) = export_with_content(Some(Classification::Internal), &events);
    let by_call = |id: &str| {
        spans
            .iter()
            .find(|s| attr(s, "gen_ai.tool.call.id") == Some(&json!({"stringValue": id})))
            .unwrap_or_else(|| panic!("no span of {id}: {spans:#?}"))
    };
    let content = |id: &str, key: &str| {
        attr(by_call(id), key)
            .and_then(|v| v["stringValue"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let withheld = |level: &str| {
        format!("[withheld: the session holds {level} data and this collector is INTERNAL]")
    };
    for id in ["t1", "s1"] {
        for key in ["gen_ai.tool.call.arguments", "gen_ai.tool.call.result"] {
            assert_eq!(content(id, key), withheld("CONFIDENTIAL"), "{id} {key}");
        }
    }
    assert!(content("f1", "gen_ai.tool.call.result").contains("internal-is-fine-here"));
    assert!(content("f2", "gen_ai.tool.call.arguments").contains("still-internal"));
    assert!(content("f3", "gen_ai.tool.call.arguments").contains("raises-it"));
    assert_eq!(
        content("f3", "gen_ai.tool.call.result"),
        withheld("RESTRICTED")
    );
    let everything = serde_json::to_string(&(&spans, &logs)).unwrap();
    for held in [
        "held-from-turn-one",
        "seen-by-the-subagent",
        "restricted-words",
        "log-level-hush",
    ] {
        assert!(!everything.contains(held), "`{held}` reached the collector");
    }
    assert!(
        logs.iter()
            .any(|l| l["body"]["stringValue"] == "read_file logged a info line"),
        "{logs:#?}"
    );
}

/// A plugin's restrict hook may quote the call in its reason, and so the session's data: the
/// exported rule names only the hook's author (as the denial metric's label does), and the
/// words go as content, judged by the session's level like the call's input.
#[test]
fn a_hooks_reason_is_exported_as_content_never_as_the_rule() {
    let hook_denial = |run: &str, id: &str, words: &str| {
        [
            envelope(
                run,
                None,
                1,
                Event::ToolProposed {
                    call_id: id.into(),
                    tool: "write_file".into(),
                    input: json!({"path": "out.txt"}),
                },
            ),
            envelope(
                run,
                None,
                2,
                Event::ToolDecided {
                    call_id: id.into(),
                    tool: "write_file".into(),
                    action: "builtin.tool.write_file".into(),
                    capabilities: vec![],
                    explanation: Explanation {
                        decision: Decision::Deny,
                        deciding: 0,
                        checks: vec![MatchedRule {
                            subject: "builtin.tool.write_file".into(),
                            layer: Layer::Hook,
                            rule: format!(
                                "[reason given by the plugin `guard`]\n```\n{words}\n```"
                            ),
                            source: Some("guard".into()),
                            decision: Decision::Deny,
                        }],
                    },
                },
            ),
            envelope(
                run,
                None,
                3,
                Event::RunFinished {
                    outcome: RunOutcome::Completed,
                },
            ),
        ]
    };
    let started = |run: &str, level: Classification| {
        envelope(
            run,
            None,
            0,
            Event::RunStarted {
                command: "run".into(),
                workspace: "/w".into(),
                mode: "workspace-write".into(),
                sandbox: String::new(),
                level,
            },
        )
    };
    let mut events = vec![started("held", Classification::Confidential)];
    events.extend(hook_denial("held", "h1", "the key is quoted-secret-words"));
    events.push(started("open", Classification::Public));
    events.extend(hook_denial("open", "o1", "public-hook-words"));

    let (spans, logs) = export_with_content(Some(Classification::Internal), &events);
    let text = |id: &str, key: &str| {
        let span = spans
            .iter()
            .find(|s| attr(s, "gen_ai.tool.call.id") == Some(&json!({"stringValue": id})))
            .unwrap_or_else(|| panic!("no span of {id}: {spans:#?}"));
        attr(span, key)
            .and_then(|v| v["stringValue"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    for id in ["h1", "o1"] {
        assert_eq!(text(id, "bosun.policy.rule"), "hook rule of guard", "{id}");
    }
    assert_eq!(
        text("h1", "bosun.policy.reason"),
        "[withheld: the session holds CONFIDENTIAL data and this collector is INTERNAL]"
    );
    assert!(text("o1", "bosun.policy.reason").contains("public-hook-words"));
    let everything = serde_json::to_string(&(&spans, &logs)).unwrap();
    assert!(!everything.contains("quoted-secret-words"), "{everything}");
}
