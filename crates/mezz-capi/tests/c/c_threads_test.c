/* One leveldb_t shared by threads (puts, deletes, batches, gets, snapshots, iterators,
 * property and size queries, flushes, compact_range) while the main thread closes it and
 * at once opens the directory again, for several rounds. Why: leveldb_close once returned
 * while a compact_range on another thread was still working, and the reopen lost tables.
 * Checked here, as the close contract states it:
 * - leveldb_close returns only after every call that began before it has finished (or
 *   failed with a "closed" error), and releases the LOCK, so the immediate reopen works;
 * - every write a call acknowledged (errptr left NULL) reads back after the reopen, by
 *   leveldb_get and by a full scan (a write whose call failed may or may not be there);
 * - a call that begins after leveldb_close returned, through the pointer the threads
 *   still hold, fails with a "closed" error (never a crash, never the reopened database);
 * - an iterator made before the close fails with a "closed" error at its next
 *   positioning call (or sooner: one caught between leveldb_iter_valid and
 *   leveldb_iter_key/value by a close gives NULL there, then that error);
 * - no call hangs (a close that does not return in MAX_CLOSE_MS fails the test);
 * - a leveldb_close while another thread's close of the handle runs returns only once that
 *   close has finished, so its thread can reopen at once (phase concurrent_close).
 * Each writer thread owns its keys and models them (last acknowledged update, plus the
 * failed ones that may have landed); values name their key and version. Bounded by
 * counts: ROUNDS rounds of about OPS_PER_ROUND operations.
 * Usage: c_threads_test <scratch dir> */
#define _POSIX_C_SOURCE 200809L
#include "mezzanine/c.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

enum {
  WRITERS = 3,                 /* threads owning keys */
  THREADS = WRITERS + 1,       /* plus one flushing and compacting */
  KEYS = 128,                  /* keys per writer */
  ROUNDS = 40,                 /* closes and reopens (many short rounds: more races) */
  OPS_PER_ROUND = 100,         /* writer operations before the main thread closes */
  MAX_WAIT_STEPS = 20000,      /* 100 us steps the main thread waits for a moment to close */
  MAX_OPS_PER_ROUND = 1000000, /* a thread gives up (fails) if no close comes */
  OPS_AFTER_CLOSED = 100,      /* calls a thread makes once one failed "closed"; then it waits */
  MAX_CLOSE_MS = 60000,        /* how long leveldb_close may take before the test fails */
  VALUE_PAD = 400,             /* values are 24..~420 bytes: memtables fill and flush */
};

/* What a writer knows about one of its keys. Versions count up per writer; each update
 * (put or delete) gets the next one, and a put's value names its version. */
typedef struct {
  int present;       /* the last acknowledged update was a put */
  unsigned acked;    /* its version (0: none yet) */
  unsigned floor;    /* a value with a version <= floor other than `acked` is wrong */
  unsigned failed;   /* highest version of a failed put since, 0 if none */
  int failed_delete; /* a delete failed since: the key may be absent */
} KeyState;

typedef struct {
  int id;
  uint64_t rng;
  unsigned next_version;
  KeyState keys[KEYS];
  leveldb_writebatch_t* batch;
  leveldb_readoptions_t* ro;
  leveldb_writeoptions_t* wo;
  unsigned long acked_writes; /* for the summary line */
} Writer;

/* Shared between the threads. The handle and round are written by the main thread only
 * while every other thread waits at a barrier. */
static pthread_barrier_t round_start, round_ready, round_end;
static leveldb_t* round_db;
static int round_no;
static int stopping;
/* The last round whose handle leveldb_close has returned for (-1: none yet). A call that
 * begins after a thread sees its round here must fail. */
static atomic_int closed_round = -1;
static atomic_long round_ops;      /* writer operations this round */
static atomic_int compactor_state; /* 0 idle, 1 in mezzanine_flush, 2 in compact_range */
static atomic_long compactor_calls;
static atomic_long racing_failures; /* calls that raced with a close and failed */
static atomic_long torn_scans;      /* scans whose entry a close emptied mid-read */
static _Thread_local int saw_closed; /* this thread's call failed "closed" this round */

