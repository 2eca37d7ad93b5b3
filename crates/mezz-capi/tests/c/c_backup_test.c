/* Checkpoints and backups under RocksDB's C names (mezzanine/c.h): a checkpoint opens with
 * the data at its time, backups list, verify and restore, a damaged backup file is found
 * and refused, purge keeps the newest. Usage: c_backup_test <scratch dir> */
#define _POSIX_C_SOURCE 200809L
#include "mezzanine/c.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

static void Put(leveldb_t* db, const char* k, const char* v) {
  char* err = NULL;
  leveldb_writeoptions_t* wo = leveldb_writeoptions_create();
  leveldb_put(db, wo, k, strlen(k), v, strlen(v), &err);
  CheckNoError(err);
  leveldb_writeoptions_destroy(wo);
}

/* The value of k in the database at path (NULL if absent), malloc()ed. */
static char* GetIn(const char* path, const char* k) {
  char* err = NULL;
  size_t n = 0;
  char* v;
  char* out = NULL;
  leveldb_options_t* o = leveldb_options_create();
  leveldb_readoptions_t* ro = leveldb_readoptions_create();
  leveldb_t* db = leveldb_open(o, path, &err);
  CheckNoError(err);
  v = leveldb_get(db, ro, k, strlen(k), &n, &err);
  CheckNoError(err);
  if (v != NULL) {
    out = malloc(n + 1);
    memcpy(out, v, n);
    out[n] = 0;
    leveldb_free(v);
  }
  leveldb_close(db);
  leveldb_readoptions_destroy(ro);
  leveldb_options_destroy(o);
  return out;
}

static void CheckGetIn(const char* path, const char* k, const char* want) {
  char* got = GetIn(path, k);
  CheckEqual(want, got, got ? strlen(got) : 0);
  free(got);
}

