//! THE behaviour suite every store backend passes (like quickwit's `metastore_test_suite!`).
//!
//! Each test is a generic async function over a [`Backend`]; [`store_suite!`] instantiates
//! all of them for one backend, and [`durable_store_suite!`] adds the tests that only a
//! durable backend can pass (reopening keeps everything). A new backend gets the whole
//! contract by adding one `store_suite!` line in `main.rs`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use juegoland_core::{Commit, LoggedOp, Receipt, ReceiptOutcome, SNAPSHOT_EVERY, SeatHolder};
use juegoland_protocol::RejectionCode;
use juegoland_store::{DueDeadline, OutboxBacklog, Store, StoreError, WebhookClaim, WebhookEndpoint, WebhookOrigin};
use uuid::Uuid;

use crate::game::{Game, current, engine, engine_publishing, firing, with_deadlines};

/// A store backend under test: a fresh, empty store per test.
#[async_trait::async_trait]
pub trait Backend: Sized + Send {
    /// A fresh empty store; `test` names the test (for schema or directory names).
    async fn start(test: &str) -> Self;
    fn store(&self) -> Arc<dyn Store>;
    /// Another handle over the same data, owned by `owner` (cluster mode); `store()` is
    /// unowned.
    fn owned(&self, owner: &str) -> Arc<dyn Store>;
    /// Closes the store and opens it again over the same data.
    async fn reopen(&mut self);
    /// Releases what `start` made (a schema, a directory).
    async fn finish(self);
}

/// Instantiates every behaviour test for one backend type.
#[macro_export]
macro_rules! store_suite {
    ($backend:ty) => {
        $crate::store_suite!(@tests $backend;
            round_trip,
            a_long_match_restores_from_its_snapshot_and_the_revisions_after_it,
            a_passivating_match_leaves_its_newest_state_as_the_snapshot,
            stale_revision_conflicts,
            stale_rejection_conflicts,
            rejection_keeps_the_revision,
            duplicate_receipt_conflicts,
            creation_twice_conflicts,
            commit_without_fence_conflicts,
            failed_commit_leaves_nothing,
            concurrent_commits_one_wins,
            a_fenced_commit_does_not_fail_the_others,
            a_receipt_collision_does_not_fail_the_others,
            log_in_revision_order,
            outbox_until_dispatched,
            outbox_rows_keep_their_trace_context,
            outbox_backlog_counts_and_ages_the_waiting_rows,
            receipts_outlive_the_match,
            deadlines_by_generation,
            claimants_get_disjoint_deadlines,
            concurrent_claimants_share_without_overlap,
            expired_and_released_claims_are_claimable_again,
            fired_and_cancelled_deadlines_are_never_claimed,
            finished_matches_cancel_their_deadlines,
            ownership_fences_commits,
            owned_stores_claim_unowned_matches,
            an_ownership_fenced_commit_does_not_fail_the_others,
            a_pinned_match_keeps_its_package_pin,
            replace_snapshot_is_a_compare_and_set_at_one_revision,
            queue_receipts_keep_their_sequences,
            matches_list_by_principal_game_and_status_a_page_at_a_time,
            the_feed_holds_each_lifecycle_event_once_in_commit_order,
            a_webhook_endpoint_has_one_holder_and_its_cursor_moves_only_through_it,
            concurrent_webhook_claimants_never_share_an_endpoint,
            webhook_endpoints_are_written_once_changed_by_version_and_removed_without_their_cursor,
        );
    };
    (@tests $backend:ty; $($test:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $test() {
                let mut backend = <$backend as $crate::suite::Backend>::start(stringify!($test)).await;
                $crate::suite::$test(&mut backend).await;
                $crate::suite::Backend::finish(backend).await;
            }
        )*
    };
}

/// Adds the tests only a durable backend passes.
#[macro_export]
macro_rules! durable_store_suite {
    ($backend:ty) => {
        $crate::store_suite!(@tests $backend;
            reopen_keeps_everything,
            reopen_keeps_ownership,
            reopen_keeps_trace_contexts,
            reopen_keeps_webhook_cursors,
            reopen_keeps_webhook_endpoints,
        );
    };
}

fn match_id(n: u128) -> Uuid {
    Uuid::from_u128(0x5702_e000_0000 + n)
}

async fn commit_ok(store: &dyn Store, commit: &Commit) {
    store.commit(commit).await.unwrap_or_else(|e| panic!("commit at {:?}: {e}", commit.expected_revision));
}

#[track_caller]
fn assert_conflict(result: Result<(), StoreError>, match_id: Uuid) {
    match result {
        Err(StoreError::Conflict { match_id: m, .. }) => assert_eq!(m, match_id),
        other => panic!("expected a conflict, got {other:?}"),
    }
}

/// `Store::list_matches` (the platform's `GET /v1/matches`): newest first, filtered by
/// principal, game and status, a page at a time with a cursor that resumes exactly after the
/// page's last match; seats with their controllers and statuses.
pub async fn matches_list_by_principal_game_and_status_a_page_at_a_time<B: Backend>(b: &mut B) {
    use juegoland_api::{Controller, Cursor, ListedStatus, MatchQuery};
    let store = b.store();
    let human = |p: &str| SeatHolder::Principal(p.to_owned());
    let mut ids = Vec::new();
    for n in 0..5 {
        let id = match_id(80 + n);
        let seats = match n {
            0..3 => [("p0", human("alice")), ("p1", human("bob"))],
            3 => [("p0", human("carol")), ("p1", SeatHolder::Bot("default".into()))],
            _ => [("p0", human("carol")), ("p1", SeatHolder::Agent("default".into()))],
        };
        let seats = seats.into_iter().map(|(s, h)| (s.to_owned(), h)).collect();
        let (mut game, create) = Game::create_seated(engine(), id, seats);
        commit_ok(&*store, &create).await;
        if n == 1 {
            while !game.live().state().is_finished() {
                commit_ok(&*store, &game.drop_ending()).await;
            }
        }
        if n == 2 {
            commit_ok(&*store, &game.cancel()).await;
        }
        ids.push(id);
        // Distinct creation times on every backend (SQLite keeps milliseconds).
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let list = |query: MatchQuery| {
        let store = store.clone();
        async move {
            let found = store.list_matches(&query).await.expect("list matches");
            assert!(found.len() <= query.limit as usize);
            found
        }
    };
    let q = |principal: Option<&str>, game: Option<&str>, status: Option<ListedStatus>| MatchQuery {
        principal: principal.map(Into::into),
        game: game.map(Into::into),
        status,
        after: None,
        limit: 10,
    };
    let found_ids = |found: &[juegoland_api::MatchListing]| found.iter().map(|m| m.match_id).collect::<Vec<_>>();
    let newest_first = |ns: &[usize]| ns.iter().map(|&n| ids[n]).collect::<Vec<_>>();
    assert_eq!(found_ids(&list(q(None, None, None)).await), newest_first(&[4, 3, 2, 1, 0]));
    assert_eq!(found_ids(&list(q(Some("alice"), None, None)).await), newest_first(&[2, 1, 0]));
    assert_eq!(found_ids(&list(q(Some("carol"), None, None)).await), newest_first(&[4, 3]));
    assert_eq!(
        found_ids(&list(q(Some("default"), None, None)).await),
        Vec::<Uuid>::new(),
        "a bot profile is no principal"
    );
    assert_eq!(found_ids(&list(q(None, Some("conecta4"), None)).await).len(), 5);
    assert_eq!(found_ids(&list(q(None, Some("hundido"), None)).await), Vec::<Uuid>::new());
    assert_eq!(found_ids(&list(q(None, None, Some(ListedStatus::Finished))).await), newest_first(&[1]));
    // A cancelled match lists as cancelled, as its summary tells it (issue 41).
    let cancelled = list(q(None, None, Some(ListedStatus::Cancelled))).await;
    assert_eq!(found_ids(&cancelled), newest_first(&[2]));
    assert_eq!(cancelled[0].status, ListedStatus::Cancelled);
    let active_alice = q(Some("alice"), Some("conecta4"), Some(ListedStatus::Active));
    assert_eq!(found_ids(&list(active_alice).await), newest_first(&[0]));

    // Pages of two: every match once, in order, and the cursor survives its text form.
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = list(MatchQuery { after: after.clone(), limit: 2, ..MatchQuery::default() }).await;
        seen.extend(found_ids(&page));
        if page.len() < 2 {
            break;
        }
        let last = page.last().unwrap();
        let cursor = Cursor { created_at: last.created_at.clone(), match_id: last.match_id }.to_string();
        after = Some(Cursor::parse(&cursor).expect("a cursor parses back"));
    }
    assert_eq!(seen, newest_first(&[4, 3, 2, 1, 0]));

    let carol = list(q(Some("carol"), None, None)).await;
    let listed = &carol[0];
    assert_eq!((listed.game.id.as_str(), listed.game.rules_version.as_str()), ("conecta4", "1.0.0"));
    assert_eq!(listed.status, ListedStatus::Active);
    let seats = |listed: &juegoland_api::MatchListing| -> Vec<_> {
        listed.seats.iter().map(|s| (s.seat.clone(), s.controller.clone())).collect()
    };
    let carol_at = |p1: Controller| {
        vec![("p0".to_owned(), Controller::Human { principal: "carol".into() }), ("p1".to_owned(), p1)]
    };
    // The newest is played by an agent (its row tells it apart from a bot's), the other by a bot.
    assert_eq!(seats(listed), carol_at(Controller::Agent { profile: "default".into() }));
    assert_eq!(seats(&carol[1]), carol_at(Controller::Bot { profile: "default".into() }));
    assert!(listed.created_at.ends_with('Z') && listed.created_at.len() >= 24, "{}", listed.created_at);
    // The time on the wire is the same instant in ms, as the summary's `createdMs`.
    assert_eq!(Some(listed.created_ms), juegoland_api::iso_ms(&listed.created_at));
    assert!(listed.created_ms > 0);
}