static Writer writers[WRITERS];

static uint64_t Next(uint64_t* s) {
  /* xorshift64* */
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

static void Fail(const char* what, int thread, const char* detail) {
  fprintf(stderr, "c_threads_test: thread %d: %s%s%s\n", thread, what,
          detail ? ": " : "", detail ? detail : "");
  abort();
}

static size_t MakeKey(char* buf, size_t cap, int writer, int key) {
  return (size_t)snprintf(buf, cap, "t%d-k%04d", writer, key);
}

static size_t MakeValue(char* buf, size_t cap, int writer, int key, unsigned version) {
  int n = snprintf(buf, cap, "t%d-k%04d-v%08u-", writer, key, version);
  size_t len = (size_t)n + version % VALUE_PAD;
  CheckCondition(len < cap);
  memset(buf + n, 'a' + (int)(version % 26), len - (size_t)n);
  return len;
}

/* Whether an error is the closed error: the registry's ("... not an open database
 * (closed, or never opened)") or the engine's ("... database is closed"). */
static int IsClosedError(const char* err) {
  return err != NULL && strstr(err, "closed") != NULL;
}

/* Checks the outcome `err` of a call. If the handle was closed before the call began
 * (`closed_before`), the call must have failed with the closed error; otherwise it may
 * have raced with the close, and must have succeeded or failed with the closed error.
 * Frees *err. Returns whether the call succeeded. */
static int Outcome(int thread, char** err, int closed_before, const char* call) {
  if (closed_before) {
    if (*err == NULL) Fail("a call on the closed handle succeeded", thread, call);
    if (!IsClosedError(*err))
      Fail("a call on the closed handle failed without \"closed\"", thread, *err);
  } else if (*err != NULL && !IsClosedError(*err)) {
    fprintf(stderr, "c_threads_test: thread %d: %s failed: %s\n", thread, call, *err);
    abort();
  }
  if (*err == NULL) return 1;
  if (!closed_before) atomic_fetch_add(&racing_failures, 1);
  saw_closed = 1;
  leveldb_free(*err);
  *err = NULL;
  return 0;
}

/* Checks a read of key `k` of writer `w` (NULL: absent) against the model. */
static void CheckRead(const Writer* w, int k, const char* v, size_t n, const char* where) {
  const KeyState* s = &w->keys[k];
  char expect[512], text[512];
  unsigned version;
  int wi, ki, used = 0;
  if (v == NULL) {
    if (s->present && !s->failed_delete) {
      fprintf(stderr,
              "c_threads_test: %s: t%d-k%04d is missing; version %u was acknowledged\n",
              where, w->id, k, s->acked);
      abort();
    }
    return;
  }
  /* Values and keys from the library are not NUL-terminated. */
  memcpy(text, v, n < sizeof(text) ? n : sizeof(text) - 1);
  text[n < sizeof(text) ? n : sizeof(text) - 1] = 0;
  if (sscanf(text, "t%d-k%d-v%u-%n", &wi, &ki, &version, &used) != 3 || used == 0 ||
      wi != w->id || ki != k ||
      !((s->present && version == s->acked) || (version > s->floor && version <= s->failed)) ||
      n != MakeValue(expect, sizeof(expect), w->id, k, version) || memcmp(v, expect, n) != 0) {
    fprintf(stderr,
            "c_threads_test: %s: t%d-k%04d reads '%.40s' (%zu bytes); model: %s version %u, "
            "floor %u, failed puts up to %u%s\n",
            where, w->id, k, text, n, s->present ? "put" : "absent/deleted", s->acked, s->floor,
            s->failed, s->failed_delete ? ", a failed delete" : "");
    abort();
  }
}

/* Records the outcome of an update of key k with `version`. */
static void Record(Writer* w, int k, unsigned version, int is_put, int ok) {
  KeyState* s = &w->keys[k];
  if (ok) {
    s->present = is_put;
    s->acked = version;
    s->floor = version;
    s->failed = 0;
    s->failed_delete = 0;
    w->acked_writes++;
  } else if (is_put) {
    s->failed = version;
  } else {
    s->failed_delete = 1;
  }
}

/* After a verified reopen: what was read is now the state of the key. */
static void Resolve(Writer* w, int k, const char* v, size_t n) {
  KeyState* s = &w->keys[k];
  unsigned version = 0;
  if (v != NULL) {
    char text[64];
    memcpy(text, v, n < sizeof(text) ? n : sizeof(text) - 1);
    text[n < sizeof(text) ? n : sizeof(text) - 1] = 0;
    CheckCondition(sscanf(text, "t%*d-k%*d-v%u-", &version) == 1);
  }
  s->present = v != NULL;
  s->acked = version;
  s->floor = w->next_version; /* every version so far: only `acked` may show up */
  s->failed = 0;
  s->failed_delete = 0;
}

/* Scans the writer's own keys with `it` (already made on the handle) and checks every
 * entry; if the scan ends cleanly, keys it did not see must be allowed to be absent. */
static void ScanOwn(Writer* w, leveldb_iterator_t* it, int closed_before) {
  char lo[32], prefix[16], text[32];
  int seen[KEYS];
  char* err = NULL;
  size_t pl = (size_t)snprintf(prefix, sizeof(prefix), "t%d-k", w->id);
  memset(seen, 0, sizeof(seen));
  MakeKey(lo, sizeof(lo), w->id, 0);
  leveldb_iter_seek(it, lo, strlen(lo));
  for (; leveldb_iter_valid(it); leveldb_iter_next(it)) {
    size_t kl, vl;
    const char* k = leveldb_iter_key(it, &kl);
    const char* v = leveldb_iter_value(it, &vl);
    char key[32];
    int ki;
    if (k == NULL || v == NULL) {
      /* A close began since leveldb_iter_valid: the iterator turned invalid at once (the
       * engine's rule: what it points into may belong to the next handle). That must be
       * all it did: no made-up key or value, and the scan ends with the closed error. */
      CheckCondition(!leveldb_iter_valid(it));
      if (closed_before) Fail("an iterator moved on the closed handle", w->id, NULL);
      leveldb_iter_get_error(it, &err);
      if (!IsClosedError(err)) Fail("an entry vanished without a closed error", w->id, err);
      Outcome(w->id, &err, 0, "iterator scan");
      atomic_fetch_add(&torn_scans, 1);
      return;
    }
    if (kl < pl || memcmp(k, prefix, pl) != 0) break; /* past the writer's keys */
    CheckCondition(kl < sizeof(text));
    memcpy(text, k, kl);
    text[kl] = 0;
    CheckCondition(sscanf(text + pl, "%d", &ki) == 1 && ki >= 0 && ki < KEYS);
    CheckCondition(kl == MakeKey(key, sizeof(key), w->id, ki) && memcmp(k, key, kl) == 0);
    CheckCondition(!seen[ki]);
    seen[ki] = 1;
    CheckRead(w, ki, v, vl, "scan of own keys");
  }
  leveldb_iter_get_error(it, &err);
  if (!Outcome(w->id, &err, closed_before, "iterator scan")) return;
  for (int k = 0; k < KEYS; k++)
    if (!seen[k]) CheckRead(w, k, NULL, 0, "scan of own keys");
}

/* One random operation of writer w on db (round r). */
static void WriterOp(Writer* w, leveldb_t* db, int r) {
  char key[32], val[512];
  char* err = NULL;
  int closed_before = atomic_load(&closed_round) >= r;
  int k = (int)(Next(&w->rng) % KEYS);
  unsigned op = (unsigned)(Next(&w->rng) % 100);
  size_t kl = MakeKey(key, sizeof(key), w->id, k);
  if (op < 40) {
    unsigned version = w->next_version++;
    size_t vl = MakeValue(val, sizeof(val), w->id, k, version);
    leveldb_put(db, w->wo, key, kl, val, vl, &err);
    Record(w, k, version, 1, Outcome(w->id, &err, closed_before, "leveldb_put"));
  } else if (op < 50) {
    unsigned version = w->next_version++;
    leveldb_delete(db, w->wo, key, kl, &err);
    Record(w, k, version, 0, Outcome(w->id, &err, closed_before, "leveldb_delete"));
  } else if (op < 65) {
    /* Three keys, the middle one deleted, atomically. */
    unsigned first = w->next_version;
    int ks[3] = {k, (k + 1) % KEYS, (k + 2) % KEYS};
    int ok;
    leveldb_writebatch_clear(w->batch);
    for (int i = 0; i < 3; i++) {
      kl = MakeKey(key, sizeof(key), w->id, ks[i]);
      if (i == 1) {
        leveldb_writebatch_delete(w->batch, key, kl);
      } else {
        size_t vl = MakeValue(val, sizeof(val), w->id, ks[i], first + (unsigned)i);
        leveldb_writebatch_put(w->batch, key, kl, val, vl);
      }
    }
    w->next_version += 3;
    leveldb_write(db, w->wo, w->batch, &err);
    ok = Outcome(w->id, &err, closed_before, "leveldb_write");
    for (int i = 0; i < 3; i++) Record(w, ks[i], first + (unsigned)i, i != 1, ok);
  } else if (op < 82) {
    size_t vl = 99;
    char* v = leveldb_get(db, w->ro, key, kl, &vl, &err);
    if (Outcome(w->id, &err, closed_before, "leveldb_get")) {
      if (v == NULL) CheckCondition(vl == 0);
      CheckRead(w, k, v, vl, "leveldb_get");
    } else {
      CheckCondition(v == NULL && vl == 0);
    }
    leveldb_free(v);
  } else if (op < 90) {
    leveldb_iterator_t* it = leveldb_create_iterator(db, w->ro);
    CheckCondition(it != NULL);
    ScanOwn(w, it, closed_before);
    leveldb_iter_destroy(it);
  } else if (op < 95) {
    /* A snapshot taken before a put still reads the value from before it. */
    const leveldb_snapshot_t* snap = leveldb_create_snapshot(db);
    if (closed_before) CheckCondition(snap == NULL);
    if (snap != NULL) {
      KeyState before = w->keys[k];
      unsigned version = w->next_version++;
      size_t vl = MakeValue(val, sizeof(val), w->id, k, version);
      leveldb_readoptions_t* sro = leveldb_readoptions_create();
      char* v;
      leveldb_readoptions_set_snapshot(sro, snap);
      leveldb_put(db, w->wo, key, kl, val, vl, &err);
      Record(w, k, version, 1, Outcome(w->id, &err, 0, "leveldb_put"));
      vl = 99;
      v = leveldb_get(db, sro, key, kl, &vl, &err);
      if (Outcome(w->id, &err, 0, "leveldb_get at a snapshot")) {
        KeyState after = w->keys[k];
        w->keys[k] = before;
        CheckRead(w, k, v, vl, "leveldb_get at a snapshot");
        w->keys[k] = after;
      }
      leveldb_free(v);
      leveldb_readoptions_destroy(sro);
      leveldb_release_snapshot(db, snap);
    }
  } else if (op < 98) {
    static const char* const props[] = {"leveldb.stats", "leveldb.num-files-at-level0",
                                        "leveldb.sstables", "leveldb.approximate-memory-usage"};
    char* p = leveldb_property_value(db, props[op % 4]);
    if (closed_before && p != NULL) Fail("leveldb_property_value on the closed handle", w->id, p);
    leveldb_free(p);
  } else {
    const char* starts[1] = {"t"};
    const char* limits[1] = {"u"};
    size_t lens[1] = {1};
    uint64_t sizes[1] = {12345};
    leveldb_approximate_sizes(db, 1, starts, lens, limits, lens, sizes);
    if (closed_before) CheckCondition(sizes[0] == 0);
    /* Writers compact their own key range now and then too. */
    if (op == 99) {
      char lo[32], hi[32];
      size_t ll = MakeKey(lo, sizeof(lo), w->id, 0);
      size_t hl = MakeKey(hi, sizeof(hi), w->id, KEYS - 1);
      leveldb_compact_range(db, lo, ll, hi, hl);
    }
  }
}

/* Counts a call of round r; once calls fail "closed", a few more race with the close,
 * then the thread waits for leveldb_close to return (bounded: a hang fails the test). */
static void AfterCall(int thread, int r, long* calls, long* calls_after_closed) {
  struct timespec ms = {0, 1000 * 1000};
  if (++*calls > MAX_OPS_PER_ROUND)
    Fail("the main thread never closed the database", thread, NULL);
  if (!saw_closed || ++*calls_after_closed < OPS_AFTER_CLOSED) return;
  for (int i = 0; i < MAX_CLOSE_MS && atomic_load(&closed_round) < r; i++) nanosleep(&ms, NULL);
  if (atomic_load(&closed_round) < r) Fail("leveldb_close did not return", thread, NULL);
}

/* What every call through a closed handle must do: fail with the closed error. */
static void CheckClosedHandle(int thread, leveldb_t* db, leveldb_readoptions_t* ro,
                              leveldb_writeoptions_t* wo, leveldb_writebatch_t* batch) {
  char* err = NULL;
  size_t vl = 99;
  uint64_t sizes[1] = {12345};
  const char* starts[1] = {"a"};
  const char* limits[1] = {"z"};
  size_t lens[1] = {1};
  leveldb_iterator_t* it;
  leveldb_put(db, wo, "x", 1, "y", 1, &err);
  Outcome(thread, &err, 1, "leveldb_put after close");
  leveldb_delete(db, wo, "x", 1, &err);
  Outcome(thread, &err, 1, "leveldb_delete after close");
  leveldb_writebatch_clear(batch);
  leveldb_writebatch_put(batch, "x", 1, "y", 1);
  leveldb_write(db, wo, batch, &err);
  Outcome(thread, &err, 1, "leveldb_write after close");
  CheckCondition(leveldb_get(db, ro, "x", 1, &vl, &err) == NULL && vl == 0);
  Outcome(thread, &err, 1, "leveldb_get after close");
  mezzanine_flush(db, &err);
  Outcome(thread, &err, 1, "mezzanine_flush after close");
  it = leveldb_create_iterator(db, ro);
  CheckCondition(it != NULL);
  leveldb_iter_seek_to_first(it);
  CheckCondition(!leveldb_iter_valid(it));
  leveldb_iter_get_error(it, &err);
  Outcome(thread, &err, 1, "leveldb_create_iterator after close");
  leveldb_iter_destroy(it);
  CheckCondition(leveldb_create_snapshot(db) == NULL);
  {
    char* p = leveldb_property_value(db, "leveldb.stats");
    if (p != NULL) Fail("leveldb_property_value on the closed handle", thread, p);
  }
  leveldb_approximate_sizes(db, 1, starts, lens, limits, lens, sizes);
  CheckCondition(sizes[0] == 0);
  leveldb_compact_range(db, NULL, 0, NULL, 0); /* nothing to report: must just return */
}

/* An iterator made before the close: its next positioning call fails with "closed". */
static void CheckHeldIterator(int thread, leveldb_iterator_t* it) {
  char* err = NULL;
  leveldb_iter_seek_to_first(it);
  if (leveldb_iter_valid(it))
    Fail("an iterator made before close still positions after it", thread, NULL);
  leveldb_iter_get_error(it, &err);
  Outcome(thread, &err, 1, "positioning an iterator made before close");
}

static void* WriterMain(void* arg) {
  Writer* w = arg;
  for (;;) {
    leveldb_t* db;
    leveldb_iterator_t* held;
    int r;
    long ops = 0, ops_after_closed = 0;
    char* err = NULL;
    pthread_barrier_wait(&round_start);
    saw_closed = 0;
    if (stopping) return NULL;
    db = round_db;
    r = round_no;
    /* Made and used while the handle is open; positioned again once it is closed. */
    held = leveldb_create_iterator(db, w->ro);
    leveldb_iter_seek_to_first(held);
    leveldb_iter_get_error(held, &err);
    CheckNoError(err);
    pthread_barrier_wait(&round_ready);
    while (atomic_load(&closed_round) < r) {
      WriterOp(w, db, r);
      atomic_fetch_add(&round_ops, 1);
      AfterCall(w->id, r, &ops, &ops_after_closed);
    }
    /* db is closed now, and maybe already reopened at the same directory. */
    CheckHeldIterator(w->id, held);
    leveldb_iter_destroy(held);
    CheckClosedHandle(w->id, db, w->ro, w->wo, w->batch);
    pthread_barrier_wait(&round_end);
  }
}

static void* CompactorMain(void* arg) {
  int id = *(int*)arg;
  leveldb_readoptions_t* ro = leveldb_readoptions_create();
  leveldb_writeoptions_t* wo = leveldb_writeoptions_create();
  leveldb_writebatch_t* batch = leveldb_writebatch_create();
  for (;;) {
    leveldb_t* db;
    int r;
    long calls = 0, calls_after_closed = 0;
    pthread_barrier_wait(&round_start);
    saw_closed = 0;
    if (stopping) break;
    db = round_db;
    r = round_no;
    pthread_barrier_wait(&round_ready);
    while (atomic_load(&closed_round) < r) {
      char* err = NULL;
      int closed_before = atomic_load(&closed_round) >= r;
      char* p;
      atomic_store(&compactor_state, 1);
      mezzanine_flush(db, &err);
      atomic_store(&compactor_state, 0);
      Outcome(id, &err, closed_before, "mezzanine_flush");
      atomic_store(&compactor_state, 2);
      if (calls % 3 == 2) {
        leveldb_compact_range(db, "t1", 2, "t2~", 3);
      } else {
        leveldb_compact_range(db, NULL, 0, NULL, 0);
      }
      atomic_store(&compactor_state, 0);
      p = leveldb_property_value(db, "leveldb.num-files-at-level1");
      leveldb_free(p);
      atomic_fetch_add(&compactor_calls, 1);
      AfterCall(id, r, &calls, &calls_after_closed);
    }
    CheckClosedHandle(id, db, ro, wo, batch);
    pthread_barrier_wait(&round_end);
  }
  leveldb_writebatch_destroy(batch);
  leveldb_writeoptions_destroy(wo);
  leveldb_readoptions_destroy(ro);
  return NULL;
}

/* Reads every writer key of the reopened db and scans it whole; then takes what was read
 * as the new model. Called while the other threads wait at a barrier. */
static void VerifyReopened(leveldb_t* db, leveldb_readoptions_t* ro, int r) {
  char where[64];
  long present = 0, scanned = 0;
  char* err = NULL;
  leveldb_iterator_t* it;
  snprintf(where, sizeof(where), "after reopen %d", r);
  for (int wi = 0; wi < WRITERS; wi++) {
    Writer* w = &writers[wi];
    for (int k = 0; k < KEYS; k++) {
      char key[32];
      size_t kl = MakeKey(key, sizeof(key), wi, k), vl = 99;
      char* v = leveldb_get(db, ro, key, kl, &vl, &err);
      CheckNoError(err);
      CheckRead(w, k, v, vl, where);
      Resolve(w, k, v, vl);
      present += v != NULL;
      leveldb_free(v);
    }
  }
  /* The scan agrees with the reads (now the model). */
  it = leveldb_create_iterator(db, ro);
  for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it); leveldb_iter_next(it)) {
    size_t kl, vl;
    const char* k = leveldb_iter_key(it, &kl);
    const char* v = leveldb_iter_value(it, &vl);
    char text[32];
    int wi, ki;
    CheckCondition(kl < sizeof(text));
    memcpy(text, k, kl);
    text[kl] = 0;
    CheckCondition(sscanf(text, "t%d-k%d", &wi, &ki) == 2 && wi >= 0 && wi < WRITERS &&
                   ki >= 0 && ki < KEYS);
    CheckCondition(writers[wi].keys[ki].present);
    CheckRead(&writers[wi], ki, v, vl, where);
    scanned++;
  }
  leveldb_iter_get_error(it, &err);
  CheckNoError(err);
  leveldb_iter_destroy(it);
  if (scanned != present) {
    fprintf(stderr, "c_threads_test: %s: a scan saw %ld keys, reads found %ld\n", where,
            scanned, present);
    abort();
  }
}

