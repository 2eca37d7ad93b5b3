//! Compiles the C tests of `tests/c/` with the system C compiler (`cc`) against the crate's
//! headers and the built `libmezzanine`, and runs them: linked to the shared library, to
//! the static library, under AddressSanitizer (with leak checking) and, for the
//! multi-threaded test, under ThreadSanitizer, each where `cc` supports it. Each binary gets
//! its own scratch directory and must print `PASS` and exit 0.
//!
//! The library is built first with `cargo build -p mezz-capi` into the target directory
//! and profile of this test binary (see `lib_dir`), so this works from a clean clone with
//! `CARGO_TARGET_DIR` set or not.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The C test programs (`tests/c/<name>.c`).
const PROGRAMS: &[&str] = &[
    "c_api_test",
    "c_misuse_test",
    "c_mezzanine_test",
    "c_threads_test",
    "c_transaction_test",
    "c_backup_test",
    "c_column_family_test",
];

/// Libraries a Rust staticlib needs from the system (`rustc --print native-static-libs`).
const NATIVE_STATIC_LIBS: &[&str] = &[
    "-lgcc_s",
    "-lutil",
    "-lrt",
    "-lpthread",
    "-lm",
    "-ldl",
    "-lc",
];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding `libmezzanine.so` and `libmezzanine.a`, built (once per test
/// process) by `cargo build -p mezz-capi` into this test's target directory and profile,
/// so the C tests never link a stale library. (Cargo does not build a cdylib-only crate's
/// library before its integration tests, and an rlib would collide with the engine's
/// `libmezzanine.rlib`.) With the test profile the engine is not compiled again.
fn lib_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("test binary path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("test binary in <target>/<profile>/deps")
            .to_path_buf();
        let target_dir = profile_dir.parent().expect("target dir");
        let release = profile_dir.file_name().is_some_and(|n| n == "release");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_string());
        let st = Command::new(cargo)
            .args(["build", "--quiet", "-p", "mezz-capi", "--lib"])
            .args(if release {
                &["--release"][..]
            } else {
                &["--profile", "test"][..]
            })
            .env("CARGO_TARGET_DIR", target_dir)
            .status()
            .expect("run cargo build -p mezz-capi");
        assert!(st.success(), "cargo build -p mezz-capi failed");
        for f in ["libmezzanine.so", "libmezzanine.a"] {
            assert!(
                profile_dir.join(f).exists(),
                "{f} not found in {}",
                profile_dir.display()
            );
        }
        profile_dir
    })
    .clone()
}

/// Whether `cc` exists; prints why the test is skipped if not.
fn have_cc() -> bool {
    let ok = Command::new("cc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: no C compiler `cc` on PATH (scripts/setup.sh installs gcc)");
    }
    ok
}

/// Compiles `tests/c/<name>.c` into `out_dir` with `extra` flags; returns the binary.
fn compile(name: &str, out_dir: &Path, suffix: &str, extra: &[&str], link: &[String]) -> PathBuf {
    let c = crate_dir();
    let bin = out_dir.join(format!("{name}{suffix}"));
    let out = Command::new("cc")
        .args(["-std=c11", "-g", "-pthread", "-Wall", "-Wextra", "-Werror"])
        .args(extra)
        .arg("-I")
        .arg(c.join("include"))
        .arg("-I")
        .arg(c.join("tests/c"))
        .arg(c.join(format!("tests/c/{name}.c")))
        .arg("-o")
        .arg(&bin)
        .args(link)
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "cc failed for {name}{suffix}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

/// Runs `bin` on a fresh scratch directory and checks that it passed.
fn run(bin: &Path, env: &[(&str, &str)]) {
    let scratch = tempfile::tempdir().expect("scratch dir");
    let out = Command::new(bin)
        .arg(scratch.path())
        .env("TEST_TMPDIR", scratch.path())
        .envs(env.iter().copied())
        .output()
        .expect("run C test");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.contains("PASS"),
        "{} failed ({}):\n{stderr}",
        bin.display(),
        out.status
    );
}

/// Link arguments for the shared library, with an rpath so the binary finds it.
fn shared_link(lib: &Path) -> Vec<String> {
    vec![
        lib.join("libmezzanine.so").display().to_string(),
        format!("-Wl,-rpath,{}", lib.display()),
    ]
}

#[test]
fn c_tests_pass_against_the_shared_library() {
    if !have_cc() {
        return;
    }
    let lib = lib_dir();
    let out = tempfile::tempdir().expect("build dir");
    for name in PROGRAMS {
        let bin = compile(name, out.path(), "", &[], &shared_link(&lib));
        run(&bin, &[]);
    }
}

#[test]
fn c_tests_pass_against_the_static_library() {
    if !have_cc() {
        return;
    }
    let lib = lib_dir();
    let out = tempfile::tempdir().expect("build dir");
    let mut link = vec![lib.join("libmezzanine.a").display().to_string()];
    link.extend(NATIVE_STATIC_LIBS.iter().map(|s| (*s).to_string()));
    // One program is enough to show the static library links and runs.
    let bin = compile("c_api_test", out.path(), "-static-lib", &[], &link);
    run(&bin, &[]);
}

/// Whether `cc -fsanitize=address` builds a program that runs; prints why not otherwise.
fn have_asan(dir: &Path) -> bool {
    let probe = "int main(void) { return 0; }\n";
    match run_probe(
        dir,
        "asan_probe",
        probe,
        &["-fsanitize=address"],
        ("ASAN_OPTIONS", ""),
    ) {
        None => {
            eprintln!("SKIP: `cc -fsanitize=address` does not build a program here (no libasan)");
            false
        }
        Some((false, _)) => {
            eprintln!("SKIP: AddressSanitizer programs do not run here");
            false
        }
        Some((true, _)) => true,
    }
}

