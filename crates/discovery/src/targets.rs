//! Which addresses a multi-tenant process reaches on a tenant's behalf.
//!
//! `toolmock-api` and `toolmock-worker` connect to URLs their tenants name
//! (an agent service, a real tool's MCP server or HTTP endpoint, a
//! verification's target). Without a rule a tenant could make them POST to
//! the service's own network — PostgreSQL, the metrics port, the API
//! itself — and read the answer's class back. A [`TargetPolicy`] refuses a
//! URL whose host resolves to a loopback, private, link-local or otherwise
//! non-public address, unless the operator allows private targets or lists
//! the host. `toolmock run`, `serve` and `verify` (one user on their own
//! machine) use [`TargetPolicy::open`]. A refusal names the class of the
//! address, never what is there.

use reqwest::Url;
use std::net::IpAddr;

/// The addresses a process may reach for its tenants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetPolicy {
    /// Loopback, private and link-local addresses are reachable too.
    pub allow_private: bool,
    /// Hosts reachable whatever they resolve to (the operator's list; a
    /// name or an IP literal, compared case-insensitively).
    pub allowed_hosts: Vec<String>,
}

/// Why a URL is not reached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// It is not an `http`/`https` URL with a host.
    #[error("the URL is not an http:// or https:// URL with a host")]
    InvalidUrl,
    /// Its host's name did not resolve.
    #[error("the URL's host name does not resolve")]
    Unresolved,
    /// Its host resolves to an address of this class.
    #[error(
        "the URL's host resolves to a {0} address, which this process does not reach for its tenants (an operator may allow it: --allow-private-targets, --allow-target-host)"
    )]
    Private(&'static str),
}

impl TargetError {
    /// A stable code.
    pub fn code(&self) -> &'static str {
        match self {
            TargetError::InvalidUrl => "invalid_target_url",
            TargetError::Unresolved => "target_unresolved",
            TargetError::Private(_) => "private_target",
        }
    }
}

impl TargetPolicy {
    /// Every address is reachable: one user on their own machine.
    pub fn open() -> Self {
        Self {
            allow_private: true,
            allowed_hosts: Vec::new(),
        }
    }

    /// `Ok` when `url` may be reached: its host is listed, or every address
    /// it resolves to (now) is public. Resolves the name; an IP literal is
    /// checked as written.
    pub async fn check(&self, url: &str) -> Result<(), TargetError> {
        if self.allow_private {
            return Ok(());
        }
        let parsed = Url::parse(url).map_err(|_| TargetError::InvalidUrl)?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(TargetError::InvalidUrl);
        }
        let written = parsed.host_str().ok_or(TargetError::InvalidUrl)?;
        let bare = written.trim_start_matches('[').trim_end_matches(']');
        if self
            .allowed_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(written) || h.eq_ignore_ascii_case(bare))
        {
            return Ok(());
        }
        let port = parsed
            .port_or_known_default()
            .ok_or(TargetError::InvalidUrl)?;
        let addresses: Vec<IpAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => tokio::net::lookup_host((bare, port))
                .await
                .map_err(|_| TargetError::Unresolved)?
                .map(|a| a.ip())
                .collect(),
        };
        if addresses.is_empty() {
            return Err(TargetError::Unresolved);
        }
        match addresses.into_iter().find_map(non_public) {
            Some(class) => Err(TargetError::Private(class)),
            None => Ok(()),
        }
    }
}

/// The class of an address a tenant may not reach, `None` for a public one.
fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            if v4.is_loopback() {
                Some("loopback")
            } else if v4.is_private() || (a == 100 && (64..128).contains(&b)) {
                Some("private")
            } else if v4.is_link_local() {
                Some("link-local")
            } else if v4.is_unspecified() || v4.is_broadcast() || v4.is_multicast() || a == 0 {
                Some("non-routable")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return non_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            if v6.is_loopback() {
                Some("loopback")
            } else if first & 0xfe00 == 0xfc00 {
                Some("private")
            } else if first & 0xffc0 == 0xfe80 {
                Some("link-local")
            } else if v6.is_unspecified() || v6.is_multicast() {
                Some("non-routable")
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_classed() {
        for (ip, class) in [
            ("127.0.0.1", Some("loopback")),
            ("10.1.2.3", Some("private")),
            ("172.16.0.1", Some("private")),
            ("192.168.1.1", Some("private")),
            ("100.64.0.1", Some("private")),
            ("169.254.169.254", Some("link-local")),
            ("0.0.0.0", Some("non-routable")),
            ("::1", Some("loopback")),
            ("::ffff:127.0.0.1", Some("loopback")),
            ("fd00::1", Some("private")),
            ("fe80::1", Some("link-local")),
            ("93.184.216.34", None),
            ("2606:4700::1111", None),
        ] {
            assert_eq!(non_public(ip.parse().unwrap()), class, "{ip}");
        }
    }
}
