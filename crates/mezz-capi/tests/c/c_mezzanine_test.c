/* The mezzanine_ additions (mezzanine/c.h): presets, NVM tier, named options, statistics,
 * flush, close with a status, version. Usage: c_mezzanine_test <scratch dir> */
#define _POSIX_C_SOURCE 200809L
#include "mezzanine/c.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

int main(int argc, char** argv) {
  char* err = NULL;
  char* dbname;
  char* nvmdir;
  leveldb_t* db;
  leveldb_options_t* options;
  struct stat st;

  if (argc != 2) {
    fprintf(stderr, "usage: %s <scratch dir>\n", argv[0]);
    return 2;
  }
  dbname = strdup(PathIn(argv[1], "mezz_db"));
  nvmdir = strdup(PathIn(argv[1], "mezz_nvm"));
  CheckCondition(mkdir(nvmdir, 0755) == 0);

  StartPhase("version");
  CheckCondition(mezzanine_version() != NULL && strlen(mezzanine_version()) > 0);

  StartPhase("option_errors");
  options = leveldb_options_create();
  mezzanine_options_set_preset(options, "nosuchpreset", &err);
  CheckErrorContains(err, "unknown preset");
  mezzanine_options_set_preset(options, NULL, &err);
  CheckErrorContains(err, "preset name is NULL");
  mezzanine_options_set_preset(NULL, "leveldb", &err);
  CheckErrorContains(err, "options is NULL");
  mezzanine_options_set(options, "no_such_option", "1", &err);
  CheckCondition(err != NULL);
  leveldb_free(err);
  err = NULL;
  mezzanine_options_set(options, "bloom_bits_per_key", "many", &err);
  CheckCondition(err != NULL);
  leveldb_free(err);
  err = NULL;
  mezzanine_options_set(options, "bloom_bits_per_key", NULL, &err);
  CheckErrorContains(err, "option value is NULL");
  mezzanine_options_set_nvm_dir(NULL, "x");
  mezzanine_options_set_nvm_capacity(NULL, 1);

  StartPhase("novelsm_without_nvm_dir_is_refused");
  mezzanine_options_set_preset(options, "novelsm", &err);
  CheckNoError(err);
  leveldb_options_set_create_if_missing(options, 1);
  db = leveldb_open(options, dbname, &err);
  CheckCondition(db == NULL);
  CheckErrorContains(err, "nvm_dir");

  StartPhase("novelsm_open");
  mezzanine_options_set_nvm_dir(options, nvmdir);
  mezzanine_options_set_nvm_capacity(options, 64 << 20);
  mezzanine_options_set(options, "nvm_memtable_size", "4M", &err);
  CheckNoError(err);
  mezzanine_options_set(options, "nvm_prefault", "false", &err);
  CheckNoError(err);
  mezzanine_options_set(options, "bloom_bits_per_key", "12", &err);
  CheckNoError(err);
  leveldb_options_set_write_buffer_size(options, 256 << 10);
  db = leveldb_open(options, dbname, &err);
  CheckNoError(err);
  CheckCondition(db != NULL);
  {
    char* opts = leveldb_property_value(db, "mezz.options");
    CheckCondition(opts != NULL);
    CheckCondition(strstr(opts, "preset=novelsm") != NULL);
    CheckCondition(strstr(opts, "bloom_bits_per_key=12") != NULL);
    CheckCondition(strstr(opts, "nvm_dir=") != NULL);
    CheckCondition(strstr(opts, "create_if_missing=true") != NULL);
    leveldb_free(opts);
  }

  StartPhase("writes_reach_the_nvm_tier");
  {
    char key[32], val[128];
    int i;
    leveldb_writeoptions_t* wo = leveldb_writeoptions_create();
    memset(val, 'v', sizeof(val) - 1);
    val[sizeof(val) - 1] = 0;
    for (i = 0; i < 5000; i++) {
      snprintf(key, sizeof(key), "key%06d", i);
      leveldb_put(db, wo, key, strlen(key), val, strlen(val), &err);
      CheckNoError(err);
    }
    CheckGet(db, NULL, "key004999", val);
    leveldb_writeoptions_destroy(wo);
    CheckCondition(stat(PathIn(nvmdir, "NVM-POOL"), &st) == 0);
  }

  StartPhase("flush_and_stats");
  mezzanine_flush(db, &err);
  CheckNoError(err);
  {
    char* text = mezzanine_stats_text(db, &err);
    CheckNoError(err);
    CheckCondition(text != NULL && strlen(text) > 0);
    leveldb_free(text);
  }
  {
    char* json = mezzanine_stats_json(db, &err);
    CheckNoError(err);
    CheckCondition(json != NULL && json[0] == '{');
    CheckCondition(strstr(json, "\"memtable_bytes\"") != NULL);
    leveldb_free(json);
  }
  CheckCondition(mezzanine_stats_json(NULL, &err) == NULL);
  CheckErrorContains(err, "db is NULL");
  CheckCondition(mezzanine_stats_text(NULL, &err) == NULL);
  CheckErrorContains(err, "db is NULL");
  mezzanine_flush(NULL, &err);
  CheckErrorContains(err, "db is NULL");

  StartPhase("close_with_status");
  mezzanine_close(db, &err);
  CheckNoError(err);
  mezzanine_close(db, &err); /* closed: reported, nothing freed twice */
  CheckErrorContains(err, "not an open database");

  StartPhase("reopen");
  leveldb_options_set_create_if_missing(options, 0);
  db = leveldb_open(options, dbname, &err);
  CheckNoError(err);
  {
    size_t len = 0;
    char* v = leveldb_get(db, NULL, "key000000", 9, &len, &err);
    CheckNoError(err);
    CheckCondition(v != NULL && len == 127 && v[0] == 'v' && v[126] == 'v');
    leveldb_free(v);
  }
  leveldb_close(db);

  StartPhase("preset_order_does_not_matter");
  {
    /* The preset is the base whatever the call order: a setter made before it stays. */
    leveldb_options_t* o = leveldb_options_create();
    char* other = strdup(PathIn(argv[1], "order_db"));
    leveldb_t* d;
    mezzanine_options_set(o, "bloom_bits_per_key", "7", &err);
    CheckNoError(err);
    leveldb_options_set_create_if_missing(o, 1);
    mezzanine_options_set(o, "preset", "leveldb", &err);
    CheckNoError(err);
    d = leveldb_open(o, other, &err);
    CheckNoError(err);
    {
      char* opts = leveldb_property_value(d, "mezz.options");
      CheckCondition(opts != NULL && strstr(opts, "bloom_bits_per_key=7") != NULL);
      CheckCondition(strstr(opts, "preset=leveldb") != NULL);
      leveldb_free(opts);
    }
    leveldb_close(d);
    leveldb_destroy_db(o, other, &err);
    CheckNoError(err);
    leveldb_options_destroy(o);
    free(other);
  }

  StartPhase("destroy_removes_the_nvm_pool");
  leveldb_destroy_db(options, dbname, &err);
  CheckNoError(err);
  CheckCondition(stat(dbname, &st) != 0);
  CheckCondition(stat(PathIn(nvmdir, "NVM-POOL"), &st) != 0);

  leveldb_options_destroy(options);
  free(dbname);
  free(nvmdir);
  fprintf(stderr, "PASS\n");
  return 0;
}
