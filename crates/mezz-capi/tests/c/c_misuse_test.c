/* What libmezzanine does when a caller gets it wrong: every case below would be undefined
 * behaviour (usually a crash) with LevelDB; here each one has a defined, reported outcome.
 * Usage: c_misuse_test <scratch dir> */
#define _POSIX_C_SOURCE 200809L
#include "leveldb/c.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

static leveldb_t* OpenNew(const char* dir, const char* name, char** err) {
  leveldb_options_t* o = leveldb_options_create();
  char* path = strdup(PathIn(dir, name));
  leveldb_t* db;
  leveldb_options_set_create_if_missing(o, 1);
  leveldb_destroy_db(o, path, err);
  CheckNoError(*err);
  db = leveldb_open(o, path, err);
  CheckNoError(*err);
  CheckCondition(db != NULL);
  leveldb_options_destroy(o);
  free(path);
  return db;
}

int main(int argc, char** argv) {
  char* err = NULL;
  size_t len = 0;
  leveldb_t* db;
  leveldb_options_t* options;
  leveldb_readoptions_t* ro;
  leveldb_writeoptions_t* wo;

  if (argc != 2) {
    fprintf(stderr, "usage: %s <scratch dir>\n", argv[0]);
    return 2;
  }
  options = leveldb_options_create();
  ro = leveldb_readoptions_create();
  wo = leveldb_writeoptions_create();

  StartPhase("null_db");
  leveldb_put(NULL, wo, "k", 1, "v", 1, &err);
  CheckErrorContains(err, "db is NULL");
  leveldb_delete(NULL, wo, "k", 1, &err);
  CheckErrorContains(err, "db is NULL");
  {
    leveldb_writebatch_t* b = leveldb_writebatch_create();
    leveldb_write(NULL, wo, b, &err);
    CheckErrorContains(err, "db is NULL");
    leveldb_writebatch_destroy(b);
  }
  CheckCondition(leveldb_get(NULL, ro, "k", 1, &len, &err) == NULL);
  CheckCondition(len == 0);
  CheckErrorContains(err, "db is NULL");
  CheckCondition(leveldb_create_snapshot(NULL) == NULL);
  CheckCondition(leveldb_property_value(NULL, "leveldb.stats") == NULL);
  {
    uint64_t sizes[1] = {42};
    const char* s[1] = {"a"};
    const char* l[1] = {"z"};
    size_t n[1] = {1};
    leveldb_approximate_sizes(NULL, 1, s, n, l, n, sizes);
    CheckCondition(sizes[0] == 0);
  }
  leveldb_compact_range(NULL, NULL, 0, NULL, 0);
  leveldb_close(NULL);
  {
    leveldb_iterator_t* it = leveldb_create_iterator(NULL, ro);
    CheckCondition(it != NULL);
    leveldb_iter_seek_to_first(it);
    CheckCondition(!leveldb_iter_valid(it));
    leveldb_iter_get_error(it, &err);
    CheckErrorContains(err, "db is NULL");
    leveldb_iter_destroy(it);
  }

  StartPhase("null_errptr");
  leveldb_put(NULL, wo, "k", 1, "v", 1, NULL); /* the error is dropped */
  CheckCondition(leveldb_open(options, "", NULL) == NULL);

  StartPhase("open_arguments");
  CheckCondition(leveldb_open(NULL, PathIn(argv[1], "x"), &err) == NULL);
  CheckErrorContains(err, "options is NULL");
  CheckCondition(leveldb_open(options, NULL, &err) == NULL);
  CheckErrorContains(err, "name is NULL");
  CheckCondition(leveldb_open(options, "", &err) == NULL);
  CheckErrorContains(err, "name is empty");
  leveldb_destroy_db(NULL, "x", &err);
  CheckErrorContains(err, "options is NULL");
  leveldb_repair_db(options, NULL, &err);
  CheckErrorContains(err, "name is NULL");

  db = OpenNew(argv[1], "misuse_db", &err);

  StartPhase("null_options_are_defaults");
  leveldb_put(db, NULL, "k", 1, "v", 1, &err);
  CheckNoError(err);
  CheckGet(db, NULL, "k", "v");
  {
    leveldb_iterator_t* it = leveldb_create_iterator(db, NULL);
    leveldb_iter_seek_to_first(it);
    CheckIter(it, "k", "v");
    leveldb_iter_destroy(it);
  }

  StartPhase("null_key_with_length");
  leveldb_put(db, wo, NULL, 3, "v", 1, &err);
  CheckErrorContains(err, "key is NULL with length 3");
  leveldb_put(db, wo, "k", 1, NULL, 5, &err);
  CheckErrorContains(err, "value is NULL with length 5");
  leveldb_delete(db, wo, NULL, 1, &err);
  CheckErrorContains(err, "key is NULL");
  CheckCondition(leveldb_get(db, ro, NULL, 2, &len, &err) == NULL);
  CheckErrorContains(err, "key is NULL");

  StartPhase("null_key_of_length_zero_is_the_empty_key");
  leveldb_put(db, wo, NULL, 0, NULL, 0, &err);
  CheckNoError(err);
  {
    char* v = leveldb_get(db, ro, NULL, 0, &len, &err);
    CheckNoError(err);
    CheckCondition(v != NULL && len == 0);
    leveldb_free(v);
  }
  leveldb_delete(db, wo, NULL, 0, &err);
  CheckNoError(err);

  StartPhase("null_vallen");
  {
    char* v = leveldb_get(db, ro, "k", 1, NULL, &err);
    CheckNoError(err);
    CheckCondition(v != NULL && v[0] == 'v');
    leveldb_free(v);
  }

  StartPhase("batch_with_a_null_key");
  {
    leveldb_writebatch_t* b = leveldb_writebatch_create();
    leveldb_writebatch_put(b, "a", 1, "1", 1);
    leveldb_writebatch_put(b, NULL, 4, "2", 1);
    leveldb_write(db, wo, b, &err);
    CheckErrorContains(err, "key is NULL with length 4");
    CheckGet(db, ro, "a", NULL); /* nothing of the batch was applied */
    leveldb_writebatch_delete(b, NULL, 1);
    leveldb_write(db, wo, b, &err);
    CheckErrorContains(err, "the batch holds an invalid update");
    leveldb_writebatch_clear(b);
    leveldb_writebatch_put(b, "a", 1, "1", 1);
    leveldb_write(db, wo, b, &err);
    CheckNoError(err);
    CheckGet(db, ro, "a", "1");
    /* Appending an invalid batch makes the destination invalid. */
    {
      leveldb_writebatch_t* bad = leveldb_writebatch_create();
      leveldb_writebatch_put(bad, NULL, 1, NULL, 0);
      leveldb_writebatch_append(b, bad);
      leveldb_write(db, wo, b, &err);
      CheckErrorContains(err, "invalid update");
      leveldb_writebatch_destroy(bad);
    }
    leveldb_write(db, wo, NULL, &err);
    CheckErrorContains(err, "batch is NULL");
    leveldb_writebatch_destroy(b);
  }

  StartPhase("null_batch_functions");
  leveldb_writebatch_put(NULL, "a", 1, "b", 1);
  leveldb_writebatch_delete(NULL, "a", 1);
  leveldb_writebatch_clear(NULL);
  leveldb_writebatch_iterate(NULL, NULL, NULL, NULL);
  leveldb_writebatch_append(NULL, NULL);
  leveldb_writebatch_destroy(NULL);
  {
    leveldb_writebatch_t* b = leveldb_writebatch_create();
    leveldb_writebatch_put(b, "a", 1, "b", 1);
    leveldb_writebatch_iterate(b, NULL, NULL, NULL); /* NULL callbacks: skipped */
    leveldb_writebatch_append(b, NULL);
    leveldb_writebatch_append(NULL, b);
    leveldb_writebatch_destroy(b);
  }

  StartPhase("iterator_misuse");
  {
    leveldb_iterator_t* it = leveldb_create_iterator(db, ro);
    CheckCondition(leveldb_iter_key(it, &len) == NULL && len == 0);
    CheckCondition(leveldb_iter_value(it, &len) == NULL && len == 0);
    leveldb_iter_next(it); /* not valid: nothing happens */
    leveldb_iter_prev(it);
    CheckCondition(!leveldb_iter_valid(it));
    leveldb_iter_seek(it, NULL, 0); /* the empty key: first key */
    CheckIter(it, "a", "1");
    leveldb_iter_key(it, NULL); /* NULL length pointer */
    leveldb_iter_seek(it, NULL, 7);
    CheckCondition(!leveldb_iter_valid(it));
    leveldb_iter_seek_to_first(it); /* stays failed */
    CheckCondition(!leveldb_iter_valid(it));
    leveldb_iter_get_error(it, &err);
    CheckErrorContains(err, "key is NULL with length 7");
    leveldb_iter_destroy(it);
  }
  CheckCondition(!leveldb_iter_valid(NULL));
  leveldb_iter_seek_to_first(NULL);
  leveldb_iter_seek_to_last(NULL);
  leveldb_iter_seek(NULL, "a", 1);
  leveldb_iter_next(NULL);
  leveldb_iter_prev(NULL);
  CheckCondition(leveldb_iter_key(NULL, &len) == NULL && len == 0);
  CheckCondition(leveldb_iter_value(NULL, &len) == NULL && len == 0);
  leveldb_iter_get_error(NULL, &err);
  CheckErrorContains(err, "iterator is NULL");
  leveldb_iter_destroy(NULL);

  StartPhase("null_option_functions");
  leveldb_options_set_create_if_missing(NULL, 1);
  leveldb_options_set_error_if_exists(NULL, 1);
  leveldb_options_set_paranoid_checks(NULL, 1);
  leveldb_options_set_write_buffer_size(NULL, 1);
  leveldb_options_set_max_open_files(NULL, 1);
  leveldb_options_set_block_size(NULL, 1);
  leveldb_options_set_block_restart_interval(NULL, 1);
  leveldb_options_set_max_file_size(NULL, 1);
  leveldb_options_set_compression(NULL, 1);
  leveldb_options_set_cache(NULL, NULL);
  leveldb_options_set_comparator(NULL, NULL);
  leveldb_options_set_filter_policy(NULL, NULL);
  leveldb_options_set_env(NULL, NULL);
  leveldb_options_set_info_log(NULL, NULL);
  leveldb_options_destroy(NULL);
  leveldb_readoptions_set_verify_checksums(NULL, 1);
  leveldb_readoptions_set_fill_cache(NULL, 1);
  leveldb_readoptions_set_snapshot(NULL, NULL);
  leveldb_readoptions_destroy(NULL);
  leveldb_writeoptions_set_sync(NULL, 1);
  leveldb_writeoptions_destroy(NULL);
  leveldb_cache_destroy(NULL);
  leveldb_comparator_destroy(NULL);
  leveldb_filterpolicy_destroy(NULL);
  leveldb_env_destroy(NULL);
  leveldb_release_snapshot(db, NULL);
  leveldb_free(NULL);
  CheckCondition(leveldb_property_value(db, NULL) == NULL);
  leveldb_approximate_sizes(db, 1, NULL, NULL, NULL, NULL, NULL);
  leveldb_approximate_sizes(db, -1, NULL, NULL, NULL, NULL, NULL);

  StartPhase("out_of_range_option_values_are_clipped");
  {
    leveldb_options_t* o = leveldb_options_create();
    char* path = strdup(PathIn(argv[1], "clipped_db"));
    leveldb_t* d;
    leveldb_options_set_create_if_missing(o, 1);
    leveldb_options_set_write_buffer_size(o, 1);
    leveldb_options_set_max_open_files(o, -5);
    leveldb_options_set_block_size(o, 0);
    leveldb_options_set_block_restart_interval(o, -1);
    leveldb_options_set_max_file_size(o, 0);
    leveldb_options_set_cache(o, NULL);
    {
      leveldb_filterpolicy_t* p = leveldb_filterpolicy_create_bloom(-3);
      leveldb_options_set_filter_policy(o, p);
      leveldb_filterpolicy_destroy(p); /* early: the options keep a copy */
    }
    {
      leveldb_cache_t* c = leveldb_cache_create_lru(0);
      leveldb_options_set_cache(o, c);
      leveldb_cache_destroy(c);
    }
    d = leveldb_open(o, path, &err);
    CheckNoError(err);
    leveldb_put(d, wo, "x", 1, "y", 1, &err);
    CheckNoError(err);
    CheckGet(d, ro, "x", "y");
    leveldb_close(d);
    leveldb_destroy_db(o, path, &err);
    CheckNoError(err);
    leveldb_options_destroy(o);
    free(path);
  }

  StartPhase("comparator_without_compare");
  {
    leveldb_comparator_t* c = leveldb_comparator_create(NULL, NULL, NULL, NULL);
    leveldb_options_t* o = leveldb_options_create();
    leveldb_options_set_create_if_missing(o, 1);
    leveldb_options_set_comparator(o, c);
    leveldb_comparator_destroy(c); /* early: the options keep a copy */
    CheckCondition(leveldb_open(o, PathIn(argv[1], "nocmp"), &err) == NULL);
    CheckErrorContains(err, "comparator has no name function");
    leveldb_options_destroy(o);
  }

  StartPhase("opened_twice");
  {
    leveldb_options_t* o = leveldb_options_create();
    leveldb_t* again = leveldb_open(o, PathIn(argv[1], "misuse_db"), &err);
    CheckCondition(again == NULL);
    CheckErrorContains(err, "already open");
    leveldb_destroy_db(o, PathIn(argv[1], "misuse_db"), &err);
    CheckErrorContains(err, "the database is open");
    leveldb_options_destroy(o);
    CheckGet(db, ro, "a", "1"); /* the first handle is unaffected */
  }

  StartPhase("snapshot_of_another_database");
  {
    leveldb_t* other = OpenNew(argv[1], "other_db", &err);
    const leveldb_snapshot_t* snap = leveldb_create_snapshot(other);
    leveldb_readoptions_t* r = leveldb_readoptions_create();
    leveldb_readoptions_set_snapshot(r, snap);
    CheckCondition(leveldb_get(db, r, "a", 1, &len, &err) == NULL);
    CheckErrorContains(err, "snapshot belongs to another database");
    {
      leveldb_iterator_t* it = leveldb_create_iterator(db, r);
      leveldb_iter_seek_to_first(it);
      CheckCondition(!leveldb_iter_valid(it));
      leveldb_iter_get_error(it, &err);
      CheckErrorContains(err, "snapshot belongs to another database");
      leveldb_iter_destroy(it);
    }
    leveldb_release_snapshot(other, snap);
    leveldb_readoptions_destroy(r); /* still holds its own reference: fine */
    leveldb_close(other);
  }

  StartPhase("closed_handle");
  {
    leveldb_t* d = OpenNew(argv[1], "closed_db", &err);
    const leveldb_snapshot_t* snap;
    leveldb_iterator_t* it;
    leveldb_put(d, wo, "k", 1, "v", 1, &err);
    CheckNoError(err);
    snap = leveldb_create_snapshot(d);
    it = leveldb_create_iterator(d, ro);
    leveldb_close(d);
    /* d now names no open database: every call reports it. */
    leveldb_put(d, wo, "k", 1, "v", 1, &err);
    CheckErrorContains(err, "not an open database");
    CheckCondition(leveldb_get(d, ro, "k", 1, &len, &err) == NULL);
    CheckErrorContains(err, "not an open database");
    leveldb_delete(d, wo, "k", 1, &err);
    CheckErrorContains(err, "not an open database");
    CheckCondition(leveldb_create_snapshot(d) == NULL);
    CheckCondition(leveldb_property_value(d, "leveldb.stats") == NULL);
    leveldb_compact_range(d, NULL, 0, NULL, 0);
    {
      leveldb_iterator_t* it2 = leveldb_create_iterator(d, ro);
      leveldb_iter_get_error(it2, &err);
      CheckErrorContains(err, "not an open database");
      leveldb_iter_destroy(it2);
    }
    leveldb_close(d); /* closing twice: no-op */
    /* An iterator and a snapshot created before the close stay safe to use and free. */
    leveldb_iter_seek_to_first(it);
    if (leveldb_iter_valid(it)) {
      CheckIter(it, "k", "v");
    }
    leveldb_iter_get_error(it, &err);
    leveldb_free(err);
    err = NULL;
    leveldb_iter_destroy(it);
    leveldb_release_snapshot(d, snap);
    /* The directory can be opened again. */
    {
      leveldb_options_t* o = leveldb_options_create();
      leveldb_t* again = leveldb_open(o, PathIn(argv[1], "closed_db"), &err);
      CheckNoError(err);
      CheckGet(again, ro, "k", "v");
      leveldb_close(again);
      leveldb_options_destroy(o);
    }
  }

  StartPhase("destroy_and_repair_edge_cases");
  leveldb_destroy_db(options, PathIn(argv[1], "never_existed"), &err);
  CheckNoError(err);
  leveldb_repair_db(options, PathIn(argv[1], "never_existed"), &err);
  CheckErrorContains(err, "does not exist");
  {
    /* A CURRENT naming a manifest that is not there: the repair rebuilds the manifest
       from the tables and logs it finds. */
    leveldb_t* d = OpenNew(argv[1], "corrupt_db", &err);
    leveldb_t* again;
    leveldb_readoptions_t* ro = leveldb_readoptions_create();
    leveldb_writeoptions_t* wo = leveldb_writeoptions_create();
    FILE* f;
    leveldb_put(d, wo, "kept", 4, "yes", 3, &err);
    CheckNoError(err);
    leveldb_close(d);
    f = fopen(PathIn(argv[1], "corrupt_db/CURRENT"), "w");
    CheckCondition(f != NULL);
    fputs("MANIFEST-999999\n", f);
    fclose(f);
    leveldb_repair_db(options, PathIn(argv[1], "corrupt_db"), &err);
    CheckNoError(err);
    again = leveldb_open(options, PathIn(argv[1], "corrupt_db"), &err);
    CheckNoError(err);
    CheckGet(again, ro, "kept", "yes");
    /* An open database is not repaired. */
    leveldb_repair_db(options, PathIn(argv[1], "corrupt_db"), &err);
    CheckErrorContains(err, "the database is open");
    leveldb_close(again);
    leveldb_readoptions_destroy(ro);
    leveldb_writeoptions_destroy(wo);
    leveldb_destroy_db(options, PathIn(argv[1], "corrupt_db"), &err);
    CheckNoError(err);
  }

  leveldb_close(db);
  leveldb_options_destroy(options);
  leveldb_readoptions_destroy(ro);
  leveldb_writeoptions_destroy(wo);
  fprintf(stderr, "PASS\n");
  return 0;
}
