/* Column families (mezzanine/column_family.h, RocksDB's C names): create, separate key
 * spaces, a batch spanning families, a snapshot across them, iterators, multi_get,
 * properties, flush and compaction, listing, reopen with every family (and the errors
 * when one is left out or unknown), create_missing_column_families, drop, a checkpoint
 * holding the live families, and misuse.
 * Usage: c_column_family_test <scratch dir> */
#define _POSIX_C_SOURCE 200809L
#include "mezzanine/column_family.h"
#include "mezzanine/c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void CheckTake(const char* expected, char* v, size_t n) {
  CheckEqual(expected, v, n);
  leveldb_free(v);
}

static void CheckGetCf(leveldb_t* db, const leveldb_readoptions_t* ro,
                       rocksdb_column_family_handle_t* cf, const char* key,
                       const char* expected) {
  char* err = NULL;
  size_t n = 99;
  char* v = rocksdb_get_cf(db, ro, cf, key, strlen(key), &n, &err);
  CheckNoError(err);
  if (v == NULL) CheckCondition(n == 0);
  CheckTake(expected, v, n);
}

int main(int argc, char** argv) {
  char* err = NULL;
  size_t n = 0;
  char* v;
  char** names;
  const char* path;
  leveldb_options_t* options;
  leveldb_options_t* small;
  leveldb_readoptions_t* roptions;
  leveldb_writeoptions_t* woptions;
  leveldb_t* db;
  rocksdb_column_family_handle_t* users;
  rocksdb_column_family_handle_t* logs;
  rocksdb_column_family_handle_t* handles[3];
  leveldb_writebatch_t* wb;
  const leveldb_snapshot_t* snap;
  leveldb_iterator_t* it;
  rocksdb_flushoptions_t* fo;

  if (argc != 2) {
    fprintf(stderr, "usage: %s <scratch dir>\n", argv[0]);
    return 2;
  }
  path = PathIn(argv[1], "cf_db");
  options = leveldb_options_create();
  leveldb_options_set_create_if_missing(options, 1);
  small = leveldb_options_create();
  leveldb_options_set_write_buffer_size(small, 64 * 1024);
  roptions = leveldb_readoptions_create();
  woptions = leveldb_writeoptions_create();

  StartPhase("create");
  db = leveldb_open(options, path, &err);
  CheckNoError(err);
  users = rocksdb_create_column_family(db, small, "users", &err);
  CheckNoError(err);
  CheckCondition(users != NULL);
  logs = rocksdb_create_column_family(db, NULL, "logs", &err);
  CheckNoError(err);
  CheckCondition(rocksdb_column_family_handle_get_id(users) !=
                 rocksdb_column_family_handle_get_id(logs));
  v = rocksdb_column_family_handle_get_name(users, &n);
  CheckTake("users", v, n);
  CheckCondition(rocksdb_create_column_family(db, NULL, "users", &err) == NULL);
  CheckErrorContains(err, "Invalid argument");

  StartPhase("separate_key_spaces");
  leveldb_put(db, woptions, "k", 1, "default", 7, &err);
  CheckNoError(err);
  rocksdb_put_cf(db, woptions, users, "k", 1, "ann", 3, &err);
  CheckNoError(err);
  CheckGet(db, roptions, "k", "default");
  CheckGetCf(db, roptions, users, "k", "ann");
  CheckGetCf(db, roptions, logs, "k", NULL);
  rocksdb_delete_cf(db, woptions, users, "k", 1, &err);
  CheckNoError(err);
  CheckGetCf(db, roptions, users, "k", NULL);
  CheckGet(db, roptions, "k", "default");

  StartPhase("batch_across_families_and_snapshot");
  snap = leveldb_create_snapshot(db);
  wb = leveldb_writebatch_create();
  rocksdb_writebatch_put_cf(wb, users, "u1", 2, "bob", 3);
  rocksdb_writebatch_put_cf(wb, logs, "l1", 2, "login", 5);
  rocksdb_writebatch_delete_cf(wb, users, "missing", 7);
  leveldb_writebatch_put(wb, "d1", 2, "x", 1);
  leveldb_write(db, woptions, wb, &err);
  CheckNoError(err);
  leveldb_writebatch_destroy(wb);
  CheckGetCf(db, roptions, users, "u1", "bob");
  CheckGetCf(db, roptions, logs, "l1", "login");
  CheckGet(db, roptions, "d1", "x");
  leveldb_readoptions_set_snapshot(roptions, snap);
  CheckGetCf(db, roptions, users, "u1", NULL);
  CheckGetCf(db, roptions, logs, "l1", NULL);
  leveldb_readoptions_set_snapshot(roptions, NULL);
  leveldb_release_snapshot(db, snap);

  StartPhase("iterator_and_multi_get");
  rocksdb_put_cf(db, woptions, users, "u2", 2, "cy", 2, &err);
  CheckNoError(err);
  it = rocksdb_create_iterator_cf(db, roptions, users);
  leveldb_iter_seek_to_first(it);
  CheckIter(it, "u1", "bob");
  leveldb_iter_next(it);
  CheckIter(it, "u2", "cy");
  leveldb_iter_next(it);
  CheckCondition(!leveldb_iter_valid(it));
  leveldb_iter_get_error(it, &err);
  CheckNoError(err);
  leveldb_iter_destroy(it);
  {
    const rocksdb_column_family_handle_t* cfs[3] = {users, logs, users};
    const char* keys[3] = {"u2", "l1", "nope"};
    size_t sizes[3] = {2, 2, 4};
    char* vals[3];
    size_t vlens[3];
    char* errs[3];
    rocksdb_multi_get_cf(db, roptions, cfs, 3, keys, sizes, vals, vlens, errs);
    CheckCondition(errs[0] == NULL && errs[1] == NULL && errs[2] == NULL);
    CheckTake("cy", vals[0], vlens[0]);
    CheckTake("login", vals[1], vlens[1]);
    CheckTake(NULL, vals[2], vlens[2]);
  }

  StartPhase("flush_compact_properties");
  fo = rocksdb_flushoptions_create();
  rocksdb_flushoptions_set_wait(fo, 1);
  rocksdb_flush_cf(db, fo, users, &err);
  CheckNoError(err);
  rocksdb_compact_range_cf(db, users, NULL, 0, NULL, 0);
  v = rocksdb_property_value_cf(db, users, "leveldb.stats");
  CheckCondition(v != NULL);
  leveldb_free(v);
  CheckCondition(rocksdb_property_value_cf(db, users, "no.such.property") == NULL);
  CheckGetCf(db, roptions, users, "u1", "bob");
  leveldb_close(db);

  StartPhase("list");
  names = rocksdb_list_column_families(options, path, &n, &err);
  CheckNoError(err);
  CheckCondition(n == 3);
  CheckCondition(strcmp(names[0], "default") == 0);
  CheckCondition((strcmp(names[1], "users") == 0 && strcmp(names[2], "logs") == 0) ||
                 (strcmp(names[1], "logs") == 0 && strcmp(names[2], "users") == 0));
  rocksdb_list_column_families_destroy(names, n);
  rocksdb_column_family_handle_destroy(users);
  rocksdb_column_family_handle_destroy(logs);

  StartPhase("open_must_name_every_family");
  {
    const char* two[2] = {"default", "users"};
    const leveldb_options_t* two_opts[2] = {options, options};
    db = rocksdb_open_column_families(options, path, 2, two, two_opts, handles, &err);
    CheckCondition(db == NULL);
    CheckErrorContains(err, "Column families not opened: logs");
  }
  {
    const char* four[4] = {"default", "users", "logs", "new"};
    const leveldb_options_t* four_opts[4] = {options, options, options, small};
    rocksdb_column_family_handle_t* h4[4];
    db = rocksdb_open_column_families(options, path, 4, four, four_opts, h4, &err);
    CheckCondition(db == NULL);
    CheckErrorContains(err, "Column family not found: new");
    rocksdb_options_set_create_missing_column_families(options, 1);
    db = rocksdb_open_column_families(options, path, 4, four, four_opts, h4, &err);
    CheckNoError(err);
    CheckCondition(db != NULL);
    CheckGetCf(db, roptions, h4[1], "u1", "bob");
    CheckGetCf(db, roptions, h4[2], "l1", "login");
    CheckGetCf(db, roptions, h4[0], "d1", "x");
    CheckGetCf(db, roptions, h4[3], "u1", NULL);
    handles[0] = h4[0];
    handles[1] = h4[1];
    handles[2] = h4[2];
    rocksdb_column_family_handle_destroy(h4[3]);
  }

  StartPhase("drop");
  rocksdb_drop_column_family(db, handles[2], &err);
  CheckNoError(err);
  v = rocksdb_get_cf(db, roptions, handles[2], "l1", 2, &n, &err);
  CheckCondition(v == NULL);
  CheckErrorContains(err, "Invalid argument");
  rocksdb_put_cf(db, woptions, handles[2], "l2", 2, "x", 1, &err);
  CheckErrorContains(err, "Invalid argument");
  rocksdb_drop_column_family(db, handles[0], &err);
  CheckErrorContains(err, "Invalid argument");
  CheckGetCf(db, roptions, handles[1], "u1", "bob");

  StartPhase("checkpoint");
  {
    char ckpt[4096]; /* not PathIn's buffer: `path` is in it */
    rocksdb_checkpoint_t* cp;
    snprintf(ckpt, sizeof(ckpt), "%s/cf_ckpt", argv[1]);
    cp = rocksdb_checkpoint_object_create(db, &err);
    CheckNoError(err);
    rocksdb_checkpoint_create(cp, ckpt, 0, &err);
    CheckNoError(err);
    rocksdb_checkpoint_object_destroy(cp);
    /* The live families ("logs" was dropped), with their data. */
    names = rocksdb_list_column_families(options, ckpt, &n, &err);
    CheckNoError(err);
    CheckCondition(n == 3);
    CheckCondition(strcmp(names[0], "default") == 0);
    CheckCondition(strcmp(names[1], "users") == 0);
    CheckCondition(strcmp(names[2], "new") == 0);
    rocksdb_list_column_families_destroy(names, n);
    {
      const char* three[3] = {"default", "users", "new"};
      const leveldb_options_t* three_opts[3] = {options, options, small};
      rocksdb_column_family_handle_t* h3[3];
      leveldb_t* copy =
          rocksdb_open_column_families(options, ckpt, 3, three, three_opts, h3, &err);
      CheckNoError(err);
      CheckGetCf(copy, roptions, h3[1], "u1", "bob");
      CheckGetCf(copy, roptions, h3[0], "d1", "x");
      CheckGetCf(copy, roptions, h3[2], "u1", NULL);
      rocksdb_column_family_handle_destroy(h3[0]);
      rocksdb_column_family_handle_destroy(h3[1]);
      rocksdb_column_family_handle_destroy(h3[2]);
      leveldb_close(copy);
    }
  }

  StartPhase("misuse");
  v = rocksdb_get_cf(db, roptions, NULL, "k", 1, &n, &err);
  CheckCondition(v == NULL);
  CheckErrorContains(err, "column family handle is NULL");
  wb = leveldb_writebatch_create();
  rocksdb_writebatch_put_cf(wb, NULL, "k", 1, "v", 1);
  leveldb_write(db, woptions, wb, &err);
  CheckErrorContains(err, "column family handle is NULL");
  leveldb_writebatch_destroy(wb);
  leveldb_close(db);
  v = rocksdb_get_cf(db, roptions, handles[1], "u1", 2, &n, &err);
  CheckCondition(v == NULL);
  CheckErrorContains(err, "not an open database");
  rocksdb_column_family_handle_destroy(handles[0]);
  rocksdb_column_family_handle_destroy(handles[1]);
  rocksdb_column_family_handle_destroy(handles[2]);
  rocksdb_flushoptions_destroy(fo);

  StartPhase("reopen_after_drop");
  names = rocksdb_list_column_families(options, path, &n, &err);
  CheckNoError(err);
  CheckCondition(n == 3);
  rocksdb_list_column_families_destroy(names, n);

  leveldb_options_destroy(options);
  leveldb_options_destroy(small);
  leveldb_readoptions_destroy(roptions);
  leveldb_writeoptions_destroy(woptions);
  fprintf(stderr, "PASS\n");
  return 0;
}
