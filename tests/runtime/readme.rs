// Licensed to the Apache Software Foundation (ASF) under one
// or more contributor license agreements.  See the NOTICE file
// distributed with this work for additional information
// regarding copyright ownership.  The ASF licenses this file
// to you under the Apache License, Version 2.0 (the
// "License"); you may not use this file except in compliance
// with the License.  You may obtain a copy of the License at
//
//   http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing,
// software distributed under the License is distributed on an
// "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
// KIND, either express or implied.  See the License for the
// specific language governing permissions and limitations
// under the License.

//! The README's deploy steps, run as written: the `bash` blocks of "Deploying into
//! `iggy-connectors`", in order, from the repository root, each in a shell that has the exports
//! of the blocks before it (as one terminal would). `IGGY_BIN_DIR` names a copy of the
//! binaries (step 1 puts the plugin there) and `HOME` a directory of the test's own, where the
//! steps' `$HOME/iggy-fluss` goes. The Fluss cluster is the one the steps start
//! (`scripts/local-fluss.sh`); `iggy message poll` (run again until the first batches have
//! created the topics) must show rows of both example tables, and the last step must stop
//! every process the steps started.
//!
//! The steps use the ports a fresh deployment has: the Fluss coordinator on 9123, the Iggy
//! server's defaults (TCP 8090, HTTP 3000, QUIC 8080, WebSocket 8092) and the runtime's HTTP
//! API on 8081, all on 127.0.0.1. The test fails at once when one of them is taken.

use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fluss_testkit::iggy::{Binaries, Program};
use fluss_testkit::orphans::Adopted;

/// The deploy steps' `bash` blocks, in order, without the indentation of the list they sit in.
fn deploy_blocks(readme: &str) -> Vec<String> {
    let start = readme
        .find("\n## Deploying into `iggy-connectors`\n")
        .expect("the README's deploy steps");
    let steps = &readme[start + 1..];
    let end = steps[3..].find("\n## ").map_or(steps.len(), |e| e + 3);
    let mut blocks = Vec::new();
    let mut lines = steps[..end].lines();
    while let Some(line) = lines.next() {
        let Some(indent) = line.strip_suffix("```bash").filter(|i| i.trim().is_empty()) else {
            continue;
        };
        let mut block = String::new();
        for line in lines.by_ref() {
            if line.trim_start() == "```" {
                break;
            }
            block.push_str(line.strip_prefix(indent).unwrap_or(line.trim_start()));
            block.push('\n');
        }
        blocks.push(block);
    }
    blocks
}

/// TCP ports the steps bind on 127.0.0.1, and QUIC's UDP port.
const TCP_PORTS: [u16; 5] = [9123, 8090, 3000, 8092, 8081];
const UDP_PORT: u16 = 8080;

fn assert_ports_free() {
    for port in TCP_PORTS {
        if let Err(e) = TcpListener::bind(("127.0.0.1", port)) {
            panic!(
                "127.0.0.1:{port} is taken ({e}): the README's deploy steps use the fixed ports \
                 {TCP_PORTS:?} (TCP) and {UDP_PORT} (UDP); stop what listens there"
            );
        }
    }
    if let Err(e) = UdpSocket::bind(("127.0.0.1", UDP_PORT)) {
        panic!("UDP 127.0.0.1:{UDP_PORT} is taken ({e}): iggy-server's QUIC listener needs it");
    }
}

/// What the steps start, stopped by process id when the test ends (also when it fails), and
/// by a watchdog when the test process dies without unwinding.
struct Deployment {
    root: PathBuf,
    home: PathBuf,
    deploy: PathBuf,
    watchdog: Option<std::process::Child>,
    /// The steps' background processes are reaped here, as the user's shell would reap them.
    _adopted: Adopted,
}

/// The program a pid file of the steps names, when that process still runs it.
fn running(pid_file: &Path, program: &str) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(pid_file)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let zombie = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state == "Z");
    (!zombie && String::from_utf8_lossy(&cmdline).contains(program)).then_some(pid)
}

/// `bash` commands that stop what the steps started and is still running.
fn cleanup_script(root: &Path, deploy: &Path) -> String {
    format!(
        r#"for name in iggy-connectors iggy-server; do
  pid=$(cat "{deploy}/$name.pid" 2>/dev/null) || continue
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$name" && kill -9 "$pid"
done
if [ -d "{deploy}/fluss" ]; then "{root}/scripts/local-fluss.sh" stop "{deploy}/fluss"; fi"#,
        deploy = deploy.display(),
        root = root.display()
    )
}