/// The platform feed (`Store::feed`): a creation and an ending each write one event in the
/// commit that made them, moves write none, a commit that lost its fence writes none, and a
/// reader resumes exactly after the cursor it was given.
pub async fn the_feed_holds_each_lifecycle_event_once_in_commit_order<B: Backend>(b: &mut B) {
    use juegoland_api::FeedCursor;
    let store = b.store();
    let (first, second) = (match_id(90), match_id(91));
    let (mut game, create) = Game::create(first);
    commit_ok(&*store, &create).await;
    assert_conflict(store.commit(&create).await, first);
    let (_, create_second) = Game::create(second);
    commit_ok(&*store, &create_second).await;
    while !game.live().state().is_finished() {
        commit_ok(&*store, &game.drop_ending()).await;
    }
    let ended_at = game.revision();
    // PostgreSQL shows an event once every transaction older than its own has ended (other
    // tests' transactions on the same server hold it back a moment).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let all = loop {
        let all = store.feed(FeedCursor::default(), 100).await.expect("read the feed");
        if all.len() >= 3 || std::time::Instant::now() > deadline {
            break all;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let seen: Vec<(String, &str)> = all.iter().map(|e| (e.id.clone(), e.kind.as_str())).collect();
    assert_eq!(
        seen,
        [
            (format!("{first}/0"), "created"),
            (format!("{second}/0"), "created"),
            (format!("{first}/{ended_at}"), "finished"),
        ],
        "one event per lifecycle commit, in commit order; none for the moves or the refused creation"
    );
    let finished = &all[2].summary;
    assert_eq!((finished.revision, finished.result.is_some()), (ended_at, true));
    assert_eq!(all[0].summary.seats.len(), 2);
    // Resuming after each cursor gives exactly the rest.
    for (i, event) in all.iter().enumerate() {
        let cursor = FeedCursor::parse(&event.cursor).expect("a cursor parses back");
        let rest = store.feed(cursor, 100).await.unwrap();
        assert_eq!(rest, all[i + 1..], "after event {i}");
    }
    let first_two = store.feed(FeedCursor::default(), 2).await.unwrap();
    assert_eq!(first_two, all[..2]);
}

/// Webhook cursors (`Store::claim_webhook` and friends): one live holder per endpoint, renewed
/// by itself at the same epoch; the cursor moves only from where its holder read it, and only
/// while that holder still has the endpoint at its epoch (lapsed is fine while nobody took
/// it); a release or a lapse lets another claimant in at a new epoch, after which the old
/// holder moves and releases nothing.
pub async fn a_webhook_endpoint_has_one_holder_and_its_cursor_moves_only_through_it<B: Backend>(b: &mut B) {
    use juegoland_api::FeedCursor;
    let store = b.store();
    let at = |txid, seq| FeedCursor { txid, seq };
    assert_eq!(store.webhook_cursor("ratings").await.unwrap(), None, "no row before the first claim");
    let a = store.claim_webhook("ratings", "replica-a", LONG).await.unwrap().expect("a free endpoint is granted");
    assert_eq!((a.epoch, a.cursor, a.endpoint.as_str()), (1, FeedCursor::default(), "ratings"));
    assert_eq!(store.claim_webhook("ratings", "replica-b", LONG).await.unwrap(), None, "held by replica-a");
    let renewed = store.claim_webhook("ratings", "replica-a", LONG).await.unwrap().expect("the holder renews");
    assert_eq!(renewed, a, "a renewal keeps the epoch and the cursor");
    let other = store.claim_webhook("history", "replica-b", LONG).await.unwrap().expect("another endpoint is free");
    assert_eq!(other.epoch, 1);

    assert!(store.advance_webhook(&a, at(7, 3)).await.unwrap());
    assert!(!store.advance_webhook(&a, at(9, 1)).await.unwrap(), "not from where the cursor is now");
    let a = store.claim_webhook("ratings", "replica-a", LONG).await.unwrap().unwrap();
    assert_eq!((a.epoch, a.cursor), (1, at(7, 3)));
    assert!(store.advance_webhook(&a, at(7, 5)).await.unwrap());
    let a = WebhookClaim { cursor: at(7, 5), ..a };
    let row = store.webhook_cursor("ratings").await.unwrap().unwrap();
    assert_eq!((row.cursor, row.claimed_by.as_deref(), row.epoch), (at(7, 5), Some("replica-a"), 1));
    assert_eq!(store.webhook_cursor("history").await.unwrap().unwrap().cursor, FeedCursor::default());

    // Released: free at once; replica-b takes it at a new epoch, and replica-a's claim is void.
    store.release_webhook(&a).await.unwrap();
    assert_eq!(store.webhook_cursor("ratings").await.unwrap().unwrap().claimed_by, None);
    let short = Duration::from_millis(300);
    let b2 = store.claim_webhook("ratings", "replica-b", short).await.unwrap().expect("released");
    assert_eq!((b2.epoch, b2.cursor), (2, at(7, 5)), "the new holder resumes where the cursor is");
    assert!(!store.advance_webhook(&a, at(8, 1)).await.unwrap(), "the old holder lost it");
    store.release_webhook(&a).await.unwrap();
    assert_eq!(store.webhook_cursor("ratings").await.unwrap().unwrap().claimed_by.as_deref(), Some("replica-b"));

    // A lapsed claim still moves the cursor while nobody took the endpoint…
    tokio::time::sleep(short + Duration::from_millis(300)).await;
    assert_eq!(store.webhook_cursor("ratings").await.unwrap().unwrap().claimed_by, None, "lapsed");
    assert!(store.advance_webhook(&b2, at(8, 2)).await.unwrap());
    let b2 = WebhookClaim { cursor: at(8, 2), ..b2 };
    // …and not once another claimant has.
    let a = store.claim_webhook("ratings", "replica-a", LONG).await.unwrap().expect("lapsed");
    assert_eq!((a.epoch, a.cursor), (3, at(8, 2)));
    assert!(!store.advance_webhook(&b2, at(8, 3)).await.unwrap());
    assert_eq!(store.claim_webhook("ratings", "replica-b", LONG).await.unwrap(), None);
    assert_eq!(store.webhook_cursor("ratings").await.unwrap().unwrap().cursor, at(8, 2));
}

fn endpoint(id: &str, version: u64) -> WebhookEndpoint {
    WebhookEndpoint {
        id: id.to_owned(),
        url: format!("https://hooks.example/{id}"),
        kinds: Some(vec!["finished".into(), "cancelled".into()]),
        secret: b"whsec_first".to_vec(),
        previous_secret: None,
        previous_until_ms: None,
        origin: WebhookOrigin::Api,
        version,
        created_ms: 1_000,
        updated_ms: 1_000 * version as i64,
    }
}

/// Webhook endpoints (`WebhookEndpoints`): an id is written once; a change passes only at
/// the version it read; a start cursor takes the endpoint from its holder; a removal leaves
/// the cursor, which the same id resumes from; the feed's end is past every event written.
pub async fn webhook_endpoints_are_written_once_changed_by_version_and_removed_without_their_cursor<B: Backend>(
    b: &mut B,
) {
    use juegoland_api::FeedCursor;
    let store = b.store();
    let at = |txid, seq| FeedCursor { txid, seq };
    assert!(store.webhook_endpoints().await.unwrap().is_empty());
    let ratings = endpoint("ratings", 1);
    assert!(store.create_webhook(&ratings, None).await.unwrap());
    assert!(!store.create_webhook(&endpoint("ratings", 1), Some(at(0, 9))).await.unwrap(), "the id is taken");
    assert_eq!(store.webhook_cursor("ratings").await.unwrap(), None, "a refused creation moved nothing");
    assert!(store.create_webhook(&endpoint("history", 1), None).await.unwrap());
    let listed: Vec<String> = store.webhook_endpoints().await.unwrap().into_iter().map(|e| e.id).collect();
    assert_eq!(listed, ["history", "ratings"]);
    assert_eq!(store.webhook_endpoint("ratings").await.unwrap(), Some(ratings.clone()));

    // Changes by version: the second writer at the same version loses.
    let rotated = WebhookEndpoint {
        secret: b"whsec_second".to_vec(),
        previous_secret: Some(ratings.secret.clone()),
        previous_until_ms: Some(9_000),
        kinds: None,
        ..endpoint("ratings", 2)
    };
    assert!(store.update_webhook(&rotated, 1).await.unwrap());
    assert!(!store.update_webhook(&endpoint("ratings", 2), 1).await.unwrap(), "a stale version");
    assert_eq!(store.webhook_endpoint("ratings").await.unwrap(), Some(rotated.clone()));
    assert_eq!(rotated.signing_secrets(8_999), [&b"whsec_second"[..], &b"whsec_first"[..]]);
    assert_eq!(rotated.signing_secrets(9_000), [&b"whsec_second"[..]]);

    // Moving the cursor takes the endpoint from its holder.
    let held = store.claim_webhook("ratings", "replica-a", LONG).await.unwrap().unwrap();
    assert!(store.move_webhook_cursor("ratings", at(0, 42)).await.unwrap());
    assert!(!store.advance_webhook(&held, at(0, 50)).await.unwrap(), "the holder's advance is void");
    let again = store.claim_webhook("ratings", "replica-a", LONG).await.unwrap().unwrap();
    assert_eq!((again.cursor, again.epoch > held.epoch), (at(0, 42), true));
    assert!(!store.move_webhook_cursor("nobody", at(0, 1)).await.unwrap(), "no such endpoint");
    assert_eq!(store.webhook_cursor("nobody").await.unwrap(), None);

    // Removed: the row goes, the cursor stays for the same id written again without a start…
    assert!(store.remove_webhook("ratings").await.unwrap());
    assert!(!store.remove_webhook("ratings").await.unwrap());
    assert!(!store.update_webhook(&endpoint("ratings", 3), 2).await.unwrap(), "gone");
    assert!(store.create_webhook(&endpoint("ratings", 1), None).await.unwrap());
    assert_eq!(store.webhook_cursor("ratings").await.unwrap().unwrap().cursor, at(0, 42));
    // …and a start puts it elsewhere.
    assert!(store.remove_webhook("ratings").await.unwrap());
    assert!(store.create_webhook(&endpoint("ratings", 1), Some(at(0, 7))).await.unwrap());
    assert_eq!(store.webhook_cursor("ratings").await.unwrap().unwrap().cursor, at(0, 7));

    // The feed's end: nothing after it once the events are written; before them, they are.
    let before = store.feed_end().await.unwrap();
    let (_, create) = Game::create(match_id(95));
    commit_ok(&*store, &create).await;
    assert_eq!(store.feed(before, 10).await.unwrap().len(), 1, "written after the end read before");
    let end = store.feed_end().await.unwrap();
    assert!(store.feed(end, 10).await.unwrap().is_empty(), "{end}");
}

/// Claimants racing for the same fresh endpoints: each endpoint goes to exactly one of them.
pub async fn concurrent_webhook_claimants_never_share_an_endpoint<B: Backend>(b: &mut B) {
    let store = b.store();
    for round in 0..5 {
        let endpoint = format!("race-{round}");
        let claims = (0..6).map(|k| {
            let (store, endpoint) = (Arc::clone(&store), endpoint.clone());
            tokio::spawn(async move { store.claim_webhook(&endpoint, &format!("replica-{k}"), LONG).await.unwrap() })
        });
        let granted: Vec<_> = join_all(claims).await.into_iter().flatten().collect();
        assert_eq!(granted.len(), 1, "{endpoint}: {granted:?}");
        let holder = store.webhook_cursor(&endpoint).await.unwrap().unwrap().claimed_by;
        assert_eq!(holder.as_deref(), Some(granted[0].claimant.as_str()));
    }
}

/// Awaits every task, in order.
async fn join_all<T>(tasks: impl Iterator<Item = tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::new();
    for task in tasks.collect::<Vec<_>>() {
        out.push(task.await.expect("a claimant task"));
    }
    out
}

/// A match created and played `moves` drops (columns 0, 1, 2, …), all stored.
async fn played(store: &dyn Store, id: Uuid, moves: u8) -> (Game, Vec<Commit>) {
    let (mut game, create) = Game::create(id);
    commit_ok(store, &create).await;
    let mut commits = vec![create];
    for column in 0..moves {
        let c = game.drop_disc(column % 7);
        commit_ok(store, &c).await;
        commits.push(c);
    }
    (game, commits)
}

pub async fn round_trip<B: Backend>(b: &mut B) {
    let store = b.store();
    let id = match_id(1);
    assert_eq!(store.load(id).await.unwrap(), None);
    let (game, commits) = played(&*store, id, 2).await;
    assert_eq!(current(&*store, id).await.as_ref(), Some(game.live().state()));
    assert_eq!(store.match_ids().await.unwrap(), vec![id]);
    for c in &commits[1..] {
        let r = c.receipt.as_ref().expect("a command receipt");
        assert_eq!(store.receipt(&r.key).await.unwrap().as_ref(), Some(r));
    }
    let logged: Vec<_> = commits.iter().map(|c| c.log.clone().expect("a log entry")).collect();
    assert_eq!(store.log(id).await.unwrap(), logged);
    assert_eq!(store.log(match_id(99)).await.unwrap(), vec![]);
}

/// A match created with a package registry keeps its pin (the lock digest, next to the rules
/// digest) through its commits; the store finds it by that digest; and it loads only where
/// the registry still publishes that exact lock. An unpinned match is found by none.
pub async fn a_pinned_match_keeps_its_package_pin<B: Backend>(b: &mut B) {
    let store = b.store();
    let (lock, other) = ("a".repeat(64), "b".repeat(64));
    let id = match_id(70);
    let (mut game, create) = Game::create_on(engine_publishing(Some(&lock)), id);
    let pin = create.state.as_ref().and_then(|s| s.package.clone()).expect("creation pins the published package");
    assert_eq!((pin.id.as_str(), pin.version.as_str(), pin.lock_digest.as_str()), ("conecta4", "1.0.0", &*lock));
    commit_ok(&*store, &create).await;
    // Past a snapshot point, so the pin is read back from a snapshot written after creation.
    for _ in 0..SNAPSHOT_EVERY + 2 {
        commit_ok(&*store, &game.drop_without_ending()).await;
    }
    let unpinned = match_id(71);
    played(&*store, unpinned, 1).await;
    assert_eq!(store.pinned_to(&lock).await.unwrap(), vec![id]);
    assert_eq!(store.pinned_to(&other).await.unwrap(), Vec::<Uuid>::new());
    assert_eq!(store.pinned_to("").await.unwrap(), Vec::<Uuid>::new(), "no match is pinned to nothing");

    let stored = store.load(id).await.unwrap().expect("the match");
    assert_eq!(stored.snapshot.package.as_ref(), Some(&pin), "the stored snapshot keeps the pin");
    let restored = engine_publishing(Some(&lock)).restore(stored.clone()).expect("the pinned publication is there");
    assert_eq!(restored.state(), game.live().state());
    let refused = |engine: juegoland_core::Engine| match engine.restore(stored.clone()) {
        Ok(_) => panic!("a pinned match loaded without its publication"),
        Err(fault) => fault.0,
    };
    let changed = refused(engine_publishing(Some(&other)));
    assert!(changed.contains(&format!("lock digest {lock}")) && changed.contains(&other), "{changed}");
    let missing = refused(engine_publishing(None));
    assert!(missing.contains("conecta4@1.0.0, which is not published"), "{missing}");
    let no_registry = refused(engine());
    assert!(no_registry.contains("this engine has no package registry"), "{no_registry}");
    // An unpinned match loads with or without a registry.
    let old = store.load(unpinned).await.unwrap().expect("the unpinned match");
    assert_eq!(old.snapshot.package, None);
    engine_publishing(None).restore(old).expect("an unpinned match loads anywhere");
}

/// The state-migration admin operation's write: the snapshot replaced at the match's
/// revision, pinned rules and package included, only while the stored match is the expected
/// one (its revision, no revision after it, its rules version).
pub async fn replace_snapshot_is_a_compare_and_set_at_one_revision<B: Backend>(b: &mut B) {
    let store = b.store();
    let id = match_id(80);
    let (mut game, _) = played(&*store, id, 2).await;
    let state = game.live().state().clone();
    // Revisions 1 and 2 follow the stored snapshot (revision 0): a replacement is refused
    // until the current state is the snapshot.
    let mut migrated = state.clone();
    migrated.game.rules_version = "1.1.0".into();
    migrated.game_version = "1.1.0".into();
    migrated.rules_digest = "f".repeat(64);
    migrated.package = Some(juegoland_core::PackagePin {
        id: "conecta4".into(),
        version: "1.1.0".into(),
        lock_digest: "9".repeat(64),
    });
    let written_as_snapshot = store.snapshot(&state).await.unwrap();
    let stored = store.load(id).await.unwrap().expect("the match");
    assert_eq!((stored.snapshot.revision, stored.tail.len()), (2, 0), "wrote: {written_as_snapshot}");
    store.replace_snapshot(&state, &migrated).await.expect("the stored match is the expected one");
    let stored = store.load(id).await.unwrap().expect("the match");
    assert_eq!((&stored.snapshot, stored.tail.len()), (&migrated, 0));
    assert_eq!(store.pinned_to(&"9".repeat(64)).await.unwrap(), vec![id]);
    // A second replacement from the old state conflicts (its rules version is gone), and so
    // does one at another revision.
    assert_conflict(store.replace_snapshot(&state, &migrated).await, id);
    let mut later = migrated.clone();
    later.revision += 1;
    assert_conflict(store.replace_snapshot(&later, &later).await, id);
    // Back: the restore is the same operation the other way.
    store.replace_snapshot(&migrated, &state).await.expect("restore");
    assert_eq!(store.load(id).await.unwrap().expect("the match").snapshot, state);
    assert_eq!(store.pinned_to(&"9".repeat(64)).await.unwrap(), Vec::<Uuid>::new());
    // A match that moved on since refuses the replacement.
    commit_ok(&*store, &game.drop_disc(5)).await;
    assert_conflict(store.replace_snapshot(&state, &migrated).await, id);
}

pub async fn a_long_match_restores_from_its_snapshot_and_the_revisions_after_it<B: Backend>(b: &mut B) {
    let store = b.store();
    let id = match_id(50);
    let (mut game, create) = Game::create(id);
    commit_ok(&*store, &create).await;
    while game.revision() < SNAPSHOT_EVERY + 3 {
        commit_ok(&*store, &game.drop_without_ending()).await;
    }
    let stored = store.load(id).await.unwrap().expect("the match");
    assert_eq!(stored.revision(), game.revision());
    assert!(stored.snapshot.revision >= SNAPSHOT_EVERY, "the state is written at least at its snapshot points");
    let log = store.log(id).await.unwrap();
    assert_eq!(log[stored.snapshot.revision as usize + 1..], stored.tail[..], "the tail is the log after the snapshot");
    assert_eq!(current(&*store, id).await.as_ref(), Some(game.live().state()));
    // The revision that ends the match is a snapshot: nothing is left to recover.
    while !game.live().state().is_finished() {
        commit_ok(&*store, &game.drop_ending()).await;
    }
    let stored = store.load(id).await.unwrap().expect("the match");
    assert!(stored.tail.is_empty() && stored.is_finished(), "a finished match is its last snapshot");
    assert_eq!(&stored.snapshot, game.live().state());
}

/// `Store::snapshot` (a match passivating between snapshot points): the newest state becomes
/// the snapshot, with nothing to redo; an older state, another node's match, or a state no
/// store holds changes nothing.
pub async fn a_passivating_match_leaves_its_newest_state_as_the_snapshot<B: Backend>(b: &mut B) {
    let (store, a, other) = (b.store(), b.owned("node-a"), b.owned("node-b"));
    let id = match_id(51);
    let (mut game, create) = Game::create(id);
    commit_ok(&*a, &create).await;
    for _ in 0..3 {
        commit_ok(&*a, &game.drop_without_ending()).await;
    }
    let older = game.live().state().clone();
    commit_ok(&*a, &game.drop_without_ending()).await;
    let newest = game.live().state().clone();
    assert!(!newest.is_snapshot_point(), "revision {} is between snapshot points", newest.revision);
    let before = store.load(id).await.unwrap().expect("the match");

    // Not the newest revision, not the owner's store, or a revision never committed.
    assert!(!a.snapshot(&older).await.unwrap(), "an older state");
    assert!(!other.snapshot(&newest).await.unwrap(), "another node's match");
    let mut ahead = newest.clone();
    ahead.revision += 1;
    assert!(!a.snapshot(&ahead).await.unwrap(), "a revision no commit wrote");
    assert_eq!(store.load(id).await.unwrap().as_ref(), Some(&before), "nothing changed");

    // The owner's newest state. A backend that keeps every state (memory) has it already.
    let written = a.snapshot(&newest).await.unwrap();
    let stored = store.load(id).await.unwrap().expect("the match");
    assert_eq!((&stored.snapshot, stored.tail.len()), (&newest, 0), "the snapshot is the newest state");
    assert_eq!(written, !before.tail.is_empty(), "written where the snapshot was behind");
    assert!(!a.snapshot(&newest).await.unwrap(), "written once");
    assert_eq!(current(&*store, id).await.as_ref(), Some(&newest));
    // Play goes on from it, and the log is whole.
    commit_ok(&*a, &game.drop_without_ending()).await;
    let stored = store.load(id).await.unwrap().expect("the match");
    assert_eq!(stored.revision(), newest.revision + 1);
    assert_eq!(current(&*store, id).await.as_ref(), Some(game.live().state()));
    assert_eq!(store.log(id).await.unwrap().len() as u64, game.revision() + 1);
}

pub async fn stale_revision_conflicts<B: Backend>(b: &mut B) {
    let store = b.store();
    let id = match_id(2);
    let (mut game, _) = played(&*store, id, 1).await;
    // Two decisions judged against the same revision: the second writer is stale.
    let first = game.decide_drop(3);
    let second = game.decide_drop(4);
    commit_ok(&*store, &first.commit).await;
    assert_conflict(store.commit(&second.commit).await, id);
    let key = &second.commit.receipt.as_ref().unwrap().key;
    assert_eq!(store.receipt(key).await.unwrap(), None, "a fenced commit stores no receipt");
    let after_first = game.advance(first);
    assert_eq!(current(&*store, id).await.as_ref(), after_first.state.as_deref());
    // A writer that is BEHIND by more than one revision is fenced too.
    let late = game.decide_drop(5);
    let skipped = game.drop_disc(6);
    commit_ok(&*store, &skipped).await;
    let even_later = game.drop_disc(0);
    commit_ok(&*store, &even_later).await;
    assert_conflict(store.commit(&late.commit).await, id);
}

pub async fn stale_rejection_conflicts<B: Backend>(b: &mut B) {
    let store = b.store();
    let id = match_id(3);
    let (mut game, _) = played(&*store, id, 0).await;
    // A final rejection judged at revision 0 (bob is not to move) …
    let bob_id = game.fresh_command_id();
    let rejection = game.decide("bob", bob_id, 0, 1);
    assert!(rejection.commit.state.is_none(), "a rejection changes no state");
    assert!(matches!(
        rejection.commit.receipt.as_ref().unwrap().outcome,
        ReceiptOutcome::Rejected { code: RejectionCode::ActorNotEnabled, revision: 0, sequence: None }
    ));
    // … is stale once another writer moved the match: it must be judged again.
    let accepted = game.drop_disc(0);
    commit_ok(&*store, &accepted).await;
    assert_conflict(store.commit(&rejection.commit).await, id);
    assert_eq!(store.receipt(&rejection.commit.receipt.as_ref().unwrap().key).await.unwrap(), None);
    assert_eq!(store.load(id).await.unwrap().unwrap().revision(), 1);
}

pub async fn rejection_keeps_the_revision<B: Backend>(b: &mut B) {
    let store = b.store();
    let id = match_id(4);
    let (mut game, commits) = played(&*store, id, 1).await;
    let principal = if game.to_move() == "alice" { "bob" } else { "alice" };
    let cmd = game.fresh_command_id();
    let rejection = game.decide(principal, cmd, 1, 2);
    commit_ok(&*store, &rejection.commit).await;
    let receipt = rejection.commit.receipt.clone().unwrap();
    assert_eq!(store.receipt(&receipt.key).await.unwrap(), Some(receipt));
    let stored = store.load(id).await.unwrap().unwrap();
    assert_eq!(stored.revision(), 1, "a rejection never changes the revision");
    assert_eq!(store.log(id).await.unwrap().len(), commits.len(), "a rejection logs nothing");
    // The match moves on at the same revision.
    commit_ok(&*store, &game.drop_disc(2)).await;
    assert_eq!(store.load(id).await.unwrap().unwrap().revision(), 2);
}

pub async fn duplicate_receipt_conflicts<B: Backend>(b: &mut B) {
    let store = b.store();
    let id = match_id(5);
    let (mut game, _) = played(&*store, id, 0).await;
    let alice_cmd = game.fresh_command_id();
    let first = game.decide("alice", alice_cmd, 0, 3);
    commit_ok(&*store, &first.commit).await;
    let first = game.advance(first);
    // A writer that missed the stored receipt judges the same command again (now stale);
    // its revision fence passes but the receipt key is taken.
    let again = game.decide("alice", alice_cmd, 0, 3);
    assert_eq!(again.commit.expected_revision, Some(1));
    assert_conflict(store.commit(&again.commit).await, id);
    let key = &first.receipt.as_ref().unwrap().key;
    assert_eq!(store.receipt(key).await.unwrap().as_ref(), first.receipt.as_ref(), "the original receipt stays");
}

pub async fn creation_twice_conflicts<B: Backend>(b: &mut B) {
    let store = b.store();
    let id = match_id(6);
    let (game, create) = Game::create(id);
    commit_ok(&*store, &create).await;
    assert_conflict(store.commit(&create).await, id);
    let (_, other) = Game::create(id);
    assert_conflict(store.commit(&other).await, id);
    assert_eq!(current(&*store, id).await.as_ref(), Some(game.live().state()));
    assert_eq!(store.log(id).await.unwrap().len(), 1);
    assert_eq!(store.match_ids().await.unwrap(), vec![id]);
    // Creation is fenced by revision too: a match that exists is not at "no revision".
    let mut at_none = game_commit_at(&*store, id).await;
    at_none.expected_revision = None;
    assert_conflict(store.commit(&at_none).await, id);
}

/// An accepted drop for the stored match `id`, as its actor would decide it.
async fn game_commit_at(store: &dyn Store, id: Uuid) -> Commit {
    let (mut game, _) = Game::create(id);
    assert_eq!(store.load(id).await.unwrap().unwrap().revision(), 0);
    game.decide_drop(0).commit
}

pub async fn commit_without_fence_conflicts<B: Backend>(b: &mut B) {
    let store = b.store();
    let id = match_id(7);
    let (mut game, create) = Game::create(id);
    let mut rejection = game.decide("bob", Uuid::from_u128(1), 0, 0).commit;
    rejection.expected_revision = None;
    // Neither a state nor a revision: there is no match to fence against.
    assert_conflict(store.commit(&rejection).await, id);
    commit_ok(&*store, &create).await;
    assert_conflict(store.commit(&rejection).await, id);
    assert_eq!(store.receipt(&rejection.receipt.unwrap().key).await.unwrap(), None);
}

pub async fn failed_commit_leaves_nothing<B: Backend>(b: &mut B) {
    let store = b.store();
    let id = match_id(8);
    let (mut game, _) = played(&*store, id, 0).await;
    // Bob tries to move out of turn: a stored final rejection at revision 0.
    let bob_cmd = game.fresh_command_id();
    let rejected = game.decide("bob", bob_cmd, 0, 1);
    commit_ok(&*store, &rejected.commit).await;
    commit_ok(&*store, &game.drop_disc(0)).await;
    let before = (
        store.load(id).await.unwrap(),
        store.log(id).await.unwrap(),
        store.undispatched(1_000, Duration::ZERO).await.unwrap(),
        store.due_deadlines(i64::MAX, 100).await.unwrap(),
    );
    // Bob retries the same command id now that it is his turn, by a writer that missed the
    // stored receipt: the revision fence passes and the state update runs, then the receipt
    // collides. The WHOLE commit (state, log, deadlines, outbox) must be undone.
    let late = game.decide("bob", bob_cmd, 1, 1);
    let late = with_deadlines(&late.commit, &[("clock", 1, 5_000)]);
    assert!(late.state.is_some() && late.log.is_some() && !late.publications.is_empty());
    assert_conflict(store.commit(&late).await, id);
    let after = (
        store.load(id).await.unwrap(),
        store.log(id).await.unwrap(),
        store.undispatched(1_000, Duration::ZERO).await.unwrap(),
        store.due_deadlines(i64::MAX, 100).await.unwrap(),
    );
    assert_eq!(after, before, "a failed commit left something behind");
    assert_eq!(
        store.receipt(&rejected.commit.receipt.as_ref().unwrap().key).await.unwrap().as_ref(),
        rejected.commit.receipt.as_ref(),
        "the original receipt is untouched"
    );
}

pub async fn concurrent_commits_one_wins<B: Backend>(b: &mut B) {
    let store = b.store();
    let id = match_id(9);
    let (mut game, _) = played(&*store, id, 1).await;
    let decisions: Vec<_> = (0..7).map(|column| game.decide_drop(column).commit).collect();
    let tasks: Vec<_> = decisions
        .into_iter()
        .map(|c| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.commit(&c).await })
        })
        .collect();
    let mut won = 0;
    for t in tasks {
        match t.await.expect("commit task") {
            Ok(()) => won += 1,
            Err(StoreError::Conflict { .. }) => {}
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
    assert_eq!(won, 1, "exactly one writer wins a revision");
    assert_eq!(store.load(id).await.unwrap().unwrap().revision(), 2);
    assert_eq!(store.log(id).await.unwrap().len(), 3);
}

/// Commits `commits` (of different matches) at once, so a grouping store shares transactions
/// among them: the commit of `loser` must conflict, and every other match must reach revision
/// 2 with three log entries.
async fn commit_at_once_one_conflicts(store: &Arc<dyn Store>, commits: Vec<Commit>, loser: Uuid) {
    let tasks: Vec<_> = commits
        .into_iter()
        .map(|c| {
            let store = Arc::clone(store);
            tokio::spawn(async move { (c.match_id, store.commit(&c).await) })
        })
        .collect();
    for t in tasks {
        let (id, result) = t.await.expect("commit task");
        if id == loser {
            assert_conflict(result, id);
        } else {
            result.unwrap_or_else(|e| panic!("{id} failed with {loser}'s: {e}"));
            assert_eq!(store.load(id).await.unwrap().unwrap().revision(), 2);
            assert_eq!(store.log(id).await.unwrap().len(), 3);
        }
    }
}

/// Commits of many matches at once (PostgreSQL groups them into shared transactions): a
/// stale one among them is fenced alone; every other match commits.
pub async fn a_fenced_commit_does_not_fail_the_others<B: Backend>(b: &mut B) {
    let store = b.store();
    let mut games = Vec::new();
    for n in 0..24 {
        games.push(played(&*store, match_id(100 + n), 1).await.0);
    }
    // Match 0's next decision goes stale: another writer commits first.
    let stale = games[0].decide_drop(2).commit;
    let winner = games[0].drop_disc(3);
    commit_ok(&*store, &winner).await;
    let mut commits = vec![stale];
    commits.extend(games[1..].iter_mut().map(|g| g.drop_disc(4)));
    commit_at_once_one_conflicts(&store, commits, match_id(100)).await;
    assert_eq!(store.load(match_id(100)).await.unwrap().unwrap().revision(), 2, "the winner's revision stands");
}

/// Commits of many matches at once, one of which fails only after its revision fence passed
/// (its receipt key is taken): it is undone alone; every other match commits.
pub async fn a_receipt_collision_does_not_fail_the_others<B: Backend>(b: &mut B) {
    let store = b.store();
    let (mut late_game, _) = played(&*store, match_id(140), 0).await;
    let bob_cmd = late_game.fresh_command_id();
    let rejected = late_game.decide("bob", bob_cmd, 0, 1);
    commit_ok(&*store, &rejected.commit).await;
    commit_ok(&*store, &late_game.drop_disc(0)).await;
    let before = (store.load(match_id(140)).await.unwrap(), store.log(match_id(140)).await.unwrap());
    let mut games = Vec::new();
    for n in 1..24 {
        games.push(played(&*store, match_id(140 + n), 1).await.0);
    }
    let mut commits = vec![late_game.decide("bob", bob_cmd, 1, 1).commit];
    commits.extend(games.iter_mut().map(|g| g.drop_disc(4)));
    commit_at_once_one_conflicts(&store, commits, match_id(140)).await;
    let after = (store.load(match_id(140)).await.unwrap(), store.log(match_id(140)).await.unwrap());
    assert_eq!(after, before, "the colliding commit left something behind");
}

pub async fn log_in_revision_order<B: Backend>(b: &mut B) {
    let store = b.store();
    // Two interleaved matches: each log is its own, in revision order.
    let (mut a, _) = played(&*store, match_id(11), 0).await;
    let (mut z, _) = played(&*store, match_id(10), 0).await;
    for column in [3, 3, 4, 2, 5] {
        commit_ok(&*store, &a.drop_disc(column)).await;
        commit_ok(&*store, &z.drop_disc(6 - column)).await;
    }
    for (id, game) in [(match_id(11), &a), (match_id(10), &z)] {
        let log = store.log(id).await.unwrap();
        assert_eq!(log.iter().map(|e| e.revision).collect::<Vec<_>>(), (0..=game.revision()).collect::<Vec<_>>());
        assert!(matches!(log[0].op, LoggedOp::Create { .. }));
        assert!(log[1..].iter().all(|e| matches!(e.op, LoggedOp::Command { .. })));
        assert!(log.windows(2).all(|w| w[0].instant_ms <= w[1].instant_ms));
    }
    assert_eq!(store.match_ids().await.unwrap(), vec![match_id(10), match_id(11)], "match ids in id order");
}

pub async fn outbox_until_dispatched<B: Backend>(b: &mut B) {
    let store = b.store();
    let (id_a, id_b) = (match_id(21), match_id(20));
    let (mut game_a, mut a) = played(&*store, id_a, 1).await;
    // Revision 2 of `a` also publishes to authorized spectators (recipient `None`), after
    // the seats: the order of one revision's publications is kept.
    let mut with_spectators = game_a.drop_disc(2);
    let mut spectators = with_spectators.publications[0].clone();
    spectators.recipient = None;
    with_spectators.publications.push(spectators);
    commit_ok(&*store, &with_spectators).await;
    a.push(with_spectators);
    let (_, bb) = played(&*store, id_b, 1).await;
    let expected = |commits: &[Commit]| -> Vec<_> { commits.iter().flat_map(|c| c.publications.clone()).collect() };
    assert!(a[1..].iter().all(|c| !c.publications.is_empty()), "every accepted command publishes");
    // Ordered by match, then revision, then the order of publication.
    let mut all = expected(&bb);
    all.extend(expected(&a));
    let rows: Vec<_> =
        store.undispatched(1_000, Duration::ZERO).await.unwrap().into_iter().map(|r| r.publication).collect();
    assert_eq!(rows, all);
    assert_eq!(rows.last().unwrap().recipient, None);
    let limited = store.undispatched(3, Duration::ZERO).await.unwrap();
    assert_eq!(limited.into_iter().map(|r| r.publication).collect::<Vec<_>>(), all[..3]);
    // Rows younger than the asked age are passed over (a sweeper's grace for gathering marks).
    assert_eq!(store.undispatched(1_000, Duration::from_secs(3600)).await.unwrap(), vec![]);
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(store.undispatched(1_000, Duration::from_millis(20)).await.unwrap().len(), all.len());
    // Marking is per match and up to a revision.
    store.mark_dispatched(&[(id_a, 1)]).await.unwrap();
    let rows: Vec<_> =
        store.undispatched(1_000, Duration::ZERO).await.unwrap().into_iter().map(|r| r.publication).collect();
    let mut left = expected(&bb);
    left.extend(expected(&a[2..]));
    assert_eq!(rows, left);
    store.mark_dispatched(&[(id_a, 1)]).await.unwrap();
    store.mark_dispatched(&[(id_b, 5)]).await.unwrap();
    store.mark_dispatched(&[(id_a, 2)]).await.unwrap();
    assert_eq!(store.undispatched(1_000, Duration::ZERO).await.unwrap(), vec![]);
}

/// A W3C `traceparent` for the tests: the store keeps it as opaque text.
fn traceparent(n: u64) -> Arc<str> {
    format!("00-4bf92f3577b34da6a3ce929d{n:06x}-00f067aa0b{n:06x}-01").into()
}

/// `commit` with every publication carrying `trace_context`, as a node's actor sends it.
fn traced(mut commit: Commit, trace_context: Option<Arc<str>>) -> Commit {
    for p in &mut commit.publications {
        p.trace_context = trace_context.clone();
    }
    commit
}

/// Each outbox row keeps the trace context of its commit (or none), and the undispatched rows
/// the sweeper re-dispatches give it back exactly: a commit with a context and one without,
/// of two matches at once (on PostgreSQL they share a transaction), and a later one.
pub async fn outbox_rows_keep_their_trace_context<B: Backend>(b: &mut B) {
    let store = b.store();
    let (id_a, id_b) = (match_id(27), match_id(28));
    let (mut a, _) = played(&*store, id_a, 0).await;
    let (mut bg, _) = played(&*store, id_b, 0).await;
    store.mark_dispatched(&[(id_a, 0), (id_b, 0)]).await.unwrap();
    let a1 = traced(a.drop_disc(0), Some(traceparent(1)));
    let b1 = traced(bg.drop_disc(0), None);
    let (ra, rb) = tokio::join!(store.commit(&a1), store.commit(&b1));
    ra.expect("a's commit");
    rb.expect("b's commit");
    let a2 = traced(a.drop_disc(1), Some(traceparent(2)));
    commit_ok(&*store, &a2).await;
    assert!([&a1, &b1, &a2].iter().all(|c| !c.publications.is_empty()), "every move publishes");

    let contexts = |rows: &[juegoland_core::Publication]| -> Vec<(Uuid, u64, Option<String>)> {
        rows.iter().map(|p| (p.match_id, p.revision, p.trace_context.as_deref().map(str::to_owned))).collect()
    };
    let rows: Vec<_> =
        store.undispatched(1_000, Duration::ZERO).await.unwrap().into_iter().map(|r| r.publication).collect();
    let expected: Vec<_> = [&a1, &a2, &b1].iter().flat_map(|c| c.publications.clone()).collect();
    assert_eq!(rows, expected);
    let (tp1, tp2) = (Some(traceparent(1).to_string()), Some(traceparent(2).to_string()));
    assert!(contexts(&rows).iter().all(|(m, r, tp)| match (*m == id_a, r) {
        (true, 1) => *tp == tp1,
        (true, 2) => *tp == tp2,
        _ => tp.is_none(),
    }));
    // What is left after a dispatch mark is re-dispatched with its own context.
    store.mark_dispatched(&[(id_a, 1)]).await.unwrap();
    let rows: Vec<_> =
        store.undispatched(1_000, Duration::ZERO).await.unwrap().into_iter().map(|r| r.publication).collect();
    let expected: Vec<_> = [&a2, &b1].iter().flat_map(|c| c.publications.clone()).collect();
    assert_eq!(rows, expected);
    assert_eq!(contexts(&rows[..1]), vec![(id_a, 2, tp2)]);
}

/// The backlog counts the undispatched rows and ages the oldest on the store's clock;
/// dispatch marks shrink it, and an empty outbox has no age.
pub async fn outbox_backlog_counts_and_ages_the_waiting_rows<B: Backend>(b: &mut B) {
    let store = b.store();
    assert_eq!(store.outbox_backlog(Duration::ZERO).await.unwrap(), OutboxBacklog::default());
    let (id_a, id_b) = (match_id(25), match_id(26));
    let (_, a) = played(&*store, id_a, 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, bb) = played(&*store, id_b, 1).await;
    let rows = |commits: &[Commit]| commits.iter().map(|c| c.publications.len() as u64).sum::<u64>();
    assert!(rows(&a) > 0 && rows(&bb) > 0, "the moves publish");
    let backlog = store.outbox_backlog(Duration::ZERO).await.unwrap();
    assert_eq!(backlog.rows, rows(&a) + rows(&bb));
    let age = backlog.oldest_age.expect("rows wait, so the oldest has an age");
    assert!(age >= Duration::from_millis(250) && age < Duration::from_secs(60), "the oldest is a's: {age:?}");
    // Past an age: only a's rows, written before the pause.
    let settled = store.outbox_backlog(Duration::from_millis(250)).await.unwrap();
    assert_eq!(settled.rows, rows(&a), "only the rows older than the age");
    // With `a` dispatched, the oldest waiting row is b's, written after the pause.
    store.mark_dispatched(&[(id_a, 2)]).await.unwrap();
    let backlog = store.outbox_backlog(Duration::ZERO).await.unwrap();
    assert_eq!(backlog.rows, rows(&bb));
    let younger = backlog.oldest_age.expect("b's rows wait");
    assert!(younger < age, "b's rows are younger than a's ({younger:?} vs {age:?})");
    store.mark_dispatched(&[(id_b, 1)]).await.unwrap();
    assert_eq!(store.outbox_backlog(Duration::ZERO).await.unwrap(), OutboxBacklog::default());
}

pub async fn receipts_outlive_the_match<B: Backend>(b: &mut B) {
    let store = b.store();
    let id = match_id(30);
    let (mut game, _) = played(&*store, id, 0).await;
    // Alice stacks column 0 and wins on her fourth disc.
    let mut commits = vec![];
    for column in [0, 1, 0, 1, 0, 1, 0] {
        let c = game.drop_disc(column);
        commit_ok(&*store, &c).await;
        commits.push(c);
    }
    let stored = store.load(id).await.unwrap().unwrap();
    assert!(stored.is_finished(), "the match is over");
    // A command after the end is a final rejection, stored like any other.
    let cmd = game.fresh_command_id();
    let late = game.decide("bob", cmd, game.revision(), 2);
    assert!(matches!(
        late.commit.receipt.as_ref().unwrap().outcome,
        ReceiptOutcome::Rejected { code: RejectionCode::MatchFinished, .. }
    ));
    commit_ok(&*store, &late.commit).await;
    commits.push(late.commit);
    for c in &commits {
        let r = c.receipt.as_ref().unwrap();
        assert_eq!(store.receipt(&r.key).await.unwrap().as_ref(), Some(r), "receipts live as long as the match");
    }
    // All of a match's receipts at once (what an actor loads), and none of another match's.
    let (_, others) = played(&*store, match_id(31), 2).await;
    let sorted = |mut v: Vec<Receipt>| {
        v.sort_by(|a, b| a.key.cmp(&b.key));
        v
    };
    let want = sorted(commits.iter().map(|c| c.receipt.clone().unwrap()).collect());
    assert_eq!(sorted(store.receipts(id).await.unwrap()), want, "every receipt of the match, rejections too");
    let want = sorted(others.iter().filter_map(|c| c.receipt.clone()).collect());
    assert_eq!(sorted(store.receipts(match_id(31)).await.unwrap()), want);
    assert_eq!(store.receipts(match_id(32)).await.unwrap(), vec![], "an unknown match has none");
}

pub async fn deadlines_by_generation<B: Backend>(b: &mut B) {
    let store = b.store();
    let (id_a, id_b) = (match_id(40), match_id(41));
    let (mut a, _) = played(&*store, id_a, 0).await;
    let (mut bg, _) = played(&*store, id_b, 0).await;
    let due = |m, id: &str, generation, due_ms| DueDeadline { match_id: m, deadline_id: id.into(), generation, due_ms };

    commit_ok(&*store, &with_deadlines(&a.drop_disc(0), &[("turn", 1, 5_000), ("idle", 2, 9_000)])).await;
    commit_ok(&*store, &with_deadlines(&bg.drop_disc(0), &[("turn", 1, 4_000)])).await;
    assert_eq!(store.due_deadlines(3_999, 10).await.unwrap(), vec![]);
    assert_eq!(
        store.due_deadlines(9_000, 10).await.unwrap(),
        vec![due(id_b, "turn", 1, 4_000), due(id_a, "turn", 1, 5_000), due(id_a, "idle", 2, 9_000)],
        "earliest first"
    );
    assert_eq!(store.due_deadlines(9_000, 1).await.unwrap(), vec![due(id_b, "turn", 1, 4_000)]);

    // Rescheduling `turn` replaces its generation; `idle` is cancelled (no longer in the state).
    commit_ok(&*store, &with_deadlines(&a.drop_disc(1), &[("turn", 3, 6_000)])).await;
    assert_eq!(
        store.due_deadlines(i64::MAX, 10).await.unwrap(),
        vec![due(id_b, "turn", 1, 4_000), due(id_a, "turn", 3, 6_000)]
    );
    // A commit that keeps a deadline keeps it once.
    commit_ok(&*store, &with_deadlines(&a.drop_disc(2), &[("turn", 3, 6_000)])).await;
    assert_eq!(store.due_deadlines(i64::MAX, 10).await.unwrap().len(), 2);
    // A state without deadlines clears the match's pending ones.
    commit_ok(&*store, &bg.drop_disc(1)).await;
    assert_eq!(store.due_deadlines(i64::MAX, 10).await.unwrap(), vec![due(id_a, "turn", 3, 6_000)]);
}

fn due(m: Uuid, id: &str, generation: u64, due_ms: i64) -> DueDeadline {
    DueDeadline { match_id: m, deadline_id: id.into(), generation, due_ms }
}

/// A lease no test outlives.
const LONG: Duration = Duration::from_secs(600);

/// `n` matches (ids from `first`), each with one `turn` deadline at generation 1, due at
/// 1_000, 1_001, …
async fn due_matches(store: &dyn Store, first: u128, n: u128) -> Vec<DueDeadline> {
    let mut all = vec![];
    for k in 0..n {
        let id = match_id(first + k);
        let (mut game, _) = played(store, id, 0).await;
        let due_ms = 1_000 + k as i64;
        commit_ok(store, &with_deadlines(&game.drop_disc(0), &[("turn", 1, due_ms)])).await;
        all.push(due(id, "turn", 1, due_ms));
    }
    all
}

/// Two scheduler replicas over the same due deadlines: the first claims the earliest, the
/// second the rest, a third finds nothing while the claims are live; deadlines not yet due
/// are nobody's.
pub async fn claimants_get_disjoint_deadlines<B: Backend>(b: &mut B) {
    let store = b.store();
    let all = due_matches(&*store, 60, 5).await;
    let (mut later, _) = played(&*store, match_id(69), 0).await;
    commit_ok(&*store, &with_deadlines(&later.drop_disc(0), &[("turn", 1, 9_000)])).await;

    let a = store.claim_deadlines("replica-a", 5_000, LONG, 3).await.unwrap();
    assert_eq!(a, all[..3], "the earliest first");
    let b2 = store.claim_deadlines("replica-b", 5_000, LONG, 10).await.unwrap();
    assert_eq!(b2, all[3..], "the rest, and nothing that is not due");
    assert_eq!(store.claim_deadlines("replica-c", 5_000, LONG, 10).await.unwrap(), vec![]);
    // Claims change nothing else: the deadlines are still pending and due.
    assert_eq!(store.due_deadlines(5_000, 10).await.unwrap(), all);
    assert_eq!(store.pending_deadlines().await.unwrap(), 6);
    assert_eq!(store.next_deadline_due(5_000).await.unwrap(), Some(9_000));
    assert_eq!(store.next_deadline_due(9_000).await.unwrap(), None);
    assert_eq!(store.next_deadline_due(999).await.unwrap(), Some(1_000));
}

/// Claimants racing over the same due set, in batches, until it is empty: every deadline is
/// claimed by exactly one of them.
pub async fn concurrent_claimants_share_without_overlap<B: Backend>(b: &mut B) {
    let store = b.store();
    let all = due_matches(&*store, 70, 24).await;
    let claimant = |name: &'static str| {
        let store = Arc::clone(&store);
        async move {
            let mut mine = vec![];
            loop {
                let batch = store.claim_deadlines(name, 5_000, LONG, 3).await.unwrap();
                if batch.is_empty() {
                    return mine;
                }
                mine.extend(batch);
                tokio::task::yield_now().await;
            }
        }
    };
    let (a, b2, c) = tokio::join!(
        tokio::spawn(claimant("replica-a")),
        tokio::spawn(claimant("replica-b")),
        tokio::spawn(claimant("replica-c"))
    );
    let claimed: Vec<DueDeadline> = [a.unwrap(), b2.unwrap(), c.unwrap()].concat();
    let distinct: BTreeSet<_> = claimed.iter().map(|d| (d.match_id, d.generation)).collect();
    assert_eq!(distinct.len(), claimed.len(), "a deadline was claimed twice: {claimed:?}");
    assert_eq!(distinct.len(), all.len(), "every due deadline was claimed");
}

