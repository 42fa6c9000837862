//! The single-use approval ids of the approval card (`--approve-writes`
//! through an MCP Apps view, docs/approval.md "The approval card").
//! Protocol-free: `mcp::apps` issues an id with each card and looks it up
//! when the view's app-only tools bring the person's decision or ask how
//! it went.
//!
//! An id is 122 random bits (a UUID v4) naming one [`Pending`] change: the
//! principal it was shown to, the tool, the call's arguments (as the
//! server received them, after the host-added ones were dropped) and the
//! digest of the question shown ([`super::question::Question::digest`],
//! which binds the tool, the arguments and the plan's text). Redeeming it
//! does not apply anything by itself: the change is planned again from the
//! bound tool and arguments, and applied only when the fresh plan's digest
//! equals the bound one (else `plan_changed`), so whoever holds an id can
//! approve exactly the plan that was shown, and nothing else.
//!
//! Each id goes through [`Stage`]s:
//!
//! ```text
//! Open ──approve──▶ Deciding ──the change starts──▶ Applying ──ends──▶ Done(result)
//!   │                  └──ends before the change started──▶ Open (last: result)
//!   └──decline──▶ gone (nothing ran)
//! ```
//!
//! The id is **spent when the change starts** ([`Claim::start`], called by
//! the approval's state machine just before the apply), not when the
//! decision arrives: a decision that ended before anything changed (the
//! installation's lock not free in time, a cancel, a re-plan that failed)
//! leaves the id open, so the person can decide again, and a second Approve
//! while one is deciding joins it instead of running twice. An `Open` id is
//! valid until its deadline (`--timeout` after it was issued); a decision
//! in progress does not expire; a `Done` one is kept, for the card to read
//! its result ([`Ledger::status`]), until `--timeout` after it ended.
//!
//! A wrong principal does not consume the id (another session cannot
//! spend the person's approval), and is told the same as for an id that
//! does not exist. At most [`CAPACITY`] ids are kept at a time; issuing
//! past it drops the open or done one closest to its deadline (never a
//! decision in progress), and expired ids are dropped on every issue.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::principal::Principal;

/// Most ids kept at once.
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

/// Where an id is in its life (module docs). The results are kept as the
/// client is to read them (a tool result as JSON, built by the MCP side).
#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    /// Waiting for the person's decision; `last` is the result of a
    /// decision that ended before the change started (nothing changed).
    Open {
        /// That decision's result, if there was one.
        last: Option<Value>,
    },
    /// Approved: waiting for the installation's lock, or re-planning.
    /// Nothing has changed yet.
    Deciding,
    /// The change started: the id is spent, the change may be applied.
    Applying,
    /// The change ran to its end; its result.
    Done(Value),
}

/// What a decision about an id does ([`Ledger::decide`]).
#[derive(Debug)]
pub enum IdDecision {
    /// Approved: run the bound change (re-plan, apply) with this claim.
    Approve(Pending, Claim),
    /// Declined: the id is gone; nothing runs.
    Decline(Pending),
    /// A decision about this id is in progress already ([`Stage::Deciding`]
    /// or [`Stage::Applying`]): nothing more runs; here is where it is.
    InProgress(Stage),
}

#[derive(Debug)]
struct Entry {
    pending: Pending,
    stage: Stage,
    /// An open id's deadline; a done one's end of keeping.
    deadline: Instant,
    /// How long the id stays valid, and a result is kept.
    ttl: Duration,
}

type Map = HashMap<String, Entry>;

/// The ids of one server (cheap to clone: one shared map).
#[derive(Debug, Default, Clone)]
pub struct Ledger {
    ids: Arc<Mutex<Map>>,
}

/// An approved id whose decision is in progress: the approval's state
/// machine calls [`Claim::start`] just before the change starts, and the
/// decision's runner [`Claim::finish`] when it ended.
#[derive(Debug, Clone)]
pub struct Claim {
    ledger: Ledger,
    id: String,
}

impl Claim {
    /// The change starts: the id is spent ([`Stage::Applying`]). `false`
    /// when the id is no longer deciding (never, unless a bug): then
    /// nothing may be applied.
    pub fn start(&self) -> bool {
        let mut map = self.ledger.lock();
        match map.get_mut(&self.id) {
            Some(e) if e.stage == Stage::Deciding => {
                e.stage = Stage::Applying;
                true
            }
            _ => false,
        }
    }

    /// The decision ended with `result` (the call's tool result as JSON)
    /// at `now`: [`Stage::Done`] when the change started, else the id is
    /// open again (valid for `--timeout` from now) with `result` as its
    /// last answer.
    pub fn finish(&self, result: Value, now: Instant) {
        let mut map = self.ledger.lock();
        if let Some(e) = map.get_mut(&self.id) {
            e.stage = match e.stage {
                Stage::Applying => Stage::Done(result),
                _ => Stage::Open { last: Some(result) },
            };
            e.deadline = now + e.ttl;
        }
    }

