//! An HTTP CONNECT proxy on 127.0.0.1 that records every tunnel it is asked for. Whatever
//! host a CONNECT names, it connects to 127.0.0.1 on that port, so a test can use a name
//! that is not loopback (lbguard never resolves a proxied host; the proxy does).

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How the proxy answers CONNECT.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Opens every tunnel.
    Open,
    /// Opens a tunnel only with this exact `Proxy-Authorization`; 407 otherwise.
    Auth(String),
    /// Answers 403 Forbidden.
    Forbid,
    /// Reads the CONNECT and never answers.
    Silent,
    /// Reads the CONNECT and closes the connection.
    Hangup,
}

/// One CONNECT the proxy was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// `host:port` as the client named it.
    pub target: String,
    pub authorization: Option<String>,
    /// Whether a tunnel was opened.
    pub opened: bool,
}

pub struct ConnectProxy {
    pub port: u16,
    asked: Arc<Mutex<Vec<Asked>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ConnectProxy {
    pub async fn start(mode: Mode) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&asked);
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(serve(conn, mode.clone(), Arc::clone(&log)));
            }
        });
        Self { port, asked, task }
    }

    /// `http://[userinfo@]127.0.0.1:port`
    pub fn url(&self, userinfo: &str) -> String {
        format!("http://{userinfo}127.0.0.1:{}", self.port)
    }

    /// Every CONNECT so far, in order.
    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }

    /// How many tunnels were opened.
    pub fn tunnels(&self) -> usize {
        self.asked().iter().filter(|a| a.opened).count()
    }
}

async fn serve(mut conn: TcpStream, mode: Mode, log: Arc<Mutex<Vec<Asked>>>) {
    // The request head, bounded.
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > 16 << 10 {
            return;
        }
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let mut lines = head.split("\r\n");
    let request = lines.next().unwrap_or_default();
    let mut parts = request.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let authorization = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("proxy-authorization"))
        .map(|(_, v)| v.trim().to_string());
    if method != "CONNECT" {
        let _ = conn
            .write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    }
    let answer: Option<&[u8]> = match &mode {
        Mode::Open => None,
        Mode::Auth(want) if authorization.as_deref() == Some(want.as_str()) => None,
        Mode::Auth(_) => Some(
            b"HTTP/1.1 407 Proxy Authentication Required\r\nproxy-authenticate: Basic realm=\"t\"\r\ncontent-length: 0\r\n\r\n",
        ),
        Mode::Forbid => Some(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n"),
        Mode::Hangup => {
            log.lock().unwrap().push(Asked {
                target: target.to_string(),
                authorization,
                opened: false,
            });
            return;
        }
        Mode::Silent => {
            log.lock().unwrap().push(Asked {
                target: target.to_string(),
                authorization,
                opened: false,
            });
            // Holds the connection open without a word until the client gives up.
            let _ = conn.read(&mut buf).await;
            return;
        }
    };
    let port = target
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse::<u16>().ok());
    let upstream = match (answer, port) {
        (None, Some(port)) => TcpStream::connect(("127.0.0.1", port)).await.ok(),
        _ => None,
    };
    log.lock().unwrap().push(Asked {
        target: target.to_string(),
        authorization,
        opened: upstream.is_some(),
    });
    let Some(mut upstream) = upstream else {
        let _ = conn
            .write_all(answer.unwrap_or(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n"))
            .await;
        return;
    };
    if conn
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut conn, &mut upstream).await;
}
