//! A Python stand-in (tests/cloud/*.py) as a child process: started with a certificate made
//! here for `localhost` and the address it listens on, ready once it prints its ports, and
//! killed when dropped.

use std::io::{BufRead, BufReader};
use std::net::IpAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use lbguard::server::devcert::DevCerts;

pub struct Process {
    child: Child,
    /// The ports of its first line (`port N` or `ports N M`).
    pub ports: Vec<u16>,
    pub certs: DevCerts,
    /// Holds its certificate and key, and what the test puts beside them.
    pub dir: tempfile::TempDir,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Process {
    /// Runs `python3 script --cert C --key K args...` with a certificate for `localhost`,
    /// `ip` and `names`, and waits for its first line (at most 60 s: importing the SDKs is
    /// slow). Its stdin stays open while the test runs (a stand-in may stop when it closes).
    pub async fn start(script: &str, ip: IpAddr, names: &[&str], args: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ip_name = ip.to_string();
        let mut all = vec!["localhost", ip_name.as_str()];
        all.extend_from_slice(names);
        let certs = lbguard::server::devcert::generate(&all).unwrap();
        let (cert, key) = super::write_pair(dir.path(), &certs);
        let mut child = Command::new("python3")
            .arg(script)
            .arg("--cert")
            .arg(&cert)
            .arg("--key")
            .arg(&key)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("python3 runs {script}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line).map(|_| line)
        });
        let line = tokio::time::timeout(Duration::from_secs(60), line)
            .await
            .unwrap_or_else(|_| panic!("{script} starts within 60 s"))
            .unwrap()
            .unwrap();
        let ports: Vec<u16> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|n| n.parse().ok())
            .collect();
        assert!(!ports.is_empty(), "{script} said {line:?}");
        Self {
            child,
            ports,
            certs,
            dir,
        }
    }
}
