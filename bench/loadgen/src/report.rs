//! What the generator prints: one JSON object on stdout per run, with its own CPU use
//! (getrusage) so the orchestrator can tell when the generator, not the broker, was the limit.
use std::fmt::Write as _;
use std::time::Instant;

/// A JSON object with keys in insertion order.
#[derive(Default)]
pub struct Json {
    body: String,
}

impl Json {
    pub fn new() -> Json {
        Json::default()
    }

    fn key(&mut self, k: &str) {
        if !self.body.is_empty() {
            self.body.push(',');
        }
        let _ = write!(self.body, "\"{k}\":");
    }

    pub fn num(mut self, k: &str, v: f64) -> Json {
        self.key(k);
        if v.is_finite() {
            let _ = write!(self.body, "{}", (v * 1000.0).round() / 1000.0);
        } else {
            self.body.push_str("null");
        }
        self
    }

    pub fn int(mut self, k: &str, v: u64) -> Json {
        self.key(k);
        let _ = write!(self.body, "{v}");
        self
    }

    pub fn bool(mut self, k: &str, v: bool) -> Json {
        self.key(k);
        let _ = write!(self.body, "{v}");
        self
    }

    pub fn str(mut self, k: &str, v: &str) -> Json {
        self.key(k);
        self.body.push('"');
        for ch in v.chars() {
            match ch {
                '"' => self.body.push_str("\\\""),
                '\\' => self.body.push_str("\\\\"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(self.body, "\\u{:04x}", c as u32);
                }
                c => self.body.push(c),
            }
        }
        self.body.push('"');
        self
    }

    pub fn obj(mut self, k: &str, v: Json) -> Json {
        self.key(k);
        let _ = write!(self.body, "{v}");
        self
    }

    pub fn strs(mut self, k: &str, v: &[String]) -> Json {
        self.key(k);
        self.body.push('[');
        for (i, s) in v.iter().enumerate() {
            if i > 0 {
                self.body.push(',');
            }
            let one = Json::new().str("s", s).body;
            self.body.push_str(&one[4..]);
        }
        self.body.push(']');
        self
    }
}

impl std::fmt::Display for Json {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{{{}}}", self.body)
    }
}

/// User and system CPU seconds of this process so far.
pub fn cpu_seconds() -> (f64, f64) {
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        (s(u.ru_utime), s(u.ru_stime))
    }
}

/// CPU use between `start` and `stop`: the measured window of a run.
pub struct CpuWindow {
    wall: Instant,
    cpu: (f64, f64),
}

impl CpuWindow {
    pub fn start() -> CpuWindow {
        CpuWindow { wall: Instant::now(), cpu: cpu_seconds() }
    }

    /// `{user, sys, wall, fraction}`: fraction is CPU seconds per wall second (1.0 = one core busy).
    pub fn stop(&self) -> Json {
        let (u, s) = cpu_seconds();
        let wall = self.wall.elapsed().as_secs_f64();
        let (du, ds) = (u - self.cpu.0, s - self.cpu.1);
        Json::new().num("user", du).num("sys", ds).num("wall", wall).num("fraction", if wall > 0.0 { (du + ds) / wall } else { 0.0 })
    }
}

/// Resident set size of process `pid` in bytes, from /proc/<pid>/status (VmRSS).
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The open-file limit: (soft, hard).
pub fn nofile_limits() -> (u64, u64) {
    unsafe {
        let mut l: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
        (l.rlim_cur, l.rlim_max)
    }
}

/// Raises the open-file limit to `want` (or the hard limit, when not allowed more).
pub fn raise_nofile(want: u64) -> u64 {
    unsafe {
        let mut l: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
        if l.rlim_cur >= want {
            return l.rlim_cur;
        }
        let mut n = libc::rlimit { rlim_cur: want, rlim_max: want.max(l.rlim_max) };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &n) != 0 {
            n = libc::rlimit { rlim_cur: l.rlim_max.min(want), rlim_max: l.rlim_max };
            libc::setrlimit(libc::RLIMIT_NOFILE, &n);
        }
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut l);
        l.rlim_cur
    }
}

/// p-th percentile (0..=100) of sorted values.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}