/// A claim that expired (its replica died) is claimable again by anyone; a released one at
/// once; a release by another replica changes nothing.
pub async fn expired_and_released_claims_are_claimable_again<B: Backend>(b: &mut B) {
    let store = b.store();
    let all = due_matches(&*store, 100, 3).await;
    let short = Duration::from_millis(300);
    assert_eq!(store.claim_deadlines("replica-a", 5_000, short, 2).await.unwrap(), all[..2]);
    assert_eq!(store.claim_deadlines("replica-b", 5_000, LONG, 10).await.unwrap(), all[2..]);
    assert_eq!(store.claim_deadlines("replica-c", 5_000, LONG, 10).await.unwrap(), vec![]);
    // Only the holder releases a claim.
    store.release_deadlines("replica-a", &all[2..]).await.unwrap();
    assert_eq!(store.claim_deadlines("replica-c", 5_000, LONG, 10).await.unwrap(), vec![]);
    store.release_deadlines("replica-b", &all[2..]).await.unwrap();
    assert_eq!(store.claim_deadlines("replica-c", 5_000, LONG, 10).await.unwrap(), all[2..]);
    // replica-a dies holding its claims: they lapse with the lease.
    tokio::time::sleep(short + Duration::from_millis(300)).await;
    assert_eq!(store.claim_deadlines("replica-b", 5_000, LONG, 10).await.unwrap(), all[..2]);
}

