//! What the call benchmarks print: percentiles of the times taken, as one JSON object.

use serde_json::{Map, Value, json};

/// `{"p50_us", "p90_us", "p99_us", "mean_us", "calls"}` of `times` (microseconds), with
/// `extra`'s fields added.
pub fn summary(mut times: Vec<f64>, extra: Map<String, Value>) -> Value {
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let mut out = json!({"p50_us": at(0.5), "p90_us": at(0.9), "p99_us": at(0.99), "mean_us": mean, "calls": times.len()});
    if let Value::Object(map) = &mut out {
        map.extend(extra);
    }
    out
}