int main(int argc, char** argv) {
  char* err = NULL;
  char* dbname;
  char* ckpt;
  char* backups;
  char path[4096];
  leveldb_t* db;
  leveldb_options_t* options;
  rocksdb_checkpoint_t* cp;
  rocksdb_backup_engine_t* be;
  const rocksdb_backup_engine_info_t* info;
  rocksdb_restore_options_t* ropts;
  DIR* dir;
  struct dirent* e;
  FILE* f;

  if (argc != 2) {
    fprintf(stderr, "usage: %s <scratch dir>\n", argv[0]);
    return 2;
  }
  dbname = strdup(PathIn(argv[1], "db"));
  ckpt = strdup(PathIn(argv[1], "ckpt"));
  backups = strdup(PathIn(argv[1], "backups"));
  options = leveldb_options_create();
  leveldb_options_set_create_if_missing(options, 1);
  db = leveldb_open(options, dbname, &err);
  CheckNoError(err);

  StartPhase("checkpoint");
  Put(db, "a", "1");
  cp = rocksdb_checkpoint_object_create(db, &err);
  CheckNoError(err);
  rocksdb_checkpoint_create(cp, ckpt, 0, &err);
  CheckNoError(err);
  rocksdb_checkpoint_create(cp, ckpt, 0, &err);
  CheckErrorContains(err, "already exists");
  rocksdb_checkpoint_create(cp, NULL, 0, &err);
  CheckErrorContains(err, "checkpoint_dir is NULL");
  rocksdb_checkpoint_create(NULL, ckpt, 0, &err);
  CheckErrorContains(err, "checkpoint is NULL");
  Put(db, "b", "2");
  CheckGetIn(ckpt, "a", "1");
  CheckGetIn(ckpt, "b", NULL);

  StartPhase("backups");
  be = rocksdb_backup_engine_open(NULL, backups, &err);
  CheckNoError(err);
  rocksdb_backup_engine_create_new_backup(be, db, &err);
  CheckNoError(err);
  Put(db, "c", "3");
  rocksdb_backup_engine_create_new_backup(be, db, &err);
  CheckNoError(err);
  rocksdb_backup_engine_create_new_backup(be, NULL, &err);
  CheckErrorContains(err, "db is NULL");
  info = rocksdb_backup_engine_get_backup_info(be);
  CheckCondition(info != NULL);
  CheckCondition(rocksdb_backup_engine_info_count(info) == 2);
  CheckCondition(rocksdb_backup_engine_info_backup_id(info, 0) == 1);
  CheckCondition(rocksdb_backup_engine_info_backup_id(info, 1) == 2);
  CheckCondition(rocksdb_backup_engine_info_backup_id(info, 2) == 0);
  CheckCondition(rocksdb_backup_engine_info_size(info, 1) > 0);
  CheckCondition(rocksdb_backup_engine_info_number_files(info, 1) >= 4);
  CheckCondition(rocksdb_backup_engine_info_timestamp(info, 0) > 0);
  rocksdb_backup_engine_info_destroy(info);
  rocksdb_backup_engine_verify_backup(be, 1, &err);
  CheckNoError(err);
  rocksdb_backup_engine_verify_backup(be, 9, &err);
  CheckErrorContains(err, "no backup 9");

  StartPhase("restore");
  ropts = rocksdb_restore_options_create();
  rocksdb_backup_engine_restore_db_from_latest_backup(be, PathIn(argv[1], "r-latest"), NULL,
                                                      ropts, &err);
  CheckNoError(err);
  CheckGetIn(PathIn(argv[1], "r-latest"), "c", "3");
  rocksdb_backup_engine_restore_db_from_backup(be, PathIn(argv[1], "r1"), NULL, ropts, 1,
                                               &err);
  CheckNoError(err);
  CheckGetIn(PathIn(argv[1], "r1"), "b", "2");
  CheckGetIn(PathIn(argv[1], "r1"), "c", NULL);
  rocksdb_backup_engine_restore_db_from_backup(be, dbname, NULL, ropts, 1, &err);
  CheckErrorContains(err, "holds a database");

  StartPhase("damage_is_found_and_refused");
  snprintf(path, sizeof(path), "%s/private/2", backups);
  dir = opendir(path);
  CheckCondition(dir != NULL);
  while ((e = readdir(dir)) != NULL) {
    if (strncmp(e->d_name, "MANIFEST-", 9) == 0) break;
  }
  CheckCondition(e != NULL);
  snprintf(path, sizeof(path), "%s/private/2/%s", backups, e->d_name);
  closedir(dir);
  f = fopen(path, "r+b");
  CheckCondition(f != NULL);
  CheckCondition(fseek(f, 10, SEEK_SET) == 0);
  {
    int c = fgetc(f);
    CheckCondition(c != EOF);
    CheckCondition(fseek(f, 10, SEEK_SET) == 0);
    CheckCondition(fputc(c ^ 0x20, f) != EOF);
  }
  CheckCondition(fclose(f) == 0);
  rocksdb_backup_engine_verify_backup(be, 2, &err);
  CheckErrorContains(err, "Corruption");
  rocksdb_backup_engine_restore_db_from_backup(be, PathIn(argv[1], "r2"), NULL, ropts, 2,
                                               &err);
  CheckErrorContains(err, "crc32c");
  rocksdb_backup_engine_verify_backup(be, 1, &err);
  CheckNoError(err);

  StartPhase("purge");
  rocksdb_backup_engine_purge_old_backups(be, 1, &err);
  CheckNoError(err);
  info = rocksdb_backup_engine_get_backup_info(be);
  CheckCondition(rocksdb_backup_engine_info_count(info) == 1);
  CheckCondition(rocksdb_backup_engine_info_backup_id(info, 0) == 2);
  rocksdb_backup_engine_info_destroy(info);
  CheckCondition(rocksdb_backup_engine_get_backup_info(NULL) == NULL);
  rocksdb_backup_engine_info_destroy(NULL);

  rocksdb_restore_options_destroy(ropts);
  rocksdb_backup_engine_close(be);
  rocksdb_backup_engine_close(NULL);
  rocksdb_checkpoint_object_destroy(cp);
  rocksdb_checkpoint_object_destroy(NULL);
  leveldb_close(db);
  cp = rocksdb_checkpoint_object_create(db, &err);
  CheckCondition(cp == NULL);
  CheckErrorContains(err, "not an open database");
  leveldb_options_destroy(options);
  free(dbname);
  free(ckpt);
  free(backups);
  fprintf(stderr, "PASS\n");
  return 0;
}