/// Claims see exactly the pending generations: a fired one (the commit that consumed it), a
/// replaced one and a dropped one are never returned, claimed or not.
pub async fn fired_and_cancelled_deadlines_are_never_claimed<B: Backend>(b: &mut B) {
    let store = b.store();
    let (id_a, id_b) = (match_id(110), match_id(111));
    let (mut a, _) = played(&*store, id_a, 0).await;
    let (mut bg, _) = played(&*store, id_b, 0).await;
    commit_ok(&*store, &with_deadlines(&a.drop_disc(0), &[("turn", 1, 1_000), ("idle", 2, 2_000)])).await;
    commit_ok(&*store, &with_deadlines(&bg.drop_disc(0), &[("turn", 1, 1_500)])).await;
    // a: `turn` 1 is claimed, then fired (the rules rescheduled it as generation 3), `idle`
    // is kept; b: `turn` 1 is replaced by generation 2, due later.
    let claimed = store.claim_deadlines("replica-a", 5_000, LONG, 1).await.unwrap();
    assert_eq!(claimed, vec![due(id_a, "turn", 1, 1_000)]);
    let fired = firing(&with_deadlines(&a.drop_disc(1), &[("turn", 3, 8_000), ("idle", 2, 2_000)]), "turn", 1);
    commit_ok(&*store, &fired).await;
    commit_ok(&*store, &with_deadlines(&bg.drop_disc(1), &[("turn", 2, 7_000)])).await;
    assert_eq!(
        store.claim_deadlines("replica-b", 6_000, LONG, 10).await.unwrap(),
        vec![due(id_a, "idle", 2, 2_000)],
        "only the pending generations that are due"
    );
    // Releasing a fired deadline does not make it pending again.
    store.release_deadlines("replica-a", &claimed).await.unwrap();
    assert_eq!(store.claim_deadlines("replica-c", i64::MAX, LONG, 10).await.unwrap().len(), 2);
    assert_eq!(store.claim_deadlines("replica-c", i64::MAX, LONG, 10).await.unwrap(), vec![]);
    assert_eq!(store.pending_deadlines().await.unwrap(), 3);
    // A state without deadlines cancels the match's pending ones.
    commit_ok(&*store, &a.drop_disc(2)).await;
    commit_ok(&*store, &bg.drop_disc(2)).await;
    assert_eq!(store.pending_deadlines().await.unwrap(), 0);
    assert_eq!(store.due_deadlines(i64::MAX, 10).await.unwrap(), vec![]);
}