/* concurrent_close: one thread compacts, one closes at once, the main thread closes too. */
typedef struct {
  leveldb_t* db;
  pthread_barrier_t go;
  long delay_us;
} ConcurrentClose;

static void SleepUs(long us) {
  struct timespec t = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&t, NULL);
}

static void* CompactAll(void* arg) {
  ConcurrentClose* cc = arg;
  pthread_barrier_wait(&cc->go);
  leveldb_compact_range(cc->db, NULL, 0, NULL, 0);
  return NULL;
}

static void* CloseFirst(void* arg) {
  ConcurrentClose* cc = arg;
  pthread_barrier_wait(&cc->go);
  SleepUs(cc->delay_us);
  leveldb_close(cc->db);
  return NULL;
}

static leveldb_t* Open(leveldb_options_t* o, const char* path, int r) {
  char* err = NULL;
  leveldb_t* db = leveldb_open(o, path, &err);
  if (err != NULL) {
    fprintf(stderr, "c_threads_test: reopen %d right after close failed: %s\n", r, err);
    abort();
  }
  CheckCondition(db != NULL);
  return db;
}

/* Waits (a bounded number of 100 us steps) until `done` says so. */
static void WaitFor(int (*done)(int), int arg) {
  struct timespec step = {0, 100 * 1000};
  for (int i = 0; i < MAX_WAIT_STEPS && !done(arg); i++) nanosleep(&step, NULL);
}
static int EnoughOps(int unused) {
  (void)unused;
  return atomic_load(&round_ops) >= OPS_PER_ROUND;
}
static int CompactorIn(int state) { return state == 0 || atomic_load(&compactor_state) == state; }

