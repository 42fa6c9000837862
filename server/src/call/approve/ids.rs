//! The single-use approval ids of the approval card (`--approve-writes`
//! through an MCP Apps view, docs/approval.md "The approval card").
//! Protocol-free: `mcp::apps` issues an id with each card and redeems it
//! when the view's app-only tool brings the person's decision.
//!
//! An id is 122 random bits (a UUID v4) naming one [`Pending`] change: the
//! principal it was shown to, the tool, the call's arguments (as the
//! server received them, after the host-added ones were dropped) and the
//! digest of the question shown ([`super::question::Question::digest`],
//! which binds the tool, the arguments and the plan's text). It is valid
//! once, for that principal only, until its deadline (`--timeout` after it
//! was issued). Redeeming it does not apply anything by itself: the
//! change is planned again from the bound tool and arguments, and applied
//! only when the fresh plan's digest equals the bound one (else
//! `plan_changed`), so whoever holds an id can approve exactly the plan
//! that was shown, and nothing else.
//!
//! A wrong principal does not consume the id (another session cannot
//! spend the person's approval), and is told the same as for an id that
//! does not exist. At most [`CAPACITY`] ids are pending at a time; issuing
//! past it drops the one closest to its deadline, and expired ids are
//! dropped on every issue.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::principal::Principal;

/// Most ids pending at once.
pub const CAPACITY: usize = 256;

/// One change waiting for the person's decision in the card.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// Who was shown the card.
    pub principal: Principal,
    /// The tool called.
    pub tool: String,
    /// Its arguments.
    pub args: Value,
    /// The digest of the question shown.
    pub digest: String,
    /// What was to run (`conda create`), for the answer's text.
    pub what: String,
}

/// Why an id was not redeemed. The two are told apart to the caller: an
/// expired id is the person's to know; an id that is unknown, used
/// already or another principal's is one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IdRefusal {
    /// Never issued, already used, or issued to another principal.
    #[error(
        "this approval id is not valid: it was never issued to this session, or it was already \
         used; nothing changed"
    )]
    Unknown,
    /// Its deadline passed (it is dropped).
    #[error(
        "this approval id expired (the server's --timeout passed since the card was shown); \
         nothing changed. Call the tool again to show a new card"
    )]
    Expired,
}