/// A finished match whose rules kept a deadline: asked to, the store cancels it (it can
/// never fire); the same request for an active match's deadline changes nothing.
pub async fn finished_matches_cancel_their_deadlines<B: Backend>(b: &mut B) {
    let store = b.store();
    let (id_a, id_b) = (match_id(120), match_id(121));
    let (mut a, _) = played(&*store, id_a, 0).await;
    let (mut bg, _) = played(&*store, id_b, 0).await;
    // Alice stacks column 0 and wins on her fourth disc; the last state keeps a deadline.
    for column in [0, 1, 0, 1, 0, 1] {
        commit_ok(&*store, &a.drop_disc(column)).await;
    }
    let last = with_deadlines(&a.drop_disc(0), &[("turn", 1, 1_000)]);
    assert!(last.state.as_ref().unwrap().is_finished());
    commit_ok(&*store, &last).await;
    commit_ok(&*store, &with_deadlines(&bg.drop_disc(0), &[("turn", 1, 1_000)])).await;
    let both = vec![due(id_a, "turn", 1, 1_000), due(id_b, "turn", 1, 1_000)];
    let mut expected = both.clone();
    expected.sort_by_key(|d| d.match_id);
    assert_eq!(store.claim_deadlines("replica-a", 5_000, LONG, 10).await.unwrap(), expected);

    store.cancel_finished_deadlines(&both).await.unwrap();
    assert_eq!(store.due_deadlines(5_000, 10).await.unwrap(), vec![due(id_b, "turn", 1, 1_000)]);
    assert_eq!(store.pending_deadlines().await.unwrap(), 1);
    store.release_deadlines("replica-a", &both).await.unwrap();
    assert_eq!(store.claim_deadlines("replica-b", 5_000, LONG, 10).await.unwrap(), vec![both[1].clone()]);
}

