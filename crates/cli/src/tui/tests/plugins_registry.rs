//! `/plugins search` and `/plugins install` driven headless against a signed catalog folder
//! made in the test: results carry their source's trust label, and an install asks in the
//! approval box with the trust review in it, installing on `o` and leaving nothing on `d`.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::KeyCode;

use super::{Harness, harness_with};

/// A signed catalog holding weather 1.0.0, and the user-config lines that pin it as `corp`.
fn catalog() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let key = bosun_registry::key::PrivateKey::generate().unwrap();
    let signing = bosun_registry::publish::Signing {
        key: &key,
        now: chrono::Utc::now(),
        expiry: bosun_registry::publish::Expiry::default(),
    };
    let catalog = dir.path().join("catalog");
    bosun_registry::publish::init(&catalog, &signing).unwrap();
    let src = dir.path().join("src/weather");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("mod.ts"),
        r#"export const manifest = {
  name: "weather",
  version: "1.0.0",
  description: "Weather by city",
  trust: "sandboxed",
  classification: "INTERNAL",
  declaredEndpoints: ["https://api.weather.example"],
};
export async function activate(ctx) {}
"#,
    )
    .unwrap();
    bosun_registry::publish::publish_plugin(&catalog, &src, &signing).unwrap();
    let config = format!(
        "[registries.corp]\nkind = \"dir\"\npath = \"{}\"\nkeys = [\"{}\"]\n",
        catalog.display(),
        key.public().keyid()
    );
    (dir, config)
}

fn registry_harness() -> (Harness, tempfile::TempDir) {
    let (dir, config) = catalog();
    let mut h = harness_with(vec![], &config, |_| {});
    h.terminal = Terminal::new(TestBackend::new(120, 60)).unwrap();
    (h, dir)
}

/// Handles what arrives until every search under way has ended.
fn searched(h: &mut Harness) {
    h.pump_until("search results", |app| app.searching == 0);
}

fn transcript(h: &Harness) -> String {
    format!("{:?}", h.app.entries)
}

fn installed(h: &Harness) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(h.home().join("plugins"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn plugins_search_shows_each_result_with_its_sources_trust() {
    let (mut h, _catalog) = registry_harness();
    h.submit("/plugins search weath");
    searched(&mut h);
    let shown = transcript(&h);
    assert!(
        shown.contains("weather 1.0.0  [corp: signed (TUF: root, targets, snapshot, timestamp)]  Weather by city"),
        "{shown}"
    );
    h.submit("/plugins search nothing-like-it --from corp");
    searched(&mut h);
    assert!(
        transcript(&h).contains("nothing matches `nothing-like-it`"),
        "{}",
        transcript(&h)
    );
    h.submit("/plugins search weather --from");
    assert!(
        transcript(&h).contains("usage: /plugins search QUERY [--from SOURCE]"),
        "{}",
        transcript(&h)
    );
    assert_eq!(h.server.steps_played(), 0);
}

#[test]
fn plugins_install_asks_with_the_review_in_the_approval_box_and_installs_on_o() {
    let (mut h, _catalog) = registry_harness();
    h.submit("/plugins install weather");
    h.pump_until("approval", |app| !app.approvals.is_empty());
    let review = h.app.approvals[0]
        .pending
        .request
        .review
        .clone()
        .expect("the approval carries the review");
    assert!(
        review.contains("weather 1.0.0 (triggerfish) from the registry `corp`"),
        "{review}"
    );
    assert_eq!(h.app.approvals[0].pending.request.action, "plugin.install");
    let screen = h.screen();
    for needle in [
        "plugin.install",
        "review weather 1.0.0 (triggerfish) from the registry `corp`",
        "sha256: ",
        "endpoints: https://api.weather.example",
        "classification: INTERNAL",
    ] {
        assert!(
            screen.contains(needle),
            "`{needle}` is not on screen:\n{screen}"
        );
    }
    // Nothing is in place while the person reads.
    assert!(!installed(&h).contains(&"weather".to_owned()));
    h.press(KeyCode::Char('o'));
    h.pump_until_idle();
    assert_eq!(installed(&h), ["weather"]);
    assert!(
        transcript(&h).contains("installed from the registry `corp`"),
        "{}",
        transcript(&h)
    );
    assert_eq!(h.server.steps_played(), 0);
}

#[test]
fn plugins_install_declined_in_the_approval_box_leaves_nothing() {
    let (mut h, _catalog) = registry_harness();
    h.submit("/plugins install weather@1.0.0 --from corp");
    h.pump_until("approval", |app| !app.approvals.is_empty());
    h.press(KeyCode::Char('d'));
    h.pump_until_idle();
    assert_eq!(installed(&h), Vec::<String>::new());
    assert!(transcript(&h).contains("declined"), "{}", transcript(&h));

    // A registry the user did not configure is refused before anything is asked.
    h.submit("/plugins install weather --from elsewhere");
    h.pump_until_idle();
    assert!(h.app.approvals.is_empty());
    assert!(
        transcript(&h).contains("not a registry the person configured"),
        "{}",
        transcript(&h)
    );
    assert_eq!(installed(&h), Vec::<String>::new());
}

#[test]
fn plugins_search_runs_off_the_ui_thread_while_a_registry_hangs() {
    // A registry that accepts connections and never answers until released.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        listener.set_nonblocking(true).unwrap();
        let mut held = Vec::new();
        loop {
            if let Ok((stream, _)) = listener.accept() {
                held.push(stream);
            }
            if released.try_recv().is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    });
    let config = format!(
        "[registries.slow]\nkind = \"reef\"\nurl = \"http://127.0.0.1:{port}\"\ntimeout_secs = 60\n"
    );
    let mut h = harness_with(vec![], &config, |_| {});
    h.submit("/plugins search weather");
    // The UI came back at once: the search is under way, nothing arrived, and keys are handled.
    assert_eq!(h.app.searching, 1);
    assert!(
        transcript(&h).contains("looking for `weather` in the registries"),
        "{}",
        transcript(&h)
    );
    assert!(!transcript(&h).contains("nothing matches"));
    h.type_text("still typing");
    assert_eq!(h.app.input.text(), "still typing");
    assert_eq!(h.app.searching, 1);

    // The registry hangs up: the search ends and its warning arrives as an event.
    release.send(()).unwrap();
    server.join().unwrap();
    searched(&mut h);
    let shown = transcript(&h);
    assert!(shown.contains("warning: the registry `slow`"), "{shown}");
    assert_eq!(h.app.input.text(), "still typing");
}
