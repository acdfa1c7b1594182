//! spindle-loadgen: the load generator of the comparison bench (bench/compare.ts runs it).
//!
//! One thread drives every connection of a run on epoll with a hand-rolled MQTT 3.1.1 / 5.0
//! codec, so it costs far less CPU than any broker it measures; it reports its own CPU use
//! with each result so a run where it was the limit can be told apart. Prints one JSON object.
//!
//! Scenarios: throughput (--topology fanin|fanout|pairs), connrate, idle, idle-scale, latency,
//! retained, subscriptions. Common options: --host --port --version 4|5 --payload 64 --sources 8, and the
//! credentials of every CONNECT: --username U --password P --users N (connection i: U{i % N}),
//! and --proxy-protocol v1|v2 (a load balancer's PROXY header before each CONNECT).
mod args;
mod mqtt;
mod net;
mod report;
mod scenario;

use args::{Args, Common};

fn main() {
    let args = match Args::parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    report::raise_nofile(args.num("nofile", 65536));
    let common = Common::from(&args);
    let result = match args.scenario.as_str() {
        "throughput" => scenario::throughput::run(&args, &common),
        "connrate" => scenario::connrate::run(&args, &common),
        "idle" => scenario::idle::run(&args, &common),
        "idle-scale" => scenario::idle_scale::run(&args, &common),
        "latency" => scenario::latency::run(&args, &common),
        "retained" => scenario::retained::run(&args, &common),
        "subscriptions" => scenario::subscriptions::run(&args, &common),
        s => {
            eprintln!("unknown scenario {s}");
            std::process::exit(2);
        }
    };
    // The whole process (setup and drain included), for the orchestrator's disturbance check.
    let (user, sys) = report::cpu_seconds();
    println!("{}", result.num("processCpuSeconds", user + sys));
}
