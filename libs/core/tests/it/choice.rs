//! What a creation pins when it leaves the rules or the package version open
//! (`juegoland_core::packages::choose`): the engine picks among several published package
//! versions of one rules version, and among rules versions by what is published.

use std::collections::BTreeMap;
use std::sync::Arc;

use juegoland_core::{
    ChoiceError, CreateError, Engine, GameChoice, PackagePin, PublishedGame, PublishedPackages, Registry, SeatHolder,
};
use juegoland_sdk::SplitMix64;
use serde_json::json;
use uuid::Uuid;

/// A registry of published games: `(id, package version, rules version)`, each with a lock
/// digest made from its version.
struct Published(Vec<(&'static str, &'static str, &'static str)>);

fn digest(version: &str) -> String {
    format!("{:0>64}", version.replace('.', ""))
}

impl PublishedPackages for Published {
    fn lock_digest(&self, id: &str, version: &str) -> Result<Option<String>, String> {
        Ok(self.0.iter().find(|(i, v, _)| *i == id && *v == version).map(|(_, v, _)| digest(v)))
    }

    fn game_versions(&self, id: &str) -> Result<Vec<PublishedGame>, String> {
        let of_game = self.0.iter().filter(|(i, _, _)| *i == id);
        Ok(of_game
            .map(|(_, v, r)| PublishedGame { version: (*v).into(), rules_version: (*r).into(), lock_digest: digest(v) })
            .collect())
    }
}

/// Conecta 4 rules 1.0.0 and 1.1.0 (1.2.0 is published but not run by this engine).
fn engine(published: Option<Published>) -> Engine {
    let mut r = Registry::new();
    r.register(juegoland_sdk::erase(juegoland_conecta4::Conecta4)).unwrap();
    r.register(juegoland_sdk::erase(crate::fixture::Versioned(juegoland_conecta4::Conecta4, "1.1.0"))).unwrap();
    let engine = Engine::new(Arc::new(r));
    match published {
        Some(p) => engine.with_packages(Arc::new(p)),
        None => engine,
    }
}

fn catalog() -> Published {
    Published(vec![
        ("conecta4", "1.0.0", "1.0.0"),
        ("conecta4", "1.0.1", "1.0.0"),
        ("conecta4", "1.1.0", "1.1.0"),
        ("conecta4", "1.2.0", "1.2.0"),
        ("hundido", "3.0.0", "3.0.0"),
    ])
}

fn choice(rules: Option<&str>, package: Option<&str>) -> GameChoice {
    GameChoice { id: "conecta4".into(), rules_version: rules.map(Into::into), package_version: package.map(Into::into) }
}

/// Creates a match on `choice`: its (rules version, package version, pinned version).
fn create(engine: &Engine, choice: GameChoice) -> Result<(String, String, Option<String>), CreateError> {
    let seats = BTreeMap::from([
        ("p0".to_owned(), SeatHolder::Principal("alice".into())),
        ("p1".to_owned(), SeatHolder::Principal("bob".into())),
    ]);
    let (pending, live) = engine.create(Uuid::from_u128(9), choice, seats, &json!({}), 5, &mut SplitMix64(1))?;
    let state = pending.commit.state.expect("a creation writes its state");
    assert_eq!(live.state().package, state.package);
    if let Some(pin) = &state.package {
        assert_eq!(pin.lock_digest, digest(&pin.version), "the pin is the listed publication's");
        engine.check_pin(&state).expect("and the match loads with it");
    }
    Ok((
        state.game.rules_version.clone(),
        state.game_version.clone(),
        state.package.as_ref().map(|p| p.version.clone()),
    ))
}

fn ok(rules: &str, package: &str, pinned: Option<&str>) -> Result<(String, String, Option<String>), CreateError> {
    Ok((rules.into(), package.into(), pinned.map(Into::into)))
}

#[test]
fn a_creation_pins_the_newest_publication_of_the_rules_it_runs() {
    let e = engine(Some(catalog()));
    // Nothing asked: the newest published package whose rules this engine runs (1.2.0's are
    // not registered here).
    assert_eq!(create(&e, choice(None, None)), ok("1.1.0", "1.1.0", Some("1.1.0")));
    // A rules version: its newest package, a visual fix over the same rules.
    assert_eq!(create(&e, choice(Some("1.0.0"), None)), ok("1.0.0", "1.0.1", Some("1.0.1")));
    // A package version: that exact publication, and its manifest's rules.
    assert_eq!(create(&e, choice(None, Some("1.0.0"))), ok("1.0.0", "1.0.0", Some("1.0.0")));
    assert_eq!(create(&e, choice(Some("1.0.0"), Some("1.0.1"))), ok("1.0.0", "1.0.1", Some("1.0.1")));
}

#[test]
fn without_a_publication_a_creation_is_unpinned() {
    // No registry: the newest registered rules version, pinned to no package.
    assert_eq!(create(&engine(None), choice(None, None)), ok("1.1.0", "1.0.0", None));
    // A registry where only the old rules are published: unasked, the published rules win
    // over the newest registered ones; asked, 1.1.0 runs unpinned.
    let old_only = engine(Some(Published(vec![("conecta4", "1.0.0", "1.0.0")])));
    assert_eq!(create(&old_only, choice(None, None)), ok("1.0.0", "1.0.0", Some("1.0.0")));
    assert_eq!(create(&old_only, choice(Some("1.1.0"), None)), ok("1.1.0", "1.0.0", None));
}

#[test]
fn a_choice_that_names_nothing_runnable_is_refused_by_name() {
    let e = engine(Some(catalog()));
    let refused = |rules: Option<&str>, package: Option<&str>| match create(&e, choice(rules, package)) {
        Err(CreateError::Choice(c)) => c,
        other => panic!("{rules:?} {package:?}: {other:?}"),
    };
    assert!(
        matches!(refused(Some("9.9.9"), None), ChoiceError::UnknownRulesVersion { version, .. } if version == "9.9.9")
    );
    assert!(
        matches!(refused(None, Some("9.9.9")), ChoiceError::UnknownPackageVersion { version, .. } if version == "9.9.9")
    );
    assert!(matches!(
        refused(Some("1.0.0"), Some("1.1.0")),
        ChoiceError::RulesMismatch { published, asked, .. } if published == "1.1.0" && asked == "1.0.0"
    ));
    assert!(matches!(
        refused(None, Some("1.2.0")),
        ChoiceError::RulesNotRegistered { rules_version, .. } if rules_version == "1.2.0"
    ));
    let unknown = create(&e, GameChoice { id: "nope".into(), rules_version: None, package_version: None });
    assert!(matches!(unknown, Err(CreateError::Choice(ChoiceError::UnknownGame(id))) if id == "nope"));
    // Another game's publications are not this game's.
    assert!(matches!(refused(None, Some("3.0.0")), ChoiceError::UnknownPackageVersion { .. }));
}

#[test]
fn a_retried_creation_finds_the_match_its_choice_admits() {
    let key = juegoland_core::GameKey { id: "conecta4".into(), rules_version: "1.0.0".into() };
    let pin = PackagePin { id: "conecta4".into(), version: "1.0.1".into(), lock_digest: digest("1.0.1") };
    assert!(choice(None, None).admits(&key, None));
    assert!(choice(Some("1.0.0"), Some("1.0.1")).admits(&key, Some(&pin)));
    assert!(!choice(Some("1.1.0"), None).admits(&key, Some(&pin)));
    assert!(!choice(None, Some("1.0.0")).admits(&key, Some(&pin)));
    assert!(!choice(None, Some("1.0.1")).admits(&key, None));
    assert!(!GameChoice { id: "hundido".into(), rules_version: None, package_version: None }.admits(&key, None));
}