/// A trace context written with a commit is still there after a restart, for the sweeper of
/// the node that takes over.
pub async fn reopen_keeps_trace_contexts<B: Backend>(b: &mut B) {
    let id = match_id(52);
    let store = b.store();
    let (mut game, _) = played(&*store, id, 0).await;
    store.mark_dispatched(&[(id, 0)]).await.unwrap();
    let commit = traced(game.drop_disc(3), Some(traceparent(52)));
    commit_ok(&*store, &commit).await;
    b.reopen().await;
    let rows: Vec<_> =
        b.store().undispatched(1_000, Duration::ZERO).await.unwrap().into_iter().map(|r| r.publication).collect();
    assert_eq!(rows, commit.publications);
    assert!(rows.iter().all(|p| p.trace_context.as_deref() == Some(&*traceparent(52))), "{rows:?}");
}

/// A webhook endpoint's cursor and holder survive a restart: a deliverer that comes back
/// resumes where the endpoint's last acknowledged event left it.
pub async fn reopen_keeps_webhook_cursors<B: Backend>(b: &mut B) {
    let to = juegoland_api::FeedCursor { txid: 0, seq: 12 };
    let claim = b.store().claim_webhook("ratings", "all-in-one", LONG).await.unwrap().unwrap();
    assert!(b.store().advance_webhook(&claim, to).await.unwrap());
    b.reopen().await;
    let resumed = b.store().claim_webhook("ratings", "all-in-one", LONG).await.unwrap().expect("still its own");
    assert_eq!((resumed.epoch, resumed.cursor), (claim.epoch, to));
    assert_eq!(b.store().claim_webhook("ratings", "another", LONG).await.unwrap(), None);
}

