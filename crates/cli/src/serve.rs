//! `bosun serve`: the host's tools for other agents over MCP (stdio or Streamable HTTP).
//! Stdout belongs to the protocol under `--stdio`: everything this command says goes to stderr.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use bosun_mcp::{HttpOptions, ServeOptions, Served};
use tokio_util::sync::CancellationToken;

use crate::exit;
use crate::term::errln;

/// How `bosun serve` was asked to listen.
pub struct ServeArgs {
    /// `--http ADDR`; stdio when `None`.
    pub http: Option<SocketAddr>,
    /// `--allow-remote`.
    pub allow_remote: bool,
    /// `--token-env VAR`.
    pub token_env: Option<String>,
    /// `--allow-origin ORIGIN`.
    pub allowed_origins: Vec<String>,
}

pub fn serve(args: ServeArgs) -> Result<u8> {
    let env = crate::env::load()?;
    let token = match &args.token_env {
        Some(var) => {
            let token = std::env::var(var)
                .with_context(|| format!("--token-env {var}: the variable is not set"))?;
            if token.trim().len() < 16 {
                bail!(
                    "--token-env {var}: the token is shorter than 16 characters; use a long random one (e.g. `openssl rand -hex 32`)"
                );
            }
            Some(token.trim().to_owned())
        }
        None => None,
    };
    let serve = &env.config.user.serve;
    let mut clients = Vec::new();
    for (name, client) in &serve.clients {
        let Some(client) = bosun_mcp::http::Client::with_digest_hex(
            name,
            &client.token_sha256,
            client.connections,
            client.sessions,
        ) else {
            bail!(
                "[serve.clients.{name}] token_sha256: give the SHA-256 of the client's token as 64 hex digits (`printf %s \"$TOKEN\" | sha256sum`)"
            );
        };
        clients.push(client);
    }
    if token.is_some() && !clients.is_empty() {
        bail!(
            "--token-env and [serve.clients] both name who may call: use the clients alone, and give the token's holder a client of its own"
        );
    }
    if let Some(addr) = args.http
        && !addr.ip().is_loopback()
        && !args.allow_remote
    {
        bail!(
            "{addr} is not a loopback address: other machines could call your tools. Add --allow-remote, with --token-env VAR or a client each in [serve.clients], to serve it with bearer tokens, or use 127.0.0.1"
        );
    }
    if args.allow_remote && token.is_none() && clients.is_empty() {
        bail!(
            "--allow-remote needs bearer tokens: --token-env VAR, or a client each in [serve.clients] (docs/mcp.md)"
        );
    }
    let host = Arc::new(env.host()?);
    let command = match args.http {
        Some(addr) => format!("serve --http {addr}"),
        None => "serve --stdio".to_owned(),
    };
    let state_key = match &serve.state_key_env {
        Some(var) => Some(
            std::env::var(var)
                .with_context(|| {
                    format!("[serve] state_key_env = \"{var}\": the variable is not set; set it to the same random key (at least 32 bytes, e.g. `openssl rand -hex 32`) on every instance")
                })?
                .trim()
                .as_bytes()
                .to_vec(),
        ),
        None => None,
    };
    let served = Served::with_options(
        host.clone(),
        command,
        ServeOptions {
            state_key,
            state_ttl: serve.state_ttl_secs.map(std::time::Duration::from_secs),
            state_redemptions: serve.state_redemptions_dir.clone(),
            idempotency_dir: serve.idempotency_dir.clone(),
            idempotency_claim_ttl: serve
                .idempotency_claim_secs
                .map(std::time::Duration::from_secs),
            idempotency_keys: None,
        },
    )?;
    let allowed_hosts = serve.allowed_hosts.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let outcome = async {
            match args.http {
                None => bosun_mcp::serve_stdio(served).await?,
                Some(addr) => {
                    let listener = tokio::net::TcpListener::bind(addr)
                        .await
                        .with_context(|| format!("listening on {addr}"))?;
                    let local = listener
                        .local_addr()
                        .context("reading the listening address")?;
                    errln!(
                        "bosun serve: MCP over Streamable HTTP at http://{local}{}",
                        bosun_mcp::http::PATH
                    );
                    let cancel = CancellationToken::new();
                    let stop = cancel.clone();
                    tokio::spawn(async move {
                        if tokio::signal::ctrl_c().await.is_ok() {
                            stop.cancel();
                        }
                    });
                    bosun_mcp::serve_http(
                        served,
                        listener,
                        HttpOptions {
                            token,
                            clients,
                            allowed_origins: args.allowed_origins,
                            allowed_hosts,
                            limits: bosun_mcp::http::Limits::default(),
                            cancel,
                        },
                    )
                    .await?;
                }
            }
            anyhow::Ok(())
        }
        .await;
        // Nothing a served call started (a stdio MCP server) outlives `bosun serve`, whether it
        // ended well or not.
        host.shutdown().await;
        outcome
    })?;
    Ok(exit::OK)
}
