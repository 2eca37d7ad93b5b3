/* The LevelDB C API as a LevelDB user relies on it: every function of leveldb/c.h, used
 * the way LevelDB's own C test uses it (same option values, same phases), against
 * libmezzanine. Usage: c_api_test <scratch dir> */
#define _POSIX_C_SOURCE 200809L
#include "leveldb/c.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

/* ---- write batch iteration ---- */

static void CheckPut(void* ptr, const char* k, size_t klen, const char* v,
                     size_t vlen) {
  int* state = (int*)ptr;
  CheckCondition(*state < 2);
  switch (*state) {
    case 0:
      CheckEqual("bar", k, klen);
      CheckEqual("b", v, vlen);
      break;
    case 1:
      CheckEqual("box", k, klen);
      CheckEqual("c", v, vlen);
      break;
  }
  (*state)++;
}

static void CheckDel(void* ptr, const char* k, size_t klen) {
  int* state = (int*)ptr;
  CheckCondition(*state == 2);
  CheckEqual("bar", k, klen);
  (*state)++;
}

/* Counts puts and deletes (appended batches). */
static void CountPut(void* ptr, const char* k, size_t klen, const char* v,
                     size_t vlen) {
  (void)k, (void)klen, (void)v, (void)vlen;
  ((int*)ptr)[0]++;
}
static void CountDel(void* ptr, const char* k, size_t klen) {
  (void)k, (void)klen;
  ((int*)ptr)[1]++;
}

/* ---- comparators and filter policies ---- */

static int destroyed_cmp = 0, destroyed_filter = 0;

static void CmpDestroy(void* arg) { (void)arg; destroyed_cmp++; }

/* Bytewise, like LevelDB's test comparator "foo". */
static int CmpCompare(void* arg, const char* a, size_t alen, const char* b,
                      size_t blen) {
  (void)arg;
  size_t n = (alen < blen) ? alen : blen;
  int r = memcmp(a, b, n);
  if (r == 0) {
    if (alen < blen)
      r = -1;
    else if (alen > blen)
      r = +1;
  }
  return r;
}

static int CmpReverse(void* arg, const char* a, size_t alen, const char* b,
                      size_t blen) {
  return -CmpCompare(arg, a, alen, b, blen);
}

static const char* CmpName(void* arg) { (void)arg; return "foo"; }
static const char* CmpReverseName(void* arg) { (void)arg; return "reverse"; }

static int fake_filter_result = 1;
static void FilterDestroy(void* arg) { (void)arg; destroyed_filter++; }
static const char* FilterName(void* arg) { (void)arg; return "TestFilter"; }
static char* FilterCreate(void* arg, const char* const* key_array,
                          const size_t* key_length_array, int num_keys,
                          size_t* filter_length) {
  (void)arg, (void)key_array, (void)key_length_array, (void)num_keys;
  *filter_length = 4;
  char* result = malloc(4);
  memcpy(result, "fake", 4);
  return result;
}
static uint8_t FilterKeyMatch(void* arg, const char* key, size_t length,
                              const char* filter, size_t filter_length) {
  (void)arg, (void)key, (void)length;
  CheckCondition(filter_length == 4);
  CheckCondition(memcmp(filter, "fake", 4) == 0);
  return fake_filter_result;
}