impl Deployment {
    fn new() -> Deployment {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let home = std::env::temp_dir().join(format!("fluss-readme-deploy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(&home).expect("the test's HOME");
        let deploy = home.join("iggy-fluss");
        let watchdog = Command::new("setsid")
            .args(["bash", "-c"])
            .arg(format!(
                "while kill -0 {owner} 2>/dev/null; do sleep 1; done\n{cleanup}",
                owner = std::process::id(),
                cleanup = cleanup_script(&root, &deploy)
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok();
        let _adopted = Adopted::reap(vec![
            deploy.join("iggy-server.pid"),
            deploy.join("iggy-connectors.pid"),
            deploy.join("fluss/pids"),
            deploy.join("fluss/writer.pid"),
        ]);
        Deployment {
            root,
            home,
            deploy,
            watchdog,
            _adopted,
        }
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.deploy.join(name)).unwrap_or_default()
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        for name in ["iggy-connectors", "iggy-server"] {
            if let Some(pid) = running(&self.deploy.join(format!("{name}.pid")), name) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
        }
        if self.deploy.join("fluss").is_dir() {
            let _ = Command::new(self.root.join("scripts/local-fluss.sh"))
                .arg("stop")
                .arg(self.deploy.join("fluss"))
                .stdin(Stdio::null())
                .status();
        }
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
        if std::thread::panicking() {
            for log in ["iggy-server.log", "iggy-connectors.log"] {
                let text = self.log(log);
                let lines: Vec<&str> = text.lines().collect();
                eprintln!(
                    "===== {log} (last 40 lines)\n{}",
                    lines[lines.len().saturating_sub(40)..].join("\n")
                );
            }
            eprintln!("kept {}", self.home.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.home);
        }
    }
}

/// Where the user running the test keeps cargo, rustup and the Fluss jars: the steps run with
/// another `HOME`, so these are named explicitly.
fn real_home_dirs() -> Vec<(&'static str, PathBuf)> {
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set"));
    let var = |name: &str, default: PathBuf| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map_or(default, PathBuf::from)
    };
    vec![
        ("CARGO_HOME", var("CARGO_HOME", home.join(".cargo"))),
        ("RUSTUP_HOME", var("RUSTUP_HOME", home.join(".rustup"))),
        (
            "FLUSS_CACHE_DIR",
            var(
                "FLUSS_CACHE_DIR",
                home.join(".cache/iggy-fluss-source/fluss-0.9.1"),
            ),
        ),
    ]
}

/// Runs step `n`'s block after the exports of the blocks before it, from the repository root,
/// as a user's shell would (no variable of cargo's test run but `CARGO_HOME` and
/// `CARGO_TARGET_DIR`); returns its output, or `Err` with it when the block failed.
fn run_step(
    deployment: &Deployment,
    bin_dir: &Path,
    exports: &str,
    n: usize,
    block: &str,
    deadline: Duration,
) -> Result<String, String> {
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(format!("set -euo pipefail\n{exports}{block}"))
        .current_dir(&deployment.root)
        .env("HOME", &deployment.home)
        .env("IGGY_BIN_DIR", bin_dir);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("CARGO_") && key != "CARGO_HOME" && key != "CARGO_TARGET_DIR" {
            command.env_remove(key);
        }
    }
    for (key, value) in real_home_dirs() {
        command.env(key, value);
    }
    let log = deployment.home.join(format!("step-{n}.log"));
    let _ = std::fs::remove_file(&log);
    let program = Program::start("a README deploy step", command, &log);
    let status = program.wait(deadline);
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    if status.success() {
        Ok(output)
    } else {
        Err(format!("step {n} exited with {status}:\n{block}\n{output}"))
    }
}

#[test]
fn the_readme_deploy_steps_put_both_example_tables_into_iggy_topics() {
    let binaries = Binaries::from_env();
    assert_ports_free();
    let deployment = Deployment::new();
    let root = deployment.root.clone();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let blocks = deploy_blocks(&readme);
    let poll = blocks
        .iter()
        .position(|b| b.contains("message poll"))
        .expect("the step that looks at the topics");
    let stop = blocks.len() - 1;
    assert!(
        blocks[stop].contains("kill") && poll < stop && poll >= 5,
        "the steps: set up, look at the topics, stop: {blocks:#?}"
    );
    let status_before = git_status(&root);

    // The binaries' own copy: step 1 puts the plugin next to them.
    let bin_dir = deployment.home.join("iggy-bin");
    std::fs::create_dir_all(&bin_dir).expect("bin dir");
    for binary in [&binaries.server, &binaries.connectors, &binaries.cli] {
        let name = binary.file_name().expect("a file name");
        std::fs::copy(binary, bin_dir.join(name))
            .unwrap_or_else(|e| panic!("copy {}: {e}", binary.display()));
    }

    let mut exports = String::new();
    for (n, block) in blocks[..poll].iter().enumerate() {
        // The build of step 1 is the suites' (nothing to compile after them); the local Fluss
        // of step 3 fetches its jars on a first run.
        let deadline = Duration::from_secs(if n == 0 { 3600 } else { 600 });
        let output = run_step(&deployment, &bin_dir, &exports, n + 1, block, deadline)
            .unwrap_or_else(|e| panic!("{e}"));
        eprintln!("step {}: done{}", n + 1, tail(&output, 3));
        for line in block.lines().filter(|l| l.starts_with("export ")) {
            exports.push_str(line);
            exports.push('\n');
        }
    }
    assert_eq!(
        deployment.deploy,
        deployment.home.join("iggy-fluss"),
        "the steps deploy to $HOME/iggy-fluss"
    );
    assert!(
        bin_dir.join("libiggy_connector_fluss_source.so").is_file(),
        "step 1 put the plugin next to the runtime"
    );

    // The topics exist once the first batches arrived; the step is run again until then.
    let started = Instant::now();
    let shown = loop {
        match run_step(
            &deployment,
            &bin_dir,
            &exports,
            poll + 1,
            &blocks[poll],
            Duration::from_secs(60),
        ) {
            Ok(output)
                if output.matches("Polled 5 messages").count() == 2
                    && output.contains("\"order_id\"")
                    && output.contains("\"op\"")
                    && output.contains("\"customer_id\"") =>
            {
                break output;
            }
            result if started.elapsed() > Duration::from_secs(180) => panic!(
                "the topics did not show 5 rows of each table within 180 s; the last poll: {}",
                result.unwrap_or_else(|e| e)
            ),
            _ => std::thread::sleep(Duration::from_secs(2)),
        }
    };
    eprintln!("step {}: {}", poll + 1, tail(&shown, 12));
    let runtime_log = deployment.log("iggy-connectors.log");
    for table in ["fluss.orders", "fluss.customers"] {
        assert!(
            runtime_log
                .lines()
                .any(|l| l.contains(&format!(" {table}]: opened"))),
            "the plugin logged its `opened` line for {table}:\n{runtime_log}"
        );
    }

    let stopped = run_step(
        &deployment,
        &bin_dir,
        &exports,
        stop + 1,
        &blocks[stop],
        Duration::from_secs(300),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("step {}: done{}", stop + 1, tail(&stopped, 3));
    for name in ["iggy-connectors", "iggy-server"] {
        let pid_file = deployment.deploy.join(format!("{name}.pid"));
        let deadline = Instant::now() + Duration::from_secs(60);
        while running(&pid_file, name).is_some() {
            assert!(
                Instant::now() < deadline,
                "{name} still runs a minute after the last step"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    assert!(
        !deployment.deploy.join("fluss").exists(),
        "the last step stopped the local Fluss and removed its directory"
    );
    for key in ["fluss_orders_json", "fluss_customers"] {
        let state = deployment.deploy.join(format!("state/source_{key}.state"));
        assert!(
            state.is_file(),
            "the runtime kept {key}'s position in {}",
            state.display()
        );
    }
    assert_eq!(
        git_status(&root),
        status_before,
        "the steps write nothing into the clone but its build"
    );
}

/// `git status --porcelain` of the clone (its build in the ignored `target/` left out).
fn git_status(root: &Path) -> String {
    let output = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(root)
        .output()
        .expect("git is installed");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The last `lines` lines of `text`, on lines of their own.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..]
        .iter()
        .map(|l| format!("\n  {l}"))
        .collect()
}
