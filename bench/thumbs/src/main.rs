//! `thumbs-bench FILE...`: makes a thumbnail of each file with wirespeed's
//! own maker (crates/service/src/thumbnail/make.rs, compiled here as it is)
//! and prints photos per second. `--rounds N` repeats the list N times.
#[allow(dead_code)]
#[path = "../../../crates/service/src/thumbnail/make.rs"]
mod make;

use std::time::Instant;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut rounds = 1;
    if args.first().map(String::as_str) == Some("--rounds") {
        rounds = args[1].parse().expect("--rounds N");
        args.drain(..2);
    }
    let photos: Vec<Vec<u8>> = args.iter().map(|f| std::fs::read(f).expect(f)).collect();
    let t0 = Instant::now();
    let mut bytes = 0;
    for _ in 0..rounds {
        for p in &photos {
            bytes += make::thumbnail(p).expect("thumbnail").len();
        }
    }
    let n = (photos.len() * rounds) as f64;
    eprintln!(
        "mean thumbnail {} bytes",
        bytes / (photos.len() * rounds).max(1)
    );
    println!("{:.1}", n / t0.elapsed().as_secs_f64());
}