pub async fn reopen_keeps_webhook_endpoints<B: Backend>(b: &mut B) {
    let ratings = endpoint("ratings", 1);
    assert!(b.store().create_webhook(&ratings, Some(juegoland_api::FeedCursor { txid: 0, seq: 3 })).await.unwrap());
    b.reopen().await;
    assert_eq!(b.store().webhook_endpoints().await.unwrap(), [ratings]);
    assert_eq!(b.store().webhook_cursor("ratings").await.unwrap().unwrap().cursor.seq, 3);
}

pub async fn reopen_keeps_everything<B: Backend>(b: &mut B) {
    let id = match_id(50);
    let store = b.store();
    let (mut game, commits) = played(&*store, id, 3).await;
    // The deadline is the test's, not the rules': the deadlines table keeps it, while a
    // store that restores by the rules restores the state without it.
    let played = game.drop_disc(4);
    let last = with_deadlines(&played, &[("turn", 1, 7_000)]);
    commit_ok(&*store, &last).await;
    let cmd = game.fresh_command_id();
    let rejection = game.decide("bob", cmd, 0, 0);
    commit_ok(&*store, &rejection.commit).await;
    store.mark_dispatched(&[(id, 2)]).await.unwrap();
    let snapshot = |store: Arc<dyn Store>| {
        let keys: Vec<_> =
            commits[1..].iter().chain([&rejection.commit]).map(|c| c.receipt.as_ref().unwrap().key.clone()).collect();
        async move {
            let mut receipts = vec![];
            for k in &keys {
                receipts.push(store.receipt(k).await.unwrap().expect("a stored receipt"));
            }
            (
                store.load(id).await.unwrap().expect("the match"),
                store.log(id).await.unwrap(),
                receipts,
                store.match_ids().await.unwrap(),
                store.undispatched(1_000, Duration::ZERO).await.unwrap(),
                store.due_deadlines(i64::MAX, 10).await.unwrap(),
            )
        }
    };
    let before = snapshot(Arc::clone(&store)).await;
    drop(store);
    b.reopen().await;
    let store = b.store();
    let after = snapshot(Arc::clone(&store)).await;
    assert_eq!(after, before);
    let restored = current(&*store, id).await.expect("the match");
    let decided = played.state.as_deref().expect("a state");
    assert_eq!(
        (&restored.position, restored.revision, &restored.seats),
        (&decided.position, decided.revision, &decided.seats)
    );
    assert_eq!(after.1.len(), 5);
    // The reopened store goes on fencing and committing.
    let next = game.drop_disc(5);
    commit_ok(&*store, &next).await;
    assert_conflict(store.commit(&next).await, id);
}

