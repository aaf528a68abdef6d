//! What a sign-in costs: one argon2id verification (the crate's default
//! parameters, m = 19 MiB, t = 2, p = 1, which `wirespeed passwd` writes),
//! against a remembered sign-in (the cache `Users::sign_in` keeps for a
//! minute: a SHA-256 of the credentials and a map lookup), so a client
//! sending Basic on every request pays argon2 once a minute; and the
//! page's session cookie, checked on every request (base64, an HMAC-SHA256,
//! the sign-out table, the user's password stamp).
//!
//! `cargo bench -p wirespeed-service --bench signin -- --warm-up-time 1 --measurement-time 5`
//!
//! Results: bench/RESULTS.md ("sign-in cost").

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::sync::Arc;
use wirespeed_service::policy::basic::Credentials;
use wirespeed_service::policy::password;
use wirespeed_service::policy::{Sessions, Shares};
use wirespeed_service::{Access, Policy, Users, Writes};

fn signin(c: &mut Criterion) {
    let hash = password::hash(b"correct horse").unwrap();
    c.bench_function("argon2id verify (one sign-in)", |b| {
        b.iter(|| assert!(password::verify(black_box(b"correct horse"), &hash)))
    });
    let users = Users::from_text("bench.toml", &format!("[users]\nalice = \"{hash}\"\n")).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let creds = Credentials {
        user: "alice".into(),
        password: b"correct horse".to_vec(),
    };
    let ip = "127.0.0.1".parse().unwrap();
    assert!(rt.block_on(users.sign_in(&creds, ip)).user().is_some());
    c.bench_function("remembered sign-in", |b| {
        b.iter(|| {
            assert!(rt
                .block_on(users.sign_in(black_box(&creds), ip))
                .user()
                .is_some())
        })
    });
    let shares = Arc::new(Shares::new([1; 32], 3600));
    let sessions = Arc::new(Sessions::new(shares.session_key(), 3600, false));
    let stamp = wirespeed_service::policy::sessions::stamp_of(&hash);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let (_, cookie) = sessions.mint("alice", stamp, now).unwrap();
    let policy = Policy::from_presets(&Access::default(), Writes::default())
        .with_users(Arc::new(users))
        .with_sessions(sessions);
    c.bench_function("session cookie check", |b| {
        b.iter(|| assert!(policy.session_user(black_box(&cookie), ip).is_some()))
    });
}

criterion_group!(benches, signin);
criterion_main!(benches);
