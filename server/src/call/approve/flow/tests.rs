//! The approval's decisions for each way an answer arrives, on fake
//! [`Steps`] and a fake [`Asker`]: no conda, no MCP client. What the real
//! steps do with conda (the dry run, the lock, the apply) is covered by
//! the black-box tests of `tests/tests/mcp/approval.rs`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;

/// A question whose digest is `digest`.
fn q(digest: &str) -> Question {
    Question {
        message: format!("plan {digest}"),
        digest: digest.to_owned(),
        card: serde_json::Value::Null,
    }
}

/// What the fakes saw, in order.
type Log = Arc<Mutex<Vec<String>>>;

fn push(log: &Log, s: impl Into<String>) {
    log.lock().expect("log").push(s.into());
}

/// Steps that record what the flow asked of them.
struct Fake {
    /// The results of successive previews.
    previews: Mutex<VecDeque<Result<Question, Outcome>>>,
    /// The lock cannot be taken.
    lock_fails: bool,
    bound: Duration,
    cancel: CancellationToken,
    log: Log,
}

impl Fake {
    fn new(previews: Vec<Result<Question, Outcome>>) -> (Self, Log) {
        let log = Log::default();
        let fake = Fake {
            previews: Mutex::new(previews.into()),
            lock_fails: false,
            bound: Duration::from_secs(30),
            cancel: CancellationToken::new(),
            log: log.clone(),
        };
        (fake, log)
    }
}

impl Steps for Fake {
    type Held = ();

    fn what(&self) -> &str {
        "conda install"
    }

    fn bound(&self) -> Duration {
        self.bound
    }

    fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    async fn hold(&self) -> Result<(), Outcome> {
        push(&self.log, "hold");
        if self.lock_fails {
            return Err(Outcome::NotRun {
                what: "conda install".into(),
                reason: NotRun::Internal("lock"),
            });
        }
        Ok(())
    }

    async fn question(&self) -> Result<Question, Outcome> {
        push(&self.log, "preview");
        self.previews
            .lock()
            .expect("previews")
            .pop_front()
            .expect("no more previews planned by the test")
    }

    fn answered(&self, answer: Answered) {
        push(&self.log, format!("answered {}", answer.word()));
    }

    async fn apply(self, (): ()) -> Outcome {
        push(&self.log, "apply");
        Outcome::Answered {
            tool: "conda_install".into(),
            value: json!("applied"),
        }
    }
}

/// How the fake person answers.
#[derive(Debug)]
enum Person {
    Says(Answer),
    Fails,
    Withdrawn,
    Silent,
}

#[derive(Debug)]
struct FakeAsker(Person, Log);

impl Asker for FakeAsker {
    fn ask<'a>(&'a self, question: &'a Question, what: &'a str) -> super::super::Asking<'a> {
        push(&self.1, format!("ask {} about {what}", question.digest));
        Box::pin(async move {
            match self.0 {
                Person::Says(a) => Ok(a),
                Person::Fails => Err(AskError::Failed),
                Person::Withdrawn => Err(AskError::Withdrawn),
                Person::Silent => std::future::pending().await,
            }
        })
    }
}

fn ask(person: Person, log: &Log) -> Consent {
    Consent::Ask(Arc::new(FakeAsker(person, log.clone())))
}

fn log_of(log: &Log) -> Vec<String> {
    log.lock().expect("log").clone()
}

fn applied(end: &Ended) -> bool {
    matches!(end, Ended::Done(Outcome::Answered { value, .. }) if value == "applied")
}

fn not_run(end: &Ended) -> &NotRun {
    match end {
        Ended::Done(Outcome::NotRun { what, reason }) => {
            assert_eq!(what, "conda install");
            reason
        }
        other => panic!("expected a call that did not run, got {other:?}"),
    }
}

#[tokio::test]
async fn an_approved_question_applies_under_the_lock_taken_before_the_preview() {
    let (steps, log) = Fake::new(vec![Ok(q("d1")), Ok(q("d1"))]);
    let end = approve(steps, ask(Person::Says(Answer::Approve), &log)).await;
    assert!(applied(&end), "{end:?}");
    assert_eq!(
        log_of(&log),
        [
            "hold",
            "preview",
            "ask d1 about conda install",
            "answered approve",
            "preview",
            "apply"
        ]
    );
}

#[tokio::test]
async fn a_plan_that_changed_after_the_answer_is_not_applied() {
    let (steps, log) = Fake::new(vec![Ok(q("d1")), Ok(q("d2"))]);
    let end = approve(steps, ask(Person::Says(Answer::Approve), &log)).await;
    assert!(matches!(not_run(&end), NotRun::PlanChanged { .. }));
    assert!(!log_of(&log).contains(&"apply".to_owned()));
}