int main(int argc, char** argv) {
  char* path;
  leveldb_options_t* options;
  leveldb_readoptions_t* ro;
  leveldb_writeoptions_t* wo;
  leveldb_writebatch_t* batch;
  leveldb_t* db;
  pthread_t threads[THREADS];
  int compactor_id = WRITERS;
  char* err = NULL;
  unsigned long acked = 0;

  if (argc != 2) {
    fprintf(stderr, "usage: %s <scratch dir>\n", argv[0]);
    return 2;
  }
  path = strdup(PathIn(argv[1], "threads_db"));
  options = leveldb_options_create();
  leveldb_options_set_create_if_missing(options, 1);
  /* Small memtables and files: flushes and compactions happen within a round. */
  leveldb_options_set_write_buffer_size(options, 64 << 10);
  leveldb_options_set_max_file_size(options, 64 << 10);
  ro = leveldb_readoptions_create();
  wo = leveldb_writeoptions_create();
  batch = leveldb_writebatch_create();
  leveldb_destroy_db(options, path, &err);
  CheckNoError(err);

  StartPhase("value_encoding");
  {
    char v[512];
    size_t n = MakeValue(v, sizeof(v), 2, 7, 1);
    CheckEqual("t2-k0007-v00000001-b", v, n);
  }

  StartPhase("threads_close_reopen");
  CheckCondition(pthread_barrier_init(&round_start, NULL, THREADS + 1) == 0);
  CheckCondition(pthread_barrier_init(&round_ready, NULL, THREADS + 1) == 0);
  CheckCondition(pthread_barrier_init(&round_end, NULL, THREADS + 1) == 0);
  for (int i = 0; i < WRITERS; i++) {
    Writer* w = &writers[i];
    w->id = i;
    w->rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1);
    w->next_version = 1;
    w->batch = leveldb_writebatch_create();
    w->ro = leveldb_readoptions_create();
    w->wo = leveldb_writeoptions_create();
    CheckCondition(pthread_create(&threads[i], NULL, WriterMain, w) == 0);
  }
  CheckCondition(pthread_create(&threads[WRITERS], NULL, CompactorMain, &compactor_id) == 0);

  db = Open(options, path, 0);
  for (int r = 0; r < ROUNDS; r++) {
    leveldb_t* old = db;
    round_db = db;
    round_no = r;
    atomic_store(&round_ops, 0);
    pthread_barrier_wait(&round_start);
    pthread_barrier_wait(&round_ready);
    /* Close in the middle of the traffic; in most rounds while the compactor thread is
     * inside a flush or a compact_range. */
    WaitFor(EnoughOps, 0);
    WaitFor(CompactorIn, r % 3);
    leveldb_close(old);
    atomic_store(&closed_round, r);
    db = Open(options, path, r + 1); /* at once: the other threads may still be calling */
    pthread_barrier_wait(&round_end);
    VerifyReopened(db, ro, r + 1);
    fprintf(stderr, "round %d: %ld writer ops, compactor at %ld calls\n", r,
            atomic_load(&round_ops), atomic_load(&compactor_calls));
  }
  stopping = 1;
  pthread_barrier_wait(&round_start);
  for (int i = 0; i < THREADS; i++) CheckCondition(pthread_join(threads[i], NULL) == 0);

  /* The models survive a last quiet close and reopen too. */
  leveldb_close(db);
  CheckClosedHandle(-1, db, ro, wo, batch);
  db = Open(options, path, ROUNDS + 1);
  VerifyReopened(db, ro, ROUNDS + 1);
  leveldb_close(db);

  for (int i = 0; i < WRITERS; i++) {
    acked += writers[i].acked_writes;
    leveldb_writebatch_destroy(writers[i].batch);
    leveldb_readoptions_destroy(writers[i].ro);
    leveldb_writeoptions_destroy(writers[i].wo);
  }
  fprintf(stderr,
          "%lu acknowledged updates; %ld calls raced with a close and failed; %ld scans saw "
          "a close between valid and key/value\n",
          acked, atomic_load(&racing_failures), atomic_load(&torn_scans));
  pthread_barrier_destroy(&round_start);
  pthread_barrier_destroy(&round_ready);
  pthread_barrier_destroy(&round_end);
  leveldb_destroy_db(options, path, &err);
  CheckNoError(err);

  StartPhase("concurrent_close");
  /* Two threads close one handle while a third runs a compact_range: the close that comes
   * second (the main thread's, mostly) returns only once the first has finished and
   * released the LOCK, so the main thread can reopen at once. */
  for (int i = 0; i < 10; i++) {
    ConcurrentClose cc;
    pthread_t t[2];
    char key[16];
    char val[100];
    memset(val, 'v', sizeof(val));
    cc.db = Open(options, path, i);
    cc.delay_us = 200L * i;
    for (int k = 0; k < 2000; k++) {
      snprintf(key, sizeof(key), "z%05d", k);
      leveldb_put(cc.db, wo, key, strlen(key), val, sizeof(val), &err);
      CheckNoError(err);
    }
    CheckCondition(pthread_barrier_init(&cc.go, NULL, 3) == 0);
    CheckCondition(pthread_create(&t[0], NULL, CompactAll, &cc) == 0);
    CheckCondition(pthread_create(&t[1], NULL, CloseFirst, &cc) == 0);
    pthread_barrier_wait(&cc.go);
    SleepUs(cc.delay_us + 500);
    leveldb_close(cc.db);
    db = leveldb_open(options, path, &err);
    if (err != NULL) {
      fprintf(stderr, "c_threads_test: attempt %d: open after a concurrent close failed: %s\n", i,
              err);
      abort();
    }
    leveldb_close(db);
    for (int j = 0; j < 2; j++) CheckCondition(pthread_join(t[j], NULL) == 0);
    pthread_barrier_destroy(&cc.go);
  }
  leveldb_destroy_db(options, path, &err);
  CheckNoError(err);
  leveldb_writebatch_destroy(batch);
  leveldb_writeoptions_destroy(wo);
  leveldb_readoptions_destroy(ro);
  leveldb_options_destroy(options);
  free(path);
  fprintf(stderr, "PASS\n");
  return 0;
}
