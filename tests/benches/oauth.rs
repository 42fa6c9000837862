//! The cost of OAuth (`--oauth-*`):
//! `cargo bench -p conda-mcp-tests --bench oauth`.
//!
//! 1. Validating one access token in process (`Validator::validate`:
//!    header, key lookup in the cache, signature, claims), RS256 (2048-bit
//!    key) and ES256, keys from a JWKS file.
//! 2. Over loopback against `conda-mcp --listen` with OAuth (keys from a
//!    file) and the stand-in conda: a request without a token, with a
//!    forged token (signed by another key under the issuer's key id) and
//!    with an expired one, each answered
//!    401; and `tools/list` with a valid token (200), one connection per
//!    request. Latency from sending the request to the whole answer.
//!
//! Reports p50 and p99 and the mean; never asserts a timing.

// A bench binary reports its figures on stdout (it is not the server).
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use conda_mcp_server::transport::http::oauth::{Jwks, Source, Validator};
use conda_mcp_tests::http::{HttpServer, post_mcp, tempdir};
use conda_mcp_tests::oauth::{SigningKey, claims, jwks, now};
use conda_mcp_tests::standin::StandinPrefix;
use serde_json::json;

const ISSUER: &str = "https://idp.bench.invalid";
const AUDIENCE: &str = "https://conda.bench.invalid/mcp";
const VALIDATIONS: usize = 2000;
const REQUESTS: usize = 300;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn report(name: &str, mut d: Vec<Duration>) {
    d.sort();
    let mean = d.iter().sum::<Duration>() / d.len() as u32;
    println!(
        "{name}: n={} p50 {:.1} µs, p99 {:.1} µs, mean {:.1} µs",
        d.len(),
        percentile(&d, 0.5).as_secs_f64() * 1e6,
        percentile(&d, 0.99).as_secs_f64() * 1e6,
        mean.as_secs_f64() * 1e6
    );
}

fn main() {
    let rsa = SigningKey::rsa("bench-rsa");
    let ec = SigningKey::ec("bench-ec");
    let dir = tempdir();
    let file = dir.path().join("jwks.json");
    std::fs::write(&file, jwks(&[&rsa, &ec]).to_string()).expect("jwks file");
    let good = claims(ISSUER, AUDIENCE, "bench", "conda:write");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let validator = rt.block_on(async {
        let keys = Jwks::load(Source::File(file.clone()))
            .await
            .expect("key set");
        Validator::new(keys, ISSUER, AUDIENCE, None)
    });
    for (name, key) in [("validate RS256", &rsa), ("validate ES256", &ec)] {
        let token = key.sign(&good);
        let mut times = Vec::with_capacity(VALIDATIONS);
        rt.block_on(async {
            for _ in 0..VALIDATIONS {
                let t = Instant::now();
                let g = validator.validate(&token).await;
                times.push(t.elapsed());
                assert!(g.is_ok(), "{name}: {g:?}");
            }
        });
        report(name, times);
    }

    let prefix = StandinPrefix::standard();
    let server = HttpServer::start(
        &prefix.conda_exe,
        &[
            "--oauth-issuer",
            ISSUER,
            "--oauth-audience",
            AUDIENCE,
            "--oauth-jwks",
            file.to_str().expect("utf-8"),
        ],
    );
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    // Signed by another P-256 key under the issuer's kid: verified, fails.
    let forged = SigningKey::ec("bench-ec").sign(&good);
    let mut expired = good.clone();
    expired["exp"] = json!(now() - 3600);
    let cases = [
        ("401 no token", None, 401),
        ("401 forged ES256 signature", Some(forged), 401),
        ("401 expired RS256", Some(rsa.sign(&expired)), 401),
        ("200 tools/list, valid ES256", Some(ec.sign(&good)), 200),
        ("200 tools/list, valid RS256", Some(rsa.sign(&good)), 200),
    ];
    for (name, token, status) in cases {
        let bearer = token.map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = bearer
            .as_deref()
            .map(|b| vec![("Authorization", b)])
            .unwrap_or_default();
        let mut times = Vec::with_capacity(REQUESTS);
        for _ in 0..REQUESTS {
            let t = Instant::now();
            let r = post_mcp(server.addr, &headers, &list).expect("request");
            times.push(t.elapsed());
            assert_eq!(r.status, status, "{name}: {r:?}");
        }
        report(&format!("HTTP {name}"), times);
    }
}
