//! Which URLs a tenant may ask the API to discover MCP tools from.
//!
//! Discovery makes the API's host open an HTTP connection to a URL a tenant
//! chose, so where tenants are not trusted the operator names the servers
//! they may reach (`--mcp-allow`). The list is of hosts, each optionally
//! with a port, or `*.` a domain and its sub-domains; `*` alone allows every
//! URL (the default, documented in docs/api.md). Hosts are compared as
//! written in the URL, after lower-casing; an address is allowed only when
//! listed as an address. Redirects are never followed by discovery, so an
//! allowed server cannot send the API elsewhere.

use std::fmt;

/// An allow-list of MCP servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpAllowList {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Any,
    Host { host: String, port: Option<u16> },
    Domain { suffix: String, port: Option<u16> },
}

/// Why an allow-list entry is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{entry:?} is not an MCP allow-list entry (a host, host:port, *.domain[:port] or *)")]
pub struct McpAllowEntryError {
    /// The entry as given.
    pub entry: String,
}

impl Default for McpAllowList {
    /// Every URL.
    fn default() -> Self {
        Self {
            entries: vec![Entry::Any],
        }
    }
}

impl McpAllowList {
    /// A list from entries (`host`, `host:port`, `*.domain`, `*.domain:port`,
    /// `[v6-address]:port`, or `*`).
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, McpAllowEntryError> {
        let entries = entries
            .iter()
            .map(|e| Entry::parse(e.as_ref().trim()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { entries })
    }

    /// Whether discovery may reach `url`.
    pub fn permits(&self, url: &str) -> bool {
        let Ok(url) = reqwest::Url::parse(url) else {
            return false;
        };
        let Some(host) = url.host_str() else {
            return false;
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let port = url.port_or_known_default();
        self.entries.iter().any(|entry| match entry {
            Entry::Any => true,
            Entry::Host { host: h, port: p } => *h == host && (p.is_none() || *p == port),
            Entry::Domain { suffix, port: p } => {
                (host == *suffix || host.ends_with(&format!(".{suffix}")))
                    && (p.is_none() || *p == port)
            }
        })
    }
}

impl Entry {
    fn parse(text: &str) -> Result<Self, McpAllowEntryError> {
        let error = || McpAllowEntryError {
            entry: text.to_owned(),
        };
        if text == "*" {
            return Ok(Entry::Any);
        }
        let (host, port) = split_port(text).ok_or_else(error)?;
        let host = host.to_ascii_lowercase();
        let valid = |h: &str| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-.:_".contains(&b))
        };
        match host.strip_prefix("*.") {
            Some(suffix) if valid(suffix) => Ok(Entry::Domain {
                suffix: suffix.to_owned(),
                port,
            }),
            None if valid(&host) => Ok(Entry::Host { host, port }),
            _ => Err(error()),
        }
    }
}

/// `host`, `host:port` or `[v6]:port` → (host, port).
fn split_port(text: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after.strip_prefix(':') {
            Some(port) => Some((host, Some(port.parse().ok()?))),
            None if after.is_empty() => Some((host, None)),
            None => None,
        };
    }
    match text.rsplit_once(':') {
        // More than one ':' without brackets: a bare IPv6 address.
        Some((host, _)) if host.contains(':') => Some((text, None)),
        Some((host, port)) => Some((host, Some(port.parse().ok()?))),
        None => Some((text, None)),
    }
}

impl fmt::Display for McpAllowList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let texts: Vec<String> = self
            .entries
            .iter()
            .map(|e| match e {
                Entry::Any => "*".to_owned(),
                Entry::Host { host, port } => with_port(host, *port),
                Entry::Domain { suffix, port } => with_port(&format!("*.{suffix}"), *port),
            })
            .collect();
        f.write_str(&texts.join(","))
    }
}

fn with_port(host: &str, port: Option<u16>) -> String {
    match port {
        Some(port) if host.contains(':') => format!("[{host}]:{port}"),
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_match_hosts_ports_and_domains() {
        let list = McpAllowList::parse(&[
            "mcp.example.com",
            "127.0.0.1:9000",
            "*.tools.test",
            "[::1]:7",
        ])
        .unwrap();
        assert!(list.permits("https://mcp.example.com/mcp"));
        assert!(list.permits("http://MCP.example.com:8080/mcp"));
        assert!(list.permits("http://127.0.0.1:9000/mcp"));
        assert!(!list.permits("http://127.0.0.1:9001/mcp"));
        assert!(list.permits("http://a.b.tools.test/mcp"));
        assert!(list.permits("http://tools.test/mcp"));
        assert!(!list.permits("http://eviltools.test/mcp"));
        assert!(list.permits("http://[::1]:7/mcp"));
        assert!(!list.permits("http://169.254.169.254/latest"));
        assert!(!list.permits("not a url"));
        assert!(McpAllowList::default().permits("http://10.0.0.1/mcp"));
        assert!(McpAllowList::parse(&["exa mple"]).is_err());
        assert!(McpAllowList::parse(&["host:port"]).is_err());
        assert_eq!(
            list.to_string(),
            "mcp.example.com,127.0.0.1:9000,*.tools.test,[::1]:7"
        );
    }
}