int main(int argc, char** argv) {
  leveldb_t* db;
  leveldb_comparator_t* cmp;
  leveldb_cache_t* cache;
  leveldb_env_t* env;
  leveldb_options_t* options;
  leveldb_readoptions_t* roptions;
  leveldb_writeoptions_t* woptions;
  char* dbname;
  char* err = NULL;
  int run = -1;

  if (argc != 2) {
    fprintf(stderr, "usage: %s <scratch dir>\n", argv[0]);
    return 2;
  }
  dbname = strdup(PathIn(argv[1], "c_api_test_db"));

  StartPhase("versions");
  CheckCondition(leveldb_major_version() >= 1);
  CheckCondition(leveldb_minor_version() >= 1);
  CheckCondition(leveldb_major_version() == 1 && leveldb_minor_version() == 23);

  StartPhase("env");
  env = leveldb_create_default_env();
  {
    char* testdir = leveldb_env_get_test_directory(env);
    struct stat st;
    CheckCondition(testdir != NULL);
    CheckCondition(stat(testdir, &st) == 0 && S_ISDIR(st.st_mode));
    leveldb_free(testdir);
  }

  StartPhase("create_objects");
  cmp = leveldb_comparator_create(NULL, CmpDestroy, CmpCompare, CmpName);
  cache = leveldb_cache_create_lru(100000);

  options = leveldb_options_create();
  leveldb_options_set_comparator(options, cmp);
  leveldb_options_set_error_if_exists(options, 1);
  leveldb_options_set_cache(options, cache);
  leveldb_options_set_env(options, env);
  leveldb_options_set_info_log(options, NULL);
  leveldb_options_set_write_buffer_size(options, 100000);
  leveldb_options_set_paranoid_checks(options, 1);
  leveldb_options_set_max_open_files(options, 10);
  leveldb_options_set_block_size(options, 1024);
  leveldb_options_set_block_restart_interval(options, 8);
  leveldb_options_set_max_file_size(options, 3 << 20);
  leveldb_options_set_compression(options, leveldb_no_compression);

  roptions = leveldb_readoptions_create();
  leveldb_readoptions_set_verify_checksums(roptions, 1);
  leveldb_readoptions_set_fill_cache(roptions, 0);

  woptions = leveldb_writeoptions_create();
  leveldb_writeoptions_set_sync(woptions, 1);

  StartPhase("destroy");
  leveldb_destroy_db(options, dbname, &err);
  CheckNoError(err);

  StartPhase("open_error");
  db = leveldb_open(options, dbname, &err);
  CheckCondition(db == NULL);
  CheckErrorContains(err, "create_if_missing");

  StartPhase("leveldb_free");
  db = leveldb_open(options, dbname, &err);
  CheckCondition(err != NULL);
  leveldb_free(err);
  err = NULL;

  StartPhase("errptr_replaces_previous_message");
  err = malloc(16);
  strcpy(err, "stale message");
  db = leveldb_open(options, dbname, &err);
  CheckCondition(db == NULL);
  CheckErrorContains(err, "create_if_missing");

  StartPhase("open");
  leveldb_options_set_create_if_missing(options, 1);
  db = leveldb_open(options, dbname, &err);
  CheckNoError(err);
  CheckCondition(db != NULL);
  CheckGet(db, roptions, "foo", NULL);

  StartPhase("put");
  leveldb_put(db, woptions, "foo", 3, "hello", 5, &err);
  CheckNoError(err);
  CheckGet(db, roptions, "foo", "hello");

  StartPhase("empty_value_is_not_null");
  {
    size_t len = 99;
    char* v;
    leveldb_put(db, woptions, "empty", 5, "", 0, &err);
    CheckNoError(err);
    v = leveldb_get(db, roptions, "empty", 5, &len, &err);
    CheckNoError(err);
    CheckCondition(v != NULL);
    CheckCondition(len == 0);
    leveldb_free(v);
    leveldb_delete(db, woptions, "empty", 5, &err);
    CheckNoError(err);
    CheckGet(db, roptions, "empty", NULL);
  }

  StartPhase("binary_keys_and_values");
  {
    const char key[] = {'b', 'i', 'n', 0, (char)0xff};
    const char val[] = {0, 1, 2, 0, (char)0x80};
    size_t len = 0;
    char* v;
    leveldb_put(db, woptions, key, sizeof(key), val, sizeof(val), &err);
    CheckNoError(err);
    v = leveldb_get(db, roptions, key, sizeof(key), &len, &err);
    CheckNoError(err);
    CheckCondition(len == sizeof(val) && memcmp(v, val, len) == 0);
    leveldb_free(v);
    leveldb_delete(db, woptions, key, sizeof(key), &err);
    CheckNoError(err);
  }

  StartPhase("compactall");
  leveldb_compact_range(db, NULL, 0, NULL, 0);
  CheckGet(db, roptions, "foo", "hello");

  StartPhase("compactrange");
  leveldb_compact_range(db, "a", 1, "z", 1);
  CheckGet(db, roptions, "foo", "hello");

  StartPhase("writebatch");
  {
    leveldb_writebatch_t* wb = leveldb_writebatch_create();
    leveldb_writebatch_put(wb, "foo", 3, "a", 1);
    leveldb_writebatch_clear(wb);
    leveldb_writebatch_put(wb, "bar", 3, "b", 1);
    leveldb_writebatch_put(wb, "box", 3, "c", 1);

    leveldb_writebatch_t* wb2 = leveldb_writebatch_create();
    leveldb_writebatch_delete(wb2, "bar", 3);
    leveldb_writebatch_append(wb, wb2);
    leveldb_writebatch_destroy(wb2);

    leveldb_write(db, woptions, wb, &err);
    CheckNoError(err);
    CheckGet(db, roptions, "foo", "hello");
    CheckGet(db, roptions, "bar", NULL);
    CheckGet(db, roptions, "box", "c");

    int pos = 0;
    leveldb_writebatch_iterate(wb, &pos, CheckPut, CheckDel);
    CheckCondition(pos == 3);

    /* leveldb_write leaves the batch as it was: it can be written again. */
    leveldb_write(db, woptions, wb, &err);
    CheckNoError(err);
    CheckGet(db, roptions, "box", "c");
    leveldb_writebatch_destroy(wb);
  }

  StartPhase("writebatch_append_to_itself");
  {
    int counts[2] = {0, 0};
    leveldb_writebatch_t* wb = leveldb_writebatch_create();
    leveldb_writebatch_put(wb, "x", 1, "1", 1);
    leveldb_writebatch_delete(wb, "y", 1);
    leveldb_writebatch_append(wb, wb);
    leveldb_writebatch_iterate(wb, counts, CountPut, CountDel);
    CheckCondition(counts[0] == 2 && counts[1] == 2);
    leveldb_writebatch_destroy(wb);
  }

  StartPhase("iter");
  {
    leveldb_iterator_t* iter = leveldb_create_iterator(db, roptions);
    CheckCondition(!leveldb_iter_valid(iter));
    leveldb_iter_seek_to_first(iter);
    CheckCondition(leveldb_iter_valid(iter));
    CheckIter(iter, "box", "c");
    leveldb_iter_next(iter);
    CheckIter(iter, "foo", "hello");
    leveldb_iter_prev(iter);
    CheckIter(iter, "box", "c");
    leveldb_iter_prev(iter);
    CheckCondition(!leveldb_iter_valid(iter));
    leveldb_iter_seek_to_last(iter);
    CheckIter(iter, "foo", "hello");
    leveldb_iter_seek(iter, "b", 1);
    CheckIter(iter, "box", "c");
    leveldb_iter_seek(iter, "foo", 3);
    CheckIter(iter, "foo", "hello");
    leveldb_iter_seek(iter, "zzz", 3);
    CheckCondition(!leveldb_iter_valid(iter));
    leveldb_iter_get_error(iter, &err);
    CheckNoError(err);
    leveldb_iter_destroy(iter);
  }

  StartPhase("iter_sees_a_consistent_snapshot");
  {
    leveldb_iterator_t* iter = leveldb_create_iterator(db, roptions);
    leveldb_put(db, woptions, "cat", 3, "meow", 4, &err);
    CheckNoError(err);
    leveldb_iter_seek_to_first(iter);
    CheckIter(iter, "box", "c");
    leveldb_iter_next(iter);
    CheckIter(iter, "foo", "hello"); /* "cat" was written after the iterator */
    leveldb_iter_destroy(iter);
    leveldb_delete(db, woptions, "cat", 3, &err);
    CheckNoError(err);
  }

  StartPhase("approximate_sizes");
  {
    int i;
    int n = 20000;
    char keybuf[100];
    char valbuf[100];
    uint64_t sizes[2];
    const char* start[2] = {"a", "k00000000000000010000"};
    size_t start_len[2] = {1, 21};
    const char* limit[2] = {"k00000000000000010000", "z"};
    size_t limit_len[2] = {21, 1};
    leveldb_writeoptions_set_sync(woptions, 0);
    for (i = 0; i < n; i++) {
      snprintf(keybuf, sizeof(keybuf), "k%020d", i);
      snprintf(valbuf, sizeof(valbuf), "v%020d", i);
      leveldb_put(db, woptions, keybuf, strlen(keybuf), valbuf, strlen(valbuf),
                  &err);
      CheckNoError(err);
    }
    leveldb_compact_range(db, NULL, 0, NULL, 0);
    leveldb_approximate_sizes(db, 2, start, start_len, limit, limit_len, sizes);
    CheckCondition(sizes[0] > 0);
    CheckCondition(sizes[1] > 0);
    /* A range holding no key uses no space. */
    {
      const char* s[1] = {"y"};
      const char* l[1] = {"z"};
      size_t sl[1] = {1}, ll[1] = {1};
      leveldb_approximate_sizes(db, 1, s, sl, l, ll, sizes);
      CheckCondition(sizes[0] == 0);
    }
  }

  StartPhase("property");
  {
    char* prop = leveldb_property_value(db, "nosuchprop");
    CheckCondition(prop == NULL);
    prop = leveldb_property_value(db, "leveldb.stats");
    CheckCondition(prop != NULL && strlen(prop) > 0);
    leveldb_free(prop);
    prop = leveldb_property_value(db, "leveldb.num-files-at-level0");
    CheckCondition(prop != NULL && atoi(prop) >= 0);
    leveldb_free(prop);
    prop = leveldb_property_value(db, "leveldb.sstables");
    CheckCondition(prop != NULL);
    leveldb_free(prop);
    prop = leveldb_property_value(db, "leveldb.approximate-memory-usage");
    CheckCondition(prop != NULL && atoll(prop) >= 0);
    leveldb_free(prop);
    prop = leveldb_property_value(db, "leveldb.num-files-at-level99");
    CheckCondition(prop == NULL);
  }

  StartPhase("snapshot");
  {
    const leveldb_snapshot_t* snap;
    snap = leveldb_create_snapshot(db);
    CheckCondition(snap != NULL);
    leveldb_delete(db, woptions, "foo", 3, &err);
    CheckNoError(err);
    leveldb_readoptions_set_snapshot(roptions, snap);
    CheckGet(db, roptions, "foo", "hello");
    {
      leveldb_iterator_t* iter = leveldb_create_iterator(db, roptions);
      leveldb_iter_seek(iter, "foo", 3);
      CheckIter(iter, "foo", "hello");
      leveldb_iter_destroy(iter);
    }
    leveldb_readoptions_set_snapshot(roptions, NULL);
    CheckGet(db, roptions, "foo", NULL);
    leveldb_release_snapshot(db, snap);
  }

  StartPhase("repair");
  {
    leveldb_close(db);
    leveldb_options_set_create_if_missing(options, 0);
    leveldb_options_set_error_if_exists(options, 0);
    leveldb_repair_db(options, dbname, &err);
    CheckNoError(err);
    db = leveldb_open(options, dbname, &err);
    CheckNoError(err);
    CheckGet(db, roptions, "foo", NULL);
    CheckGet(db, roptions, "bar", NULL);
    CheckGet(db, roptions, "box", "c");
    CheckGet(db, roptions, "k00000000000000012345", "v00000000000000012345");
    leveldb_options_set_create_if_missing(options, 1);
    leveldb_options_set_error_if_exists(options, 1);
  }

  StartPhase("error_if_exists");
  {
    leveldb_t* db2 = leveldb_open(options, dbname, &err);
    CheckCondition(db2 == NULL);
    CheckErrorContains(err, "");
  }

  StartPhase("filter");
  for (run = 0; run < 2; run++) {
    /* First run uses a custom filter policy (accepted, unused), second a bloom filter. */
    CheckNoError(err);
    leveldb_filterpolicy_t* policy;
    if (run == 0) {
      policy = leveldb_filterpolicy_create(NULL, FilterDestroy, FilterCreate,
                                           FilterKeyMatch, FilterName);
    } else {
      policy = leveldb_filterpolicy_create_bloom(10);
    }

    /* Create new database */
    leveldb_close(db);
    leveldb_destroy_db(options, dbname, &err);
    CheckNoError(err);
    leveldb_options_set_filter_policy(options, policy);
    db = leveldb_open(options, dbname, &err);
    CheckNoError(err);
    leveldb_put(db, woptions, "foo", 3, "foovalue", 8, &err);
    CheckNoError(err);
    leveldb_put(db, woptions, "bar", 3, "barvalue", 8, &err);
    CheckNoError(err);
    leveldb_compact_range(db, NULL, 0, NULL, 0);

    fake_filter_result = 1;
    CheckGet(db, roptions, "foo", "foovalue");
    CheckGet(db, roptions, "bar", "barvalue");
    /* A filter never changes results: absent keys stay absent, present ones present. */
    fake_filter_result = 0;
    CheckGet(db, roptions, "foo", "foovalue");
    CheckGet(db, roptions, "bar", "barvalue");
    CheckGet(db, roptions, "baz", NULL);
    leveldb_options_set_filter_policy(options, NULL);
    leveldb_filterpolicy_destroy(policy);
  }
  CheckCondition(destroyed_filter == 1);

  StartPhase("reverse_comparator");
  {
    /* A database ordered by a comparator that is not bytewise: filled past several
     * flushes, compacted, iterated both ways, sought, reopened. */
    leveldb_comparator_t* rev =
        leveldb_comparator_create(NULL, CmpDestroy, CmpReverse, CmpReverseName);
    leveldb_options_t* o = leveldb_options_create();
    char* other = strdup(PathIn(argv[1], "c_api_test_reverse"));
    leveldb_options_set_create_if_missing(o, 1);
    leveldb_options_set_write_buffer_size(o, 64 << 10);
    leveldb_options_set_comparator(o, rev);
    leveldb_t* d = leveldb_open(o, other, &err);
    CheckNoError(err);
    char k[32], v[64];
    for (int i = 0; i < 4000; i++) {
      snprintf(k, sizeof(k), "k%05d", i);
      snprintf(v, sizeof(v), "value-%05d-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", i);
      leveldb_put(d, woptions, k, strlen(k), v, strlen(v), &err);
      CheckNoError(err);
    }
    leveldb_delete(d, woptions, "k00007", 6, &err);
    CheckNoError(err);
    /* In reverse order "k00100" is above "k00010": the range is [k00100, k00010]. */
    leveldb_compact_range(d, "k00100", 6, "k00010", 6);
    leveldb_compact_range(d, NULL, 0, NULL, 0);
    for (int round = 0; round < 2; round++) {
      CheckGet(d, roptions, "k00000", "value-00000-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
      CheckGet(d, roptions, "k03999", "value-03999-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
      CheckGet(d, roptions, "k00007", NULL);
      leveldb_iterator_t* it = leveldb_create_iterator(d, roptions);
      leveldb_iter_seek_to_first(it);
      CheckIter(it, "k03999", "value-03999-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
      int n = 0;
      char prev[32] = "";
      for (leveldb_iter_seek_to_first(it); leveldb_iter_valid(it); leveldb_iter_next(it)) {
        size_t len;
        const char* key = leveldb_iter_key(it, &len);
        CheckCondition(len < sizeof(prev));
        if (n > 0) CheckCondition(memcmp(key, prev, len) < 0); /* descending */
        memcpy(prev, key, len);
        prev[len] = 0;
        n++;
      }
      CheckCondition(n == 3999);
      leveldb_iter_seek_to_last(it);
      CheckIter(it, "k00000", "value-00000-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
      leveldb_iter_prev(it);
      CheckIter(it, "k00001", "value-00001-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
      /* Seek lands on the first key at or after the target in the database's order. */
      leveldb_iter_seek(it, "k00007", 6);
      CheckIter(it, "k00006", "value-00006-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
      leveldb_iter_seek(it, "k000095", 7);
      CheckIter(it, "k00009", "value-00009-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
      leveldb_iter_destroy(it);
      leveldb_close(d);
      d = leveldb_open(o, other, &err);
      CheckNoError(err);
    }
    leveldb_close(d);
    /* Another comparator name is refused, as LevelDB refuses it. */
    leveldb_options_set_comparator(o, cmp);
    d = leveldb_open(o, other, &err);
    CheckCondition(d == NULL);
    CheckCondition(err != NULL && strstr(err, "reverse") != NULL);
    CheckErrorContains(err, "comparator name mismatch");
    leveldb_options_destroy(o);
    leveldb_comparator_destroy(rev);
    free(other);
  }

  StartPhase("cleanup");
  leveldb_close(db);
  leveldb_destroy_db(options, dbname, &err);
  CheckNoError(err);
  {
    struct stat st;
    CheckCondition(stat(dbname, &st) != 0); /* the directory is gone */
  }
  leveldb_options_destroy(options);
  leveldb_readoptions_destroy(roptions);
  leveldb_writeoptions_destroy(woptions);
  leveldb_comparator_destroy(cmp);
  CheckCondition(destroyed_cmp == 2);
  leveldb_cache_destroy(cache);
  leveldb_env_destroy(env);
  free(dbname);

  fprintf(stderr, "PASS\n");
  return 0;
}
