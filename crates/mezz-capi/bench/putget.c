/* A put/get benchmark written against LevelDB's C API only, so the same source links to
 * libmezzanine or to LevelDB (-lleveldb). Keys and values as db_bench makes them: 16-byte
 * zero-padded decimal keys, values from a buffer of random printable bytes.
 *
 *   putget <db dir> [num] [value size] [engine label]
 *
 * Runs, each on a fresh database under <db dir>: fillseq then readrandom; fillrandom then
 * readrandom. num operations per phase (random keys uniform in [0, num), with
 * replacement, as db_bench). Prints one JSON object per phase on stdout:
 *   {"engine":..., "benchmark":..., "ops":..., "elapsed_secs":..., "ops_per_sec":..., ...}
 * The options are set identically for every engine: no compression, 64 MiB write buffer
 * and table size, 8 MiB block cache, 10 bloom bits per key (the mezzanine defaults). */
#define _POSIX_C_SOURCE 200809L
#include "leveldb/c.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEY_SIZE 16

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift64*: the same sequence on every run. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t Next(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1Dull;
}

static void Key(uint64_t n, char* out) {
  int i;
  for (i = KEY_SIZE - 1; i >= 0; i--) {
    out[i] = (char)('0' + n % 10);
    n /= 10;
  }
}

static void Die(const char* what, char* err) {
  fprintf(stderr, "putget: %s: %s\n", what, err ? err : "failed");
  exit(1);
}

static const char* engine = "unknown";

static void Report(const char* bench, long num, double secs, long found,
                   size_t value_size) {
  printf("{\"engine\":\"%s\",\"benchmark\":\"%s\",\"ops\":%ld,\"value_size\":%zu,"
         "\"key_size\":%d,\"elapsed_secs\":%.6f,\"ops_per_sec\":%.1f,"
         "\"micros_per_op\":%.4f,\"found\":%ld}\n",
         engine, bench, num, value_size, KEY_SIZE, secs, num / secs,
         secs * 1e6 / num, found);
  fflush(stdout);
}

static leveldb_t* OpenFresh(leveldb_options_t* options, const char* path) {
  char* err = NULL;
  leveldb_t* db;
  leveldb_destroy_db(options, path, &err);
  if (err) Die("destroy", err);
  db = leveldb_open(options, path, &err);
  if (err) Die("open", err);
  return db;
}

static void Fill(leveldb_t* db, const char* name, int random, long num,
                 const char* values, size_t value_size, size_t buf_size) {
  leveldb_writeoptions_t* wo = leveldb_writeoptions_create();
  char key[KEY_SIZE];
  char* err = NULL;
  size_t off = 0;
  long i;
  double start = Now();
  for (i = 0; i < num; i++) {
    uint64_t k = random ? Next() % (uint64_t)num : (uint64_t)i;
    Key(k, key);
    if (off + value_size > buf_size) off = 0;
    leveldb_put(db, wo, key, KEY_SIZE, values + off, value_size, &err);
    if (err) Die("put", err);
    off += value_size;
  }
  Report(name, num, Now() - start, 0, value_size);
  leveldb_writeoptions_destroy(wo);
}

static void ReadRandom(leveldb_t* db, long num, size_t value_size) {
  leveldb_readoptions_t* ro = leveldb_readoptions_create();
  char key[KEY_SIZE];
  char* err = NULL;
  long i, found = 0;
  double start = Now();
  for (i = 0; i < num; i++) {
    size_t len;
    char* v;
    Key(Next() % (uint64_t)num, key);
    v = leveldb_get(db, ro, key, KEY_SIZE, &len, &err);
    if (err) Die("get", err);
    if (v) {
      found++;
      leveldb_free(v);
    }
  }
  Report("readrandom", num, Now() - start, found, value_size);
  leveldb_readoptions_destroy(ro);
}

int main(int argc, char** argv) {
  long num = argc > 2 ? atol(argv[2]) : 1000000;
  size_t value_size = argc > 3 ? (size_t)atol(argv[3]) : 100;
  size_t buf_size = value_size > (1u << 20) ? value_size : (1u << 20);
  char* values;
  char path[4096];
  size_t i;
  leveldb_options_t* options;
  leveldb_filterpolicy_t* bloom;
  leveldb_cache_t* cache;
  leveldb_t* db;

  if (argc < 2 || num <= 0) {
    fprintf(stderr, "usage: %s <db dir> [num] [value size] [engine label]\n", argv[0]);
    return 2;
  }
  if (argc > 4) engine = argv[4];
  values = malloc(buf_size);
  for (i = 0; i < buf_size; i++) values[i] = (char)(' ' + Next() % 95);

  options = leveldb_options_create();
  bloom = leveldb_filterpolicy_create_bloom(10);
  cache = leveldb_cache_create_lru(8 << 20);
  leveldb_options_set_create_if_missing(options, 1);
  leveldb_options_set_compression(options, leveldb_no_compression);
  leveldb_options_set_write_buffer_size(options, 64 << 20);
  leveldb_options_set_max_file_size(options, 64 << 20);
  leveldb_options_set_filter_policy(options, bloom);
  leveldb_options_set_cache(options, cache);

  snprintf(path, sizeof(path), "%s/putget-seq", argv[1]);
  db = OpenFresh(options, path);
  Fill(db, "fillseq", 0, num, values, value_size, buf_size);
  ReadRandom(db, num, value_size);
  leveldb_close(db);

  snprintf(path, sizeof(path), "%s/putget-random", argv[1]);
  db = OpenFresh(options, path);
  Fill(db, "fillrandom", 1, num, values, value_size, buf_size);
  ReadRandom(db, num, value_size);
  leveldb_close(db);

  leveldb_options_destroy(options);
  leveldb_filterpolicy_destroy(bloom);
  leveldb_cache_destroy(cache);
  free(values);
  return 0;
}