    /// The id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// Issues a new id for `pending`, open until `now + ttl`.
    pub fn issue(&self, pending: Pending, ttl: Duration, now: Instant) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        let mut map = self.lock();
        map.retain(|_, e| e.in_progress() || e.deadline > now);
        while map.len() >= CAPACITY {
            let Some(first) = map
                .iter()
                .filter(|(_, e)| !e.in_progress())
                .min_by_key(|(_, e)| e.deadline)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            map.remove(&first);
        }
        let entry = Entry {
            pending,
            stage: Stage::Open { last: None },
            deadline: now + ttl,
            ttl,
        };
        map.insert(id.clone(), entry);
        id
    }

    /// The person's decision about `id`, for `principal`, at `now`
    /// ([`IdDecision`]): approving an open id makes it [`Stage::Deciding`]
    /// (not spent yet: [`Claim::start`] spends it); declining drops it.
    ///
    /// Errors: [`IdRefusal::Expired`] for an open id past its deadline (it
    /// is dropped); [`IdRefusal::Unknown`] for an id never issued, spent
    /// ([`Stage::Done`]), or issued to another principal (which keeps it).
    pub fn decide(
        &self,
        id: &str,
        principal: &Principal,
        approve: bool,
        now: Instant,
    ) -> Result<IdDecision, IdRefusal> {
        let mut map = self.lock();
        let entry = Self::owned(&mut map, id, principal)?;
        match &entry.stage {
            Stage::Done(_) => Err(IdRefusal::Unknown),
            s @ (Stage::Deciding | Stage::Applying) => Ok(IdDecision::InProgress(s.clone())),
            Stage::Open { .. } if entry.deadline <= now => {
                map.remove(id);
                Err(IdRefusal::Expired)
            }
            Stage::Open { .. } if approve => {
                entry.stage = Stage::Deciding;
                let claim = Claim {
                    ledger: self.clone(),
                    id: id.to_owned(),
                };
                Ok(IdDecision::Approve(entry.pending.clone(), claim))
            }
            Stage::Open { .. } => map
                .remove(id)
                .map(|e| IdDecision::Decline(e.pending))
                .ok_or(IdRefusal::Unknown),
        }
    }

    /// Where `id` is, for `principal`, at `now` (an open id past its
    /// deadline is dropped).
    ///
    /// Errors: as [`Ledger::decide`], and [`IdRefusal::Unknown`] for a done
    /// id past its keeping.
    pub fn status(
        &self,
        id: &str,
        principal: &Principal,
        now: Instant,
    ) -> Result<Stage, IdRefusal> {
        let mut map = self.lock();
        let entry = Self::owned(&mut map, id, principal)?;
        if !entry.in_progress() && entry.deadline <= now {
            let open = matches!(entry.stage, Stage::Open { .. });
            map.remove(id);
            return Err(if open {
                IdRefusal::Expired
            } else {
                IdRefusal::Unknown
            });
        }
        Ok(entry.stage.clone())
    }

    /// How many ids are kept (expired ones included until the next issue).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no id is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entry of `id` when it was issued to `principal`.
    fn owned<'m>(
        map: &'m mut Map,
        id: &str,
        principal: &Principal,
    ) -> Result<&'m mut Entry, IdRefusal> {
        match map.get_mut(id) {
            Some(e) if e.pending.principal == *principal => Ok(e),
            _ => Err(IdRefusal::Unknown),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Map> {
        // A panic while holding it left the map consistent (every change
        // is one assignment): keep using it.
        self.ids.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Entry {
    /// A decision is running: the entry is neither dropped nor expired.
    fn in_progress(&self) -> bool {
        matches!(self.stage, Stage::Deciding | Stage::Applying)
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

    fn alice() -> Principal {
        Principal::named("alice")
    }

    fn approve(ledger: &Ledger, id: &str, now: Instant) -> Result<Claim, String> {
        match ledger.decide(id, &alice(), true, now) {
            Ok(IdDecision::Approve(_, claim)) => Ok(claim),
            other => Err(format!("{other:?}")),
        }
    }

    #[test]
    fn an_id_is_spent_when_the_change_starts_and_only_once() {
        let ledger = Ledger::new();
        let now = Instant::now();
        let p = pending("alice", json!({"name": "demo"}));
        let id = ledger.issue(p.clone(), TTL, now);
        assert_eq!(id.len(), 36, "a UUID: {id}");
        let claim = approve(&ledger, &id, now).expect("approved");
        assert_eq!(ledger.status(&id, &alice(), now), Ok(Stage::Deciding));
        // A second Approve while deciding joins it: nothing more runs.
        assert!(matches!(
            ledger.decide(&id, &alice(), true, now),
            Ok(IdDecision::InProgress(Stage::Deciding))
        ));
        assert!(claim.start(), "the change starts");
        assert!(!claim.start(), "never twice");
        assert!(matches!(
            ledger.decide(&id, &alice(), false, now),
            Ok(IdDecision::InProgress(Stage::Applying))
        ));
        claim.finish(json!({"isError": false}), now);
        assert_eq!(
            ledger.status(&id, &alice(), now),
            Ok(Stage::Done(json!({"isError": false})))
        );
        assert_eq!(
            ledger.decide(&id, &alice(), true, now).map(|_| ()),
            Err(IdRefusal::Unknown),
            "spent"
        );
        // The result is kept for --timeout after the end, then dropped.
        assert_eq!(
            ledger.status(&id, &alice(), now + TTL).map(|_| ()),
            Err(IdRefusal::Unknown)
        );
    }

    #[test]
    fn a_decision_that_ended_before_the_change_leaves_the_id_open() {
        let ledger = Ledger::new();
        let now = Instant::now();
        let id = ledger.issue(pending("alice", json!({})), TTL, now);
        let claim = approve(&ledger, &id, now).expect("approved");
        // The lock was not free in time: nothing started.
        let later = now + TTL + Duration::from_secs(5);
        claim.finish(json!({"code": "queue_timeout"}), later);
        assert_eq!(
            ledger.status(&id, &alice(), later),
            Ok(Stage::Open {
                last: Some(json!({"code": "queue_timeout"}))
            })
        );
        // Valid again, for --timeout from the end; a decision in progress
        // never expired.
        let again = approve(&ledger, &id, later + TTL - Duration::from_millis(1));
        assert!(again.is_ok(), "{again:?}");
    }

    #[test]
    fn a_decline_drops_the_id() {
        let ledger = Ledger::new();
        let now = Instant::now();
        let p = pending("alice", json!({"name": "demo"}));
        let id = ledger.issue(p.clone(), TTL, now);
        match ledger.decide(&id, &alice(), false, now) {
            Ok(IdDecision::Decline(got)) => assert_eq!(got, p),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            ledger.decide(&id, &alice(), true, now).map(|_| ()),
            Err(IdRefusal::Unknown)
        );
        assert!(ledger.is_empty());
    }

    #[test]
    fn another_principal_is_refused_and_does_not_spend_the_id() {
        let ledger = Ledger::new();
        let now = Instant::now();
        let id = ledger.issue(pending("alice", json!({"name": "demo"})), TTL, now);
        for who in [Principal::named("mallory"), Principal::local()] {
            assert_eq!(
                ledger.decide(&id, &who, true, now).map(|_| ()),
                Err(IdRefusal::Unknown)
            );
            assert_eq!(
                ledger.decide(&id, &who, false, now).map(|_| ()),
                Err(IdRefusal::Unknown)
            );
            assert_eq!(ledger.status(&id, &who, now), Err(IdRefusal::Unknown));
        }
        assert!(approve(&ledger, &id, now).is_ok());
    }

    #[test]
    fn an_open_id_expires_at_its_deadline() {
        let ledger = Ledger::new();
        let now = Instant::now();
        let id = ledger.issue(pending("alice", json!({})), TTL, now);
        let later = now + TTL;
        assert_eq!(
            ledger.decide(&id, &alice(), true, later).map(|_| ()),
            Err(IdRefusal::Expired)
        );
        // Dropped: now unknown.
        assert_eq!(
            ledger.decide(&id, &alice(), true, now).map(|_| ()),
            Err(IdRefusal::Unknown)
        );
        // Just before the deadline it is still valid.
        let id = ledger.issue(pending("alice", json!({})), TTL, now);
        assert!(approve(&ledger, &id, now + TTL - Duration::from_millis(1)).is_ok());
        let id = ledger.issue(pending("alice", json!({})), TTL, now);
        assert_eq!(ledger.status(&id, &alice(), later), Err(IdRefusal::Expired));
    }

    #[test]
    fn an_unknown_id_is_refused() {
        let ledger = Ledger::new();
        let now = Instant::now();
        ledger.issue(pending("alice", json!({})), TTL, now);
        assert_eq!(
            ledger.decide("not-an-id", &alice(), true, now).map(|_| ()),
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
    fn issuing_drops_expired_ids_and_keeps_within_capacity_but_not_running_ones() {
        let ledger = Ledger::new();
        let now = Instant::now();
        let old = ledger.issue(pending("alice", json!({})), Duration::from_secs(1), now);
        let running = ledger.issue(pending("alice", json!({})), Duration::from_secs(1), now);
        let _claim = approve(&ledger, &running, now).expect("approved");
        let later = now + Duration::from_secs(2);
        ledger.issue(pending("alice", json!({})), TTL, later);
        assert_eq!(
            ledger.len(),
            2,
            "the expired id was dropped, not the running one"
        );
        assert_eq!(
            ledger.decide(&old, &alice(), true, later).map(|_| ()),
            Err(IdRefusal::Unknown)
        );
        for _ in 0..CAPACITY + 10 {
            ledger.issue(pending("alice", json!({})), TTL, later);
        }
        assert_eq!(ledger.len(), CAPACITY);
        assert_eq!(
            ledger.status(&running, &alice(), later),
            Ok(Stage::Deciding)
        );
    }
}