/// The pending ids of one server.
#[derive(Debug, Default)]
pub struct Ledger {
    pending: Mutex<HashMap<String, (Pending, Instant)>>,
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// Issues a new id for `pending`, valid until `now + ttl`.
    pub fn issue(&self, pending: Pending, ttl: Duration, now: Instant) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        let mut map = self.lock();
        map.retain(|_, (_, deadline)| *deadline > now);
        while map.len() >= CAPACITY {
            let Some(first) = map
                .iter()
                .min_by_key(|(_, (_, d))| *d)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            map.remove(&first);
        }
        map.insert(id.clone(), (pending, now + ttl));
        id
    }

    /// Redeems `id` for `principal` at `now`: its [`Pending`] change, and
    /// the id is gone.
    ///
    /// Errors: [`IdRefusal::Expired`] (the id is dropped);
    /// [`IdRefusal::Unknown`] for an id never issued, used already, or
    /// issued to another principal (which keeps it).
    pub fn redeem(
        &self,
        id: &str,
        principal: &Principal,
        now: Instant,
    ) -> Result<Pending, IdRefusal> {
        let mut map = self.lock();
        let Some((pending, deadline)) = map.get(id) else {
            return Err(IdRefusal::Unknown);
        };
        if pending.principal != *principal {
            return Err(IdRefusal::Unknown);
        }
        if *deadline <= now {
            map.remove(id);
            return Err(IdRefusal::Expired);
        }
        map.remove(id).map(|(p, _)| p).ok_or(IdRefusal::Unknown)
    }

    /// How many ids are pending (expired ones included until the next
    /// issue).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no id is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Pending, Instant)>> {
        // A panic while holding it left the map consistent (every change
        // is one call): keep using it.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pending(who: &str, args: Value) -> Pending {
        let q = crate::call::approve::question::question(
            "conda_create",
            &args,
            &["create".to_owned(), "--name".to_owned(), "demo".to_owned()],
            Some(&json!({"actions": {"LINK": [{"name": "zlib", "version": "1.3"}]}})),
            None,
        );
        Pending {
            principal: Principal::named(who),
            tool: "conda_create".into(),
            args,
            digest: q.digest,
            what: "conda create".into(),
        }
    }

    const TTL: Duration = Duration::from_secs(60);

    #[test]
    fn an_id_is_redeemed_once_by_its_principal() {
        let ledger = Ledger::new();
        let now = Instant::now();
        let p = pending("alice", json!({"name": "demo"}));
        let id = ledger.issue(p.clone(), TTL, now);
        assert_eq!(id.len(), 36, "a UUID: {id}");
        assert_eq!(ledger.redeem(&id, &Principal::named("alice"), now), Ok(p));
        assert_eq!(
            ledger.redeem(&id, &Principal::named("alice"), now),
            Err(IdRefusal::Unknown),
            "never twice"
        );
        assert!(ledger.is_empty());
    }

    #[test]
    fn another_principal_is_refused_and_does_not_spend_the_id() {
        let ledger = Ledger::new();
        let now = Instant::now();
        let id = ledger.issue(pending("alice", json!({"name": "demo"})), TTL, now);
        assert_eq!(
            ledger.redeem(&id, &Principal::named("mallory"), now),
            Err(IdRefusal::Unknown)
        );
        assert_eq!(
            ledger.redeem(&id, &Principal::local(), now),
            Err(IdRefusal::Unknown)
        );
        assert!(ledger.redeem(&id, &Principal::named("alice"), now).is_ok());
    }

    #[test]
    fn an_id_expires_at_its_deadline() {
        let ledger = Ledger::new();
        let now = Instant::now();
        let id = ledger.issue(pending("alice", json!({})), TTL, now);
        let later = now + TTL;
        assert_eq!(
            ledger.redeem(&id, &Principal::named("alice"), later),
            Err(IdRefusal::Expired)
        );
        // Dropped: now unknown.
        assert_eq!(
            ledger.redeem(&id, &Principal::named("alice"), now),
            Err(IdRefusal::Unknown)
        );
        // Just before the deadline it is still valid.
        let id = ledger.issue(pending("alice", json!({})), TTL, now);
        let just_before = now + TTL - Duration::from_millis(1);
        assert!(
            ledger
                .redeem(&id, &Principal::named("alice"), just_before)
                .is_ok()
        );
    }

    #[test]
    fn an_unknown_id_is_refused() {
        let ledger = Ledger::new();
        let now = Instant::now();
        ledger.issue(pending("alice", json!({})), TTL, now);
        assert_eq!(
            ledger.redeem("not-an-id", &Principal::named("alice"), now),
            Err(IdRefusal::Unknown)
        );
        assert_eq!(ledger.len(), 1);
    }

    /// The id binds the arguments through the digest: the same plan for
    /// other arguments has another digest, so a redeemed id applies only
    /// the call it was issued for (the apply compares the fresh plan's
    /// digest of the bound tool and arguments with the bound one).
    #[test]
    fn the_digest_binds_the_arguments_and_the_tool() {
        let a = pending("alice", json!({"name": "demo"}));
        let b = pending("alice", json!({"name": "demo", "packages": ["evil"]}));
        assert_ne!(a.digest, b.digest);
        let c = crate::call::approve::question::question(
            "conda_install",
            &a.args,
            &["create".to_owned(), "--name".to_owned(), "demo".to_owned()],
            Some(&json!({"actions": {"LINK": [{"name": "zlib", "version": "1.3"}]}})),
            None,
        );
        assert_ne!(a.digest, c.digest);
    }

    #[test]
    fn issuing_drops_expired_ids_and_keeps_within_capacity() {
        let ledger = Ledger::new();
        let now = Instant::now();
        let old = ledger.issue(pending("alice", json!({})), Duration::from_secs(1), now);
        let later = now + Duration::from_secs(2);
        ledger.issue(pending("alice", json!({})), TTL, later);
        assert_eq!(ledger.len(), 1, "the expired id was dropped");
        assert_eq!(
            ledger.redeem(&old, &Principal::named("alice"), later),
            Err(IdRefusal::Unknown)
        );
        for _ in 0..CAPACITY + 10 {
            ledger.issue(pending("alice", json!({})), TTL, later);
        }
        assert_eq!(ledger.len(), CAPACITY);
    }
}