#[tokio::test]
async fn decline_and_cancel_apply_nothing_and_are_recorded() {
    for (answer, word) in [(Answer::Decline, "decline"), (Answer::Cancel, "cancel")] {
        let (steps, log) = Fake::new(vec![Ok(q("d1"))]);
        let end = approve(steps, ask(Person::Says(answer), &log)).await;
        assert!(matches!(not_run(&end), NotRun::Declined { .. }));
        assert_eq!(
            log_of(&log),
            [
                "hold",
                "preview",
                "ask d1 about conda install",
                &format!("answered {word}")
            ]
        );
    }
}

#[tokio::test]
async fn a_question_that_failed_is_unavailable_with_the_plan_it_showed() {
    let (steps, log) = Fake::new(vec![Ok(q("d1"))]);
    let end = approve(steps, ask(Person::Fails, &log)).await;
    match not_run(&end) {
        NotRun::ApprovalUnavailable { why, plan, .. } => {
            assert_eq!(*why, Unasked::QuestionFailed);
            assert_eq!(plan.as_deref(), Some("plan d1"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        log_of(&log).last().map(String::as_str),
        Some("answered unavailable")
    );
}

#[tokio::test]
async fn a_withdrawn_question_cancels_the_call_without_an_answer() {
    let (steps, log) = Fake::new(vec![Ok(q("d1"))]);
    let end = approve(steps, ask(Person::Withdrawn, &log)).await;
    assert!(matches!(not_run(&end), NotRun::Exec(ExecError::Cancelled)));
    assert!(!log_of(&log).iter().any(|l| l.starts_with("answered")));
}

#[tokio::test]
async fn no_answer_within_the_time_limit_counts_as_cancel_and_reports_the_wait() {
    let (mut steps, log) = Fake::new(vec![Ok(q("d1"))]);
    steps.bound = Duration::from_millis(60);
    let end = approve(steps, ask(Person::Silent, &log)).await;
    match not_run(&end) {
        NotRun::Declined { duration_ms } => assert!(*duration_ms >= 60, "{duration_ms}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        log_of(&log).last().map(String::as_str),
        Some("answered cancel")
    );
}

#[tokio::test]
async fn the_calls_cancellation_ends_the_wait_for_the_answer() {
    let (steps, log) = Fake::new(vec![Ok(q("d1"))]);
    steps.cancel.cancel();
    let end = approve(steps, ask(Person::Silent, &log)).await;
    assert!(matches!(not_run(&end), NotRun::Exec(ExecError::Cancelled)));
}

#[tokio::test]
async fn a_preview_without_a_plan_is_the_answer_and_nothing_is_asked() {
    let failed = Outcome::NotRun {
        what: "conda install".into(),
        reason: NotRun::Internal("dry run failed"),
    };
    let (steps, log) = Fake::new(vec![Err(failed)]);
    let end = approve(steps, ask(Person::Says(Answer::Approve), &log)).await;
    assert!(matches!(not_run(&end), NotRun::Internal("dry run failed")));
    assert_eq!(log_of(&log), ["hold", "preview"]);
}

#[tokio::test]
async fn a_lock_that_cannot_be_taken_ends_the_call_before_the_preview() {
    let (mut steps, log) = Fake::new(Vec::new());
    steps.lock_fails = true;
    let end = approve(steps, ask(Person::Says(Answer::Approve), &log)).await;
    assert!(matches!(not_run(&end), NotRun::Internal("lock")));
    assert_eq!(log_of(&log), ["hold"]);
}

#[tokio::test]
async fn a_client_that_cannot_be_asked_gets_the_plan_and_nothing_applied() {
    let (steps, log) = Fake::new(vec![Ok(q("d1"))]);
    let end = approve(steps, Consent::Unavailable(Unasked::NoElicitation)).await;
    match not_run(&end) {
        NotRun::ApprovalUnavailable { why, plan, .. } => {
            assert_eq!(*why, Unasked::NoElicitation);
            assert_eq!(plan.as_deref(), Some("plan d1"));
        }
        other => panic!("{other:?}"),
    }
    // No lock: nothing will be applied.
    assert_eq!(log_of(&log), ["preview", "answered unavailable"]);
}

#[tokio::test]
async fn the_stateless_first_request_and_the_card_answer_with_the_question() {
    let (steps, log) = Fake::new(vec![Ok(q("d1"))]);
    match approve(steps, Consent::Defer).await {
        Ended::Ask(question) => assert_eq!(question.digest, "d1"),
        other => panic!("{other:?}"),
    }
    assert_eq!(log_of(&log), ["preview"]);

    let (steps, log) = Fake::new(vec![Ok(q("d1"))]);
    match approve(steps, Consent::Card).await {
        Ended::Card { question, .. } => assert_eq!(question.digest, "d1"),
        other => panic!("{other:?}"),
    }
    assert_eq!(log_of(&log), ["preview"]);
}

#[tokio::test]
async fn a_later_approval_re_plans_under_the_lock_and_applies_only_the_plan_shown() {
    let approved = |shown: &str| Consent::Answered {
        answer: Answer::Approve,
        shown: shown.to_owned(),
        claim: None,
    };
    let (steps, log) = Fake::new(vec![Ok(q("d1"))]);
    let end = approve(steps, approved("d1")).await;
    assert!(applied(&end), "{end:?}");
    assert_eq!(
        log_of(&log),
        ["answered approve", "hold", "preview", "apply"]
    );

    // An altered or stale digest (requestState, a card's) applies nothing.
    let (steps, log) = Fake::new(vec![Ok(q("d1"))]);
    let end = approve(steps, approved("forged")).await;
    assert!(matches!(not_run(&end), NotRun::PlanChanged { .. }));
    assert_eq!(log_of(&log), ["answered approve", "hold", "preview"]);
}

#[tokio::test]
async fn a_later_decline_runs_nothing_at_all() {
    let (steps, log) = Fake::new(Vec::new());
    let consent = Consent::Answered {
        answer: Answer::Decline,
        shown: "d1".into(),
        claim: None,
    };
    let end = approve(steps, consent).await;
    assert!(matches!(not_run(&end), NotRun::Declined { .. }));
    assert_eq!(log_of(&log), ["answered decline"]);
}

/// The card's id is spent when the change starts: a decision that ends
/// before (a changed plan, a lock not taken) leaves it deciding for its
/// runner to reopen; one that applies spends it first.
#[tokio::test]
async fn a_card_id_is_spent_only_by_the_apply() {
    use crate::call::approve::ids::{IdDecision, Ledger, Pending, Stage};
    use crate::principal::Principal;
    use std::time::Instant;

    let ledger = Ledger::new();
    let who = Principal::named("alice");
    let claim_of = |ledger: &Ledger| {
        let pending = Pending {
            principal: who.clone(),
            tool: "conda_install".into(),
            args: json!({}),
            digest: "d1".into(),
            what: "conda install".into(),
        };
        let now = Instant::now();
        let id = ledger.issue(pending, Duration::from_secs(60), now);
        match ledger.decide(&id, &who, true, now) {
            Ok(IdDecision::Approve(_, claim)) => (id, claim),
            other => panic!("{other:?}"),
        }
    };
    let card = |claim: &crate::call::approve::ids::Claim, shown: &str| Consent::Answered {
        answer: Answer::Approve,
        shown: shown.to_owned(),
        claim: Some(claim.clone()),
    };

    // The plan changed: nothing applied, the id not spent.
    let (id, claim) = claim_of(&ledger);
    let (steps, log) = Fake::new(vec![Ok(q("d2"))]);
    let end = approve(steps, card(&claim, "d1")).await;
    assert!(matches!(not_run(&end), NotRun::PlanChanged { .. }));
    assert_eq!(log_of(&log), ["answered approve", "hold", "preview"]);
    assert_eq!(
        ledger.status(&id, &who, Instant::now()),
        Ok(Stage::Deciding)
    );

    // The lock was not taken: the same.
    let (id, claim) = claim_of(&ledger);
    let (mut steps, _) = Fake::new(vec![Ok(q("d1"))]);
    steps.lock_fails = true;
    let end = approve(steps, card(&claim, "d1")).await;
    assert!(!applied(&end), "{end:?}");
    assert_eq!(
        ledger.status(&id, &who, Instant::now()),
        Ok(Stage::Deciding)
    );

    // Applied: spent just before the apply.
    let (id, claim) = claim_of(&ledger);
    let (steps, _) = Fake::new(vec![Ok(q("d1"))]);
    let end = approve(steps, card(&claim, "d1")).await;
    assert!(applied(&end), "{end:?}");
    assert_eq!(
        ledger.status(&id, &who, Instant::now()),
        Ok(Stage::Applying)
    );

    // A claim no longer deciding (spent already) applies nothing.
    let (steps, log) = Fake::new(vec![Ok(q("d1"))]);
    let end = approve(steps, card(&claim, "d1")).await;
    assert!(
        matches!(not_run(&end), NotRun::ApprovalRefused(_)),
        "{end:?}"
    );
    assert_eq!(log_of(&log), ["answered approve", "hold", "preview"]);
}
