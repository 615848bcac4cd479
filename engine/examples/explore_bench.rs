//! Times the native explorer without Python: the table as data from
//! benchmarks/dump_table_json.py, closed mode, dynamic members, liveness on, symmetry on unless
//! SYMMETRY is 0.
//!
//!     explore_bench TABLE.json MEMBERS MAX_GENERATION FAULTS [MAX_IDS_PER_CLIENT] [REPEAT] [THREADS] [CACHE 1|0] [SYMMETRY 1|0]
//!
//! With TIMELINE in the environment it also prints (stderr) when the search had expanded 256,
//! 1,024, ... states, in ms from its start: where the start and the end of a run go.

use groupspec_engine::abstract_model::{fault_bit, Bounds, Model};
use groupspec_engine::explore::{explore, Options, LIVENESS, PARKED_ANSWERED};
use groupspec_engine::invariants::invariant_by_name;
use groupspec_engine::step::{RowData, Table};
use serde_json::Value;
use std::time::Instant;

/// The expanded states a TIMELINE line reports the time of.
const MARKS: [usize; 9] = [256, 1024, 4096, 12_800, 25_600, 51_200, 102_400, 150_000, 180_000];

fn strs(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect()).unwrap_or_default()
}

fn lits(v: &Value) -> Vec<(String, bool)> {
    v.as_array()
        .map(|a| a.iter().map(|l| (l[0].as_str().unwrap_or("").to_string(), l[1].as_bool().unwrap_or(false))).collect())
        .unwrap_or_default()
}

/// This thread's CPU time so far, in seconds (Linux: /proc/thread-self/schedstat, in ns).
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse::<f64>().ok()))
        .map(|ns| ns / 1e9)
        .unwrap_or(f64::NAN)
}

/// The process's CPU time so far (every thread's, ended ones included), in seconds
/// (/proc/self/stat's utime and stime, in clock ticks of 10 ms).
fn process_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let f: Vec<f64> = after.split_whitespace().filter_map(|x| x.parse::<f64>().ok()).collect();
    // after the name: state (not a number, skipped), then ppid ... utime is field 14 of the line
    if f.len() > 12 {
        (f[10] + f[11]) / 100.0
    } else {
        f64::NAN
    }
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        return Err("usage: explore_bench TABLE.json MEMBERS MAX_GENERATION FAULTS [IDS] [REPEAT] [THREADS] [CACHE 1|0] [SYMMETRY 1|0]".into());
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&args[1]).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let num = |i: usize, d: i64| args.get(i).and_then(|s| s.parse::<i64>().ok()).unwrap_or(d);
    let mut faults = 0u16;
    for f in args[4].split(',') {
        faults |= fault_bit(f).ok_or(format!("no fault {f}"))?;
    }
    for _ in 0..num(6, 1) {
        let rows: Vec<RowData> = doc["rows"]
            .as_array()
            .ok_or("rows")?
            .iter()
            .map(|r| RowData {
                id: r[0].as_str().unwrap_or("").to_string(),
                states: strs(&r[1]),
                event: r[2].as_str().unwrap_or("").to_string(),
                guard: lits(&r[3]),
                form: r[4].as_str().unwrap_or("").to_string(),
                error: r[5].as_str().unwrap_or("").to_string(),
                next_state: r[6].as_str().map(String::from),
                effects: strs(&r[7]),
                new_incarnation: r[8].as_bool().unwrap_or(false),
            })
            .collect();
        let urgent = doc["urgent"].as_array().ok_or("urgent")?.iter().map(|u| (u[0].as_str().unwrap_or("").to_string(), lits(&u[1]))).collect();
        let fields = doc["fields"].as_array().ok_or("fields")?.iter().map(|f| (f[0].as_str().unwrap_or("").to_string(), strs(&f[1]))).collect();
        let table = Table::new(rows, urgent, fields, strs(&doc["group_fields"]))?;
        let b = Bounds {
            dynamic: num(2, 3) as u8,
            stat: 0,
            max_generation: num(3, 2) as i32,
            faults,
            open: false,
            require_known_member_id: true,
            max_ids_per_client: num(5, 2) as usize,
            group_max_size: 1 << 30,
            metadata_changes: false,
            group_id_empty: false,
        };
        let model = Model::new(table, b)?;
        let invariants = doc["invariants"]
            .as_array()
            .ok_or("invariants")?
            .iter()
            .filter_map(|i| invariant_by_name(i[1].as_str().unwrap_or("")))
            .collect();
        let opts = Options {
            symmetry: num(9, 1) != 0,
            invariants,
            py_invariants: Vec::new(),
            liveness: true,
            max_states: None,
            first_violation_only: true,
            stop_at_first_violation: false,
            report_liveness: true,
            report_parked: true,
            skip: Vec::new(),
            settle: None,
            memo: num(8, 1) != 0,
            cache_bytes: groupspec_engine::explore::CACHE_BYTES,
            threads: num(7, 1) as usize,
        };
        let (t, cpu, pcpu) = (Instant::now(), cpu_seconds(), process_cpu_seconds());
        let mut next = 1_000_000usize;
        // TIMELINE set: when the search had expanded MARKS states (ticks come every 64)
        let timeline = std::env::var_os("TIMELINE").is_some();
        let mut reached: Vec<(usize, f64)> = Vec::new();
        let mut tick = |p: &groupspec_engine::explore::Progress| {
            let expanded = p.states - p.queue;
            if timeline && MARKS.get(reached.len()).is_some_and(|m| expanded >= *m) {
                reached.push((expanded, t.elapsed().as_secs_f64() * 1e3));
            }
            if p.states >= next {
                next += 1_000_000;
                eprintln!(
                    "  {} states, {} edges, depth {}, queue {}, {} MB in the store, {:.1} CPU s",
                    p.states,
                    p.edges,
                    p.depth,
                    p.queue,
                    p.bytes >> 20,
                    cpu_seconds() - cpu
                );
            }
            true
        };
        let out = explore(&model, &opts, &mut tick)?;
        if timeline {
            let line: Vec<String> = reached.iter().map(|(n, ms)| format!("{n}@{ms:.1}")).collect();
            eprintln!("timeline (expanded@ms) {} end@{:.1}", line.join(" "), t.elapsed().as_secs_f64() * 1e3);
        }
        let (wall, secs, psecs) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu, process_cpu_seconds() - pcpu);
        let names: Vec<&str> = out.violations.iter().map(|v| v.name.as_str()).collect();
        println!(
            "states {} edges {} depth {} wall s {:.3} thread CPU s {:.3} states/thread CPU s {:.0} process CPU s {:.2} states/process CPU s {:.0} states/wall s {:.0} threads {} store bytes/state {:.1} violations {:?} ({LIVENESS}, {PARKED_ANSWERED} checked: {}) steps memo hits {} misses {} clears {}",
            out.states,
            out.edges,
            out.depth,
            wall,
            secs,
            out.states as f64 / secs,
            psecs,
            out.states as f64 / psecs,
            out.states as f64 / wall,
            opts.threads,
            out.store_bytes as f64 / out.states as f64,
            names,
            out.liveness_checked,
            out.memo_hits,
            out.memo_misses,
            out.memo_clears
        );
    }
    Ok(())
}