#[test]
fn c_tests_pass_under_address_sanitizer() {
    if !have_cc() {
        return;
    }
    let out = tempfile::tempdir().expect("build dir");
    if !have_asan(out.path()) {
        return;
    }
    let lib = lib_dir();
    let flags = ["-fsanitize=address", "-fno-omit-frame-pointer"];
    for name in PROGRAMS {
        let bin = compile(name, out.path(), "-asan", &flags, &shared_link(&lib));
        run(&bin, &[("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")]);
    }
}

/// Builds `src` with `cc` and `flags` and runs it with `env` set; `None` if it does not
/// build or cannot be started, else whether it exited 0 and what it printed on stderr.
fn run_probe(
    dir: &Path,
    name: &str,
    src: &str,
    flags: &[&str],
    env: (&str, &str),
) -> Option<(bool, String)> {
    let c = dir.join(format!("{name}.c"));
    let bin = dir.join(name);
    std::fs::write(&c, src).ok()?;
    let built = Command::new("cc")
        .args(flags)
        .arg(&c)
        .arg("-o")
        .arg(&bin)
        .output()
        .is_ok_and(|o| o.status.success());
    if !built {
        return None;
    }
    let out = Command::new(&bin).env(env.0, env.1).output().ok()?;
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// [`run_probe`] under ThreadSanitizer with `TSAN_OPTIONS=options`.
fn run_tsan_probe(dir: &Path, name: &str, src: &str, options: &str) -> Option<(bool, String)> {
    let flags = ["-fsanitize=thread", "-pthread", "-g"];
    run_probe(dir, name, src, &flags, ("TSAN_OPTIONS", options))
}

/// Whether `cc -fsanitize=thread` builds programs that run here and, with `options`,
/// still reports a data race in the C code (so a clean run means something). Prints why
/// not otherwise.
fn have_tsan(dir: &Path, options: &str) -> bool {
    const CLEAN: &str = "#include <pthread.h>\n\
        static int x;\n\
        static void* f(void* a) { (void)a; x++; return 0; }\n\
        int main(void) { pthread_t t; pthread_create(&t, 0, f, 0); pthread_join(t, 0); \
        return x == 1 ? 0 : 1; }\n";
    const RACY: &str = "#include <pthread.h>\n\
        #include <unistd.h>\n\
        static int x;\n\
        static void* f(void* a) { (void)a; x++; return 0; }\n\
        int main(void) { pthread_t t; pthread_create(&t, 0, f, 0); x++; usleep(10000); \
        pthread_join(t, 0); return 0; }\n";
    match run_tsan_probe(dir, "tsan_clean", CLEAN, options) {
        None => {
            eprintln!("SKIP: `cc -fsanitize=thread` does not build a program here (no libtsan)");
            return false;
        }
        Some((false, err)) => {
            eprintln!("SKIP: ThreadSanitizer programs do not run here:\n{err}");
            return false;
        }
        Some((true, _)) => {}
    }
    let reported = run_tsan_probe(dir, "tsan_racy", RACY, options)
        .is_some_and(|(ok, err)| !ok && err.contains("ThreadSanitizer: data race"));
    if !reported {
        eprintln!("SKIP: ThreadSanitizer does not report a plain data race here");
    }
    reported
}

/// The multi-threaded test (close and reopen under concurrent calls) under ThreadSanitizer.
///
/// Only the C side is instrumented: libmezzanine is an ordinary Rust build (an instrumented
/// one needs a nightly toolchain with `-Zsanitizer=thread` and `-Zbuild-std`). TSan cannot
/// see the library's synchronization (atomics, futex-based locks, `Arc` counts), yet its
/// interceptors record the library's `malloc`, `free`, `memcpy`, `pread` and the like:
/// without the option below the first run reports a "race" between a `Box` allocated on a
/// writer thread and freed by the library's log-window thread it was handed to, and a
/// recycled block buffer refilled by `pread` would "race" with C code that read an
/// iterator key from it before. Suppressions cannot say "both sides in the library" (a
/// `race:libmezzanine.so` rule also hides races between the test's code and the library),
/// so `ignore_noninstrumented_modules=1` makes the interceptors skip calls made from the
/// library instead. What TSan then checks is sound: every access the C code makes (the
/// test's threads, its shared state, the buffers it passes in and reads back) against the
/// happens-before it can see (pthreads, C11 atomics, and the start and join of the
/// library's threads); the test synchronizes its own state itself, needing none of the
/// library's. Races inside the library are not checked here. `have_tsan` checks that these
/// options still report a race in C code.
#[test]
fn c_threads_test_passes_under_thread_sanitizer() {
    const TSAN_OPTIONS: &str = "ignore_noninstrumented_modules=1:halt_on_error=1:\
        second_deadlock_stack=1:history_size=4";
    if !have_cc() {
        return;
    }
    let out = tempfile::tempdir().expect("build dir");
    if !have_tsan(out.path(), TSAN_OPTIONS) {
        return;
    }
    let lib = lib_dir();
    let flags = ["-fsanitize=thread", "-fno-omit-frame-pointer"];
    let bin = compile(
        "c_threads_test",
        out.path(),
        "-tsan",
        &flags,
        &shared_link(&lib),
    );
    run(&bin, &[("TSAN_OPTIONS", TSAN_OPTIONS)]);
}
