//! What a sign-in costs: one argon2id verification (the crate's default
//! parameters, m = 19 MiB, t = 2, p = 1, which `wirespeed passwd` writes),
//! against a remembered sign-in (the cache `Users::sign_in` keeps for a
//! minute: a SHA-256 of the credentials and a map lookup), so a client
//! sending Basic on every request pays argon2 once a minute.
//!
//! `cargo bench -p wirespeed-service --bench signin -- --warm-up-time 1 --measurement-time 5`
//!
//! Results: bench/RESULTS.md ("sign-in cost").

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use wirespeed_service::policy::basic::Credentials;
use wirespeed_service::policy::password;
use wirespeed_service::Users;

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
    assert!(rt.block_on(users.sign_in(&creds, ip)).is_some());
    c.bench_function("remembered sign-in", |b| {
        b.iter(|| assert!(rt.block_on(users.sign_in(black_box(&creds), ip)).is_some()))
    });
}

criterion_group!(benches, signin);
criterion_main!(benches);
