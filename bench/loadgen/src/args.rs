//! `spindle-loadgen SCENARIO --key value ...`: options as a flat map with typed getters.
use std::collections::HashMap;
use std::net::Ipv4Addr;

pub struct Args {
    pub scenario: String,
    map: HashMap<String, String>,
}

impl Args {
    pub fn parse() -> Result<Args, String> {
        let mut it = std::env::args().skip(1).peekable();
        let scenario = it.next().ok_or("usage: spindle-loadgen SCENARIO [--key value]...")?;
        let mut map = HashMap::new();
        while let Some(k) = it.next() {
            let key = k.strip_prefix("--").ok_or_else(|| format!("expected --option, got {k}"))?.to_string();
            let value = match it.peek() {
                Some(v) if !v.starts_with("--") => it.next().unwrap(),
                _ => "true".to_string(),
            };
            map.insert(key, value);
        }
        Ok(Args { scenario, map })
    }

    pub fn str(&self, k: &str, default: &str) -> String {
        self.map.get(k).cloned().unwrap_or_else(|| default.to_string())
    }

    pub fn num(&self, k: &str, default: u64) -> u64 {
        self.map.get(k).map(|v| v.parse().unwrap_or_else(|_| panic!("--{k}: not a number: {v}"))).unwrap_or(default)
    }

    pub fn float(&self, k: &str, default: f64) -> f64 {
        self.map.get(k).map(|v| v.parse().unwrap_or_else(|_| panic!("--{k}: not a number: {v}"))).unwrap_or(default)
    }
}

/// The settings every scenario shares.
pub struct Common {
    pub host: Ipv4Addr,
    pub port: u16,
    pub version: u8,
    pub sources: Vec<Ipv4Addr>,
    pub payload: usize,
    pub prefix: String,
    /// Broker process whose RSS memory scenarios read.
    pub broker_pid: u32,
    pub credentials: Credentials,
    /// `--proxy-protocol v1|v2`: each connection starts with a PROXY protocol header (as a load
    /// balancer's would), naming a client of its own (10.x.y.z); 0: none.
    pub proxy_protocol: u8,
}

/// The username and password every CONNECT carries (`--username`, `--password`, `--users`).
#[derive(Clone, Default)]
pub struct Credentials {
    pub username: Option<String>,
    pub password: Option<Vec<u8>>,
    /// When > 0, connection i signs in as `username` followed by `i % users` (dev0, dev1, ...).
    pub users: u64,
}

impl Credentials {
    fn from(a: &Args, version: u8) -> Credentials {
        let users = a.num("users", 0);
        let username = a.map.get("username").cloned();
        let password = a.map.get("password").map(|p| p.clone().into_bytes());
        if users > 0 && username.is_none() {
            panic!("--users: needs --username (the prefix of the numbered names)");
        }
        // [MQTT-3.1.2-22]: in 3.1.1 a password needs a username; 5.0 allows it alone.
        if version == crate::mqtt::V4 && password.is_some() && username.is_none() {
            panic!("--password: MQTT 3.1.1 sends a password only with a username (give --username, or --version 5)");
        }
        Credentials { username, password, users }
    }

    /// The username of the `i`th connection the run opens (0-based), if any.
    pub fn username(&self, i: u64) -> Option<Vec<u8>> {
        let base = self.username.as_ref()?;
        Some(if self.users > 0 { format!("{base}{}", i % self.users).into_bytes() } else { base.clone().into_bytes() })
    }
}

impl Common {
    pub fn from(a: &Args) -> Common {
        let host: Ipv4Addr = a.str("host", "127.0.0.1").parse().expect("--host: an IPv4 address");
        let n = a.num("sources", 8).max(1) as u32;
        // 127.0.0.1, .2, ...: the whole of 127/8 is local on Linux.
        let sources = (0..n).map(|i| Ipv4Addr::from(u32::from(Ipv4Addr::new(127, 0, 0, 1)) + i)).collect();
        let version = match a.num("version", 4) {
            4 => crate::mqtt::V4,
            5 => crate::mqtt::V5,
            v => panic!("--version: 4 (3.1.1) or 5, not {v}"),
        };
        Common {
            host,
            port: a.num("port", 1883) as u16,
            version,
            sources,
            payload: a.num("payload", 64) as usize,
            prefix: a.str("prefix", &format!("lg{}", std::process::id())),
            broker_pid: a.num("broker-pid", 0) as u32,
            credentials: Credentials::from(a, version),
            proxy_protocol: match a.str("proxy-protocol", "none").as_str() {
                "none" => 0,
                "v1" => 1,
                "v2" => 2,
                p => panic!("--proxy-protocol: v1 or v2, not {p}"),
            },
        }
    }
}
