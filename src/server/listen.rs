//! The TLS accept loop: connection and header limits, timeouts, and a graceful shutdown
//! that lets in-flight requests (and callers that just connected) finish.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// At shutdown, how long a just-opened connection may still deliver its first request.
const NEW_CONNECTION_GRACE: Duration = Duration::from_millis(500);

/// How a TLS listener treats its connections.
#[derive(Debug, Clone, Copy)]
pub struct Listen {
    /// How long in-flight requests may take to finish after shutdown begins.
    pub grace: Duration,
    /// Longest time to receive a request's headers.
    pub request_timeout: Duration,
    /// Open connections at most; further ones wait in the kernel's accept queue.
    pub max_connections: usize,
}

/// Request headers at most (HTTP/1 read buffer, HTTP/2 header list): the API server sends a
/// few hundred bytes; anything near this is not an admission request.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// Accepts TLS connections until `shutdown` resolves, then lets in-flight requests finish
/// for at most `listen.grace`. True when every connection closed in time (the caller says so:
/// the metrics port drains quietly).
pub async fn serve_tls<S>(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: S,
    shutdown: impl Future<Output = ()>,
    listen: Listen,
) -> bool
where
    S: tower::Service<hyper::Request<Incoming>, Response = Response, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let acceptor = TlsAcceptor::from(tls);
    // Our own graceful shutdown rather than hyper-util's: a connection opened moments ago
    // gets a short while to deliver its first request before it is closed (as Go's server
    // treats new connections), so a caller that just connected loses nothing.
    let (closing_tx, closing_rx) = tokio::sync::watch::channel(false);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(listen.request_timeout)
        .max_buf_size(MAX_HEADER_BYTES);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(MAX_HEADER_BYTES as u32)
        .keep_alive_interval(Some(Duration::from_secs(30)));
    let slots = Arc::new(tokio::sync::Semaphore::new(listen.max_connections.max(1)));
    tokio::pin!(shutdown);
    loop {
        // A slot first: at the cap, new connections wait in the accept queue instead of
        // taking memory and handshakes from the ones being served.
        let slot = tokio::select! {
            s = Arc::clone(&slots).acquire_owned() => match s {
                Ok(s) => s,
                Err(_) => break,
            },
            _ = &mut shutdown => break,
        };
        tokio::select! {
            accepted = listener.accept() => {
                let (tcp, _peer) = match accepted {
                    Ok(c) => c,
                    Err(e) => {
                        // Out of file descriptors and the like: back off, keep serving.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = tcp.set_nodelay(true);
                let acceptor = acceptor.clone();
                let service = TowerToHyperService::new(app.clone());
                let builder = builder.clone();
                let mut closing = closing_rx.clone();
                tokio::spawn(async move {
                    let _slot = slot;
                    let opened = std::time::Instant::now();
                    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(s)) => s,
                        Ok(Err(e)) => {
                            tracing::debug!(error = %e, "TLS handshake failed");
                            return;
                        }
                        Err(_) => return,
                    };
                    let conn = builder.serve_connection(TokioIo::new(stream), service);
                    tokio::pin!(conn);
                    let ended = tokio::select! {
                        r = conn.as_mut() => Some(r),
                        _ = closing.wait_for(|c| *c) => None,
                    };
                    let result = match ended {
                        Some(r) => r,
                        None => {
                            let young = NEW_CONNECTION_GRACE.saturating_sub(opened.elapsed());
                            let early = tokio::select! {
                                r = conn.as_mut() => Some(r),
                                _ = tokio::time::sleep(young) => None,
                            };
                            match early {
                                Some(r) => r,
                                None => {
                                    conn.as_mut().graceful_shutdown();
                                    conn.await
                                }
                            }
                        }
                    };
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                });
            }
            _ = &mut shutdown => break,
        }
    }
    drop(listener);
    let _ = closing_tx.send(true);
    let all = listen.max_connections.max(1);
    let deadline = tokio::time::Instant::now() + listen.grace;
    // Every connection holds a slot until it ends.
    match tokio::time::timeout_at(deadline, slots.acquire_many(all as u32)).await {
        Ok(_) => true,
        Err(_) => {
            tracing::warn!("shutdown grace period over; closing remaining connections");
            false
        }
    }
}