/// The store's owner and owner epoch of `id`, which must exist.
async fn owned_as(store: &dyn Store, id: Uuid) -> (Option<String>, u64) {
    store.owner(id).await.unwrap().expect("a stored match")
}

fn by(node: &str, epoch: u64) -> (Option<String>, u64) {
    (Some(node.to_owned()), epoch)
}

/// Two nodes over the same data: only the match's owner commits, a claim moves ownership
/// (the last claim wins), and only the owner releases it.
pub async fn ownership_fences_commits<B: Backend>(b: &mut B) {
    let (unowned, a, bn) = (b.store(), b.owned("node-a"), b.owned("node-b"));
    let id = match_id(60);
    let (mut game, create) = Game::create(id);
    commit_ok(&*a, &create).await;
    assert_eq!(owned_as(&*unowned, id).await, by("node-a", 1), "the creator owns the match at epoch 1");

    // B is not the owner: its commit of the next revision is fenced and writes nothing.
    let next = game.decide_drop(0);
    let before = (
        unowned.load(id).await.unwrap(),
        unowned.log(id).await.unwrap(),
        unowned.undispatched(100, Duration::ZERO).await.unwrap(),
    );
    assert_conflict(bn.commit(&next.commit).await, id);
    let after = (
        unowned.load(id).await.unwrap(),
        unowned.log(id).await.unwrap(),
        unowned.undispatched(100, Duration::ZERO).await.unwrap(),
    );
    assert_eq!(after, before, "a commit fenced by ownership left something behind");
    assert_eq!(unowned.receipt(&next.commit.receipt.as_ref().unwrap().key).await.unwrap(), None);

    // B claims the match and commits the same revision.
    assert_eq!(bn.claim(id).await.unwrap(), Some(2));
    assert_eq!(owned_as(&*a, id).await, by("node-b", 2));
    commit_ok(&*bn, &next.commit).await;
    game.advance(next);

    // A lost the match: even at the right revision its commits are fenced, rejections too.
    let stale = game.decide_drop(1);
    assert_conflict(a.commit(&stale.commit).await, id);
    assert_eq!(unowned.receipt(&stale.commit.receipt.as_ref().unwrap().key).await.unwrap(), None);
    let principal = if game.to_move() == "alice" { "bob" } else { "alice" };
    let cmd = game.fresh_command_id();
    let rejection = game.decide(principal, cmd, 1, 2);
    assert!(rejection.commit.state.is_none(), "a rejection-only commit");
    assert_conflict(a.commit(&rejection.commit).await, id);
    assert_eq!(unowned.receipt(&rejection.commit.receipt.as_ref().unwrap().key).await.unwrap(), None);
    assert_eq!(unowned.load(id).await.unwrap().unwrap().revision(), 1);
    // The owner's rejection-only commit passes the same fence.
    commit_ok(&*bn, &rejection.commit).await;

    // A's release does not clear B's ownership; B's does, and keeps the epoch.
    a.release(id).await.unwrap();
    assert_eq!(owned_as(&*a, id).await, by("node-b", 2));
    bn.release(id).await.unwrap();
    assert_eq!(owned_as(&*a, id).await, (None, 2));
    // A released match is nobody's: no owned store commits until one claims it.
    assert_conflict(bn.commit(&stale.commit).await, id);
    assert_conflict(a.commit(&stale.commit).await, id);

    // An unowned store commits regardless of the owner column, and its claim and release
    // change nothing.
    commit_ok(&*unowned, &stale.commit).await;
    game.advance(stale);
    assert_eq!(unowned.claim(id).await.unwrap(), Some(2));
    unowned.release(id).await.unwrap();
    assert_eq!(owned_as(&*a, id).await, (None, 2));
    assert_eq!(a.claim(id).await.unwrap(), Some(3));
    assert_eq!(a.claim(id).await.unwrap(), Some(4), "every claim is a new epoch, even the owner's");
    commit_ok(&*unowned, &game.drop_disc(3)).await;
    assert_eq!(owned_as(&*a, id).await, by("node-a", 4), "an unowned commit keeps the owner");
    commit_ok(&*a, &game.drop_disc(4)).await;
    assert_eq!(unowned.load(id).await.unwrap().unwrap().revision(), 4);
    assert_eq!(unowned.log(id).await.unwrap().len(), 5);

    // Unknown matches.
    let unknown = match_id(98);
    assert_eq!(a.claim(unknown).await.unwrap(), None);
    assert_eq!(unowned.claim(unknown).await.unwrap(), None);
    assert_eq!(a.owner(unknown).await.unwrap(), None);
    a.release(unknown).await.unwrap();
    assert_eq!(unowned.match_ids().await.unwrap(), vec![id], "claims create nothing");
}

/// A match an unowned store created has no owner (epoch 0): an owned store must claim it
/// before it commits to it.
pub async fn owned_stores_claim_unowned_matches<B: Backend>(b: &mut B) {
    let (unowned, a) = (b.store(), b.owned("node-a"));
    let id = match_id(61);
    let (mut game, create) = Game::create(id);
    commit_ok(&*unowned, &create).await;
    assert_eq!(owned_as(&*a, id).await, (None, 0));
    let next = game.decide_drop(0);
    assert_conflict(a.commit(&next.commit).await, id);
    assert_eq!(a.claim(id).await.unwrap(), Some(1));
    commit_ok(&*a, &next.commit).await;
    game.advance(next);
    commit_ok(&*unowned, &game.drop_disc(1)).await;
    assert_eq!(owned_as(&*a, id).await, by("node-a", 1));
    assert_eq!(a.load(id).await.unwrap().unwrap().revision(), 2);
}

/// Commits of many matches at once by one node (PostgreSQL groups them into shared
/// transactions): the one whose match another node claimed meanwhile is fenced alone.
pub async fn an_ownership_fenced_commit_does_not_fail_the_others<B: Backend>(b: &mut B) {
    let (a, bn) = (b.owned("node-a"), b.owned("node-b"));
    let mut games = Vec::new();
    for n in 0..24 {
        games.push(played(&*a, match_id(200 + n), 1).await.0);
    }
    assert_eq!(bn.claim(match_id(200)).await.unwrap(), Some(2));
    let commits: Vec<_> = games.iter_mut().map(|g| g.drop_disc(4)).collect();
    let fenced_key = commits[0].receipt.as_ref().unwrap().key.clone();
    commit_at_once_one_conflicts(&a, commits, match_id(200)).await;
    for n in 1..24 {
        assert_eq!(owned_as(&*a, match_id(200 + n)).await, by("node-a", 1));
    }
    assert_eq!(a.load(match_id(200)).await.unwrap().unwrap().revision(), 1, "the fenced commit wrote nothing");
    assert_eq!(a.receipt(&fenced_key).await.unwrap(), None);
    assert_eq!(owned_as(&*a, match_id(200)).await, by("node-b", 2));
}

pub async fn reopen_keeps_ownership<B: Backend>(b: &mut B) {
    let id = match_id(51);
    let (mut game, create) = Game::create(id);
    commit_ok(&*b.owned("node-a"), &create).await;
    assert_eq!(b.owned("node-b").claim(id).await.unwrap(), Some(2));
    b.reopen().await;
    assert_eq!(owned_as(&*b.store(), id).await, by("node-b", 2));
    let next = game.decide_drop(0);
    assert_conflict(b.owned("node-a").commit(&next.commit).await, id);
    commit_ok(&*b.owned("node-b"), &next.commit).await;
}

/// A `queue` command's receipt keeps its command sequence, applied (read back from its
/// revision's log entry) or rejected (in the rejection's outcome), one by one and per match.
pub async fn queue_receipts_keep_their_sequences<B: Backend>(b: &mut B) {
    let store = b.store();
    let id = match_id(80);
    let commits = crate::game::queue_commits(id);
    for c in &commits {
        commit_ok(&*store, c).await;
    }
    let receipts: Vec<Receipt> = commits.iter().filter_map(|c| c.receipt.clone()).collect();
    let sequences: Vec<Option<u64>> = receipts.iter().map(|r| r.outcome.sequence()).collect();
    assert_eq!(sequences, [Some(1), Some(2), Some(3)]);
    assert!(matches!(receipts[0].outcome, ReceiptOutcome::Rejected { .. }), "north of the top-left corner");
    assert!(receipts.iter().any(|r| matches!(r.outcome, ReceiptOutcome::Applied { .. })));
    for r in &receipts {
        assert_eq!(store.receipt(&r.key).await.unwrap().as_ref(), Some(r), "{:?}", r.outcome);
    }
    let mut stored = store.receipts(id).await.unwrap();
    stored.sort_by_key(|r| r.key.command_id);
    assert_eq!(stored, receipts);
}
