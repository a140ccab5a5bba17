//! `bosun plugins install NAME@MARKETPLACE`: a Claude Code plugin from a
//! `kind = "claude-marketplace"` registry, fetched (git in the OS sandbox), reviewed — every
//! part that runs code listed, the content digest shown — and installed into the cache keyed by
//! that digest.

use anyhow::{Context, Result};
use bosun_claude::install::{InstallOptions, open_marketplace, stage};
use bosun_registry::RegistryKind;
use serde_json::json;

use crate::env::{load, print_json};
use crate::exit;
use crate::plugins::confirm;
use crate::term::{errln, outln};

/// `NAME@MARKETPLACE` when `spec` names a plugin of a configured Claude marketplace.
pub fn names_claude_plugin(spec: &str) -> Option<(String, String)> {
    let (name, marketplace) = spec.rsplit_once('@')?;
    if name.is_empty() || marketplace.is_empty() || name.contains('/') {
        return None;
    }
    let env = load().ok()?;
    let config = env.config.user.registries.get(marketplace)?;
    (config.kind == RegistryKind::ClaudeMarketplace)
        .then(|| (name.to_owned(), marketplace.to_owned()))
}

/// Installs `name` from the marketplace `marketplace`.
pub fn install(
    name: &str,
    marketplace: &str,
    allow_unpinned: bool,
    yes: bool,
    json: bool,
) -> Result<u8> {
    let env = load()?;
    let registries = crate::registry::registries(&env)?;
    let config = registries.sources().get(marketplace).with_context(|| {
        format!("the marketplace `{marketplace}` is not in effect here (the project's [registries] allow leaves it out)")
    })?;
    let location = bosun_claude::source::location(marketplace, config)?;
    let home = &env.config.home;
    let launcher = bosun_launch::Launcher::new(env.config.user.sandbox.clone())
        .private(home)
        .cache_in(home.join("cache"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let staged = rt.block_on(async {
        let opened = open_marketplace(&location, &launcher, home).await?;
        for warning in &opened.marketplace.warnings {
            errln!("warning: {warning}");
        }
        if opened.marketplace.name != marketplace {
            errln!(
                "note: the marketplace calls itself `{}`; Bosun names it `{marketplace}` as your config does",
                opened.marketplace.name
            );
        }
        stage(&opened, marketplace, name, InstallOptions { allow_unpinned }, &launcher, home).await
    })?;
    if staged.unchanged() {
        outln!(
            "{} is installed already with the same content ({})",
            staged.id,
            staged.digest
        );
        return Ok(exit::OK);
    }
    errln!("{}", staged.review());
    if !confirm(
        &format!(
            "Install {} and let it run what is listed above, sandboxed?",
            staged.id
        ),
        yes,
    )? {
        errln!("nothing installed (pass --yes to install without a terminal)");
        return Ok(exit::NEEDS_APPROVAL);
    }
    let record = staged.commit(home, chrono::Utc::now())?;
    if json {
        print_json(&json!({"installed": record}))?;
    } else {
        outln!("installed {} (content {})", record.id, record.digest);
    }
    Ok(exit::OK)
}
