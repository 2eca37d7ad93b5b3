/* Mezzanine additions to the LevelDB C API (include leveldb/c.h first or let this header
 * include it). Everything here takes and returns the same handles as leveldb/c.h and
 * follows its conventions (char** errptr last, malloc()ed results freed with
 * leveldb_free). */
#ifndef MEZZANINE_C_H_
#define MEZZANINE_C_H_

#include <stdint.h>

#include "leveldb/c.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The engine preset the options start from: "leveldb" (the default), or one that needs
 * an NVM directory: "novelsm" (a persistent NVM memtable), "tlsm" (NVM tables),
 * "matrixkv" (L0 as a matrix container in NVM) or "mezzanine" (the designs composed: a
 * mutable NVM memtable and NVM tables). Every other setter applies on top of the preset whatever the call order.
 * Unknown names are reported through errptr. */
LEVELDB_EXPORT void mezzanine_options_set_preset(leveldb_options_t* options,
                                                 const char* name,
                                                 char** errptr);

/* Sets any engine option by name ("bloom_bits_per_key", "10"; "nvm_memtable",
 * "immutable"; sizes take K/M/G). Unknown names and bad values are reported now through
 * errptr; checks across options happen at open. */
LEVELDB_EXPORT void mezzanine_options_set(leveldb_options_t* options,
                                          const char* name, const char* value,
                                          char** errptr);

/* The directory of the NVM tier's pool file (a DAX mount, /dev/shm, ...). NULL removes
 * the tier. */
LEVELDB_EXPORT void mezzanine_options_set_nvm_dir(leveldb_options_t* options,
                                                  const char* dir);

/* Bytes of the NVM pool (rounded up to 4 KiB; default 1 GiB). */
LEVELDB_EXPORT void mezzanine_options_set_nvm_capacity(leveldb_options_t* options,
                                                       uint64_t bytes);

/* The statistics (levels, write amplification, stalls, latencies) as text, or as one
 * JSON object. malloc()ed; free with leveldb_free. NULL on error. */
LEVELDB_EXPORT char* mezzanine_stats_text(leveldb_t* db, char** errptr);
LEVELDB_EXPORT char* mezzanine_stats_json(leveldb_t* db, char** errptr);

/* Flushes the memtable to a table and waits until it is durable. */
LEVELDB_EXPORT void mezzanine_flush(leveldb_t* db, char** errptr);

/* leveldb_close that reports the first error met while closing. The handle is freed
 * either way. */
LEVELDB_EXPORT void mezzanine_close(leveldb_t* db, char** errptr);

/* The library version ("0.1.0"): a static string, not to be freed. */
LEVELDB_EXPORT const char* mezzanine_version(void);

/* Checkpoints and incremental backups, under RocksDB's C names (rocksdb/c.h) and
 * signatures, over this library's leveldb_t and leveldb_options_t handles. Errors follow
 * the errptr convention above ("Corruption: ...", "Invalid argument: ..."). */
typedef struct rocksdb_checkpoint_t rocksdb_checkpoint_t;
typedef struct rocksdb_backup_engine_t rocksdb_backup_engine_t;
typedef struct rocksdb_backup_engine_info_t rocksdb_backup_engine_info_t;
typedef struct rocksdb_restore_options_t rocksdb_restore_options_t;

/* A checkpoint object for an open database (NULL with an error if it is not open). */
LEVELDB_EXPORT rocksdb_checkpoint_t* rocksdb_checkpoint_object_create(leveldb_t* db,
                                                                      char** errptr);
/* Writes a consistent copy of the database to checkpoint_dir (which must not exist)
 * while writes go on: tables hard-linked (copied across file systems), data in NVM and
 * memtables written as tables. log_size_for_flush is ignored (no WAL is copied). */
LEVELDB_EXPORT void rocksdb_checkpoint_create(rocksdb_checkpoint_t* checkpoint,
                                              const char* checkpoint_dir,
                                              uint64_t log_size_for_flush,
                                              char** errptr);
LEVELDB_EXPORT void rocksdb_checkpoint_object_destroy(rocksdb_checkpoint_t* checkpoint);

/* Opens (creates) a backup directory; options is not used and may be NULL. */
LEVELDB_EXPORT rocksdb_backup_engine_t* rocksdb_backup_engine_open(
    const leveldb_options_t* options, const char* path, char** errptr);
/* Backs up db: tables already in the directory are not copied again. */
LEVELDB_EXPORT void rocksdb_backup_engine_create_new_backup(rocksdb_backup_engine_t* be,
                                                            leveldb_t* db,
                                                            char** errptr);
/* Deletes all but the newest num_backups_to_keep backups and unreferenced files. */
LEVELDB_EXPORT void rocksdb_backup_engine_purge_old_backups(rocksdb_backup_engine_t* be,
                                                            uint32_t num_backups_to_keep,
                                                            char** errptr);
/* Re-reads every file of the backup and checks its size and crc32c. */
LEVELDB_EXPORT void rocksdb_backup_engine_verify_backup(rocksdb_backup_engine_t* be,
                                                        uint32_t backup_id,
                                                        char** errptr);
/* Restores into db_dir, which must not hold a database (RocksDB overwrites one; this
 * refuses). Every file is checked; a damaged one fails the restore and leaves no
 * database. wal_dir and restore_options are not used and may be NULL. */
LEVELDB_EXPORT void rocksdb_backup_engine_restore_db_from_latest_backup(
    rocksdb_backup_engine_t* be, const char* db_dir, const char* wal_dir,
    const rocksdb_restore_options_t* restore_options, char** errptr);
LEVELDB_EXPORT void rocksdb_backup_engine_restore_db_from_backup(
    rocksdb_backup_engine_t* be, const char* db_dir, const char* wal_dir,
    const rocksdb_restore_options_t* restore_options, const uint32_t backup_id,
    char** errptr);
/* The backups, oldest first (NULL on error); free with ..._info_destroy. A bad index
 * reads as 0. */
LEVELDB_EXPORT const rocksdb_backup_engine_info_t* rocksdb_backup_engine_get_backup_info(
    rocksdb_backup_engine_t* be);
LEVELDB_EXPORT int rocksdb_backup_engine_info_count(
    const rocksdb_backup_engine_info_t* info);
LEVELDB_EXPORT int64_t rocksdb_backup_engine_info_timestamp(
    const rocksdb_backup_engine_info_t* info, int index);
LEVELDB_EXPORT uint32_t rocksdb_backup_engine_info_backup_id(
    const rocksdb_backup_engine_info_t* info, int index);
LEVELDB_EXPORT uint64_t rocksdb_backup_engine_info_size(
    const rocksdb_backup_engine_info_t* info, int index);
LEVELDB_EXPORT uint32_t rocksdb_backup_engine_info_number_files(
    const rocksdb_backup_engine_info_t* info, int index);
LEVELDB_EXPORT void rocksdb_backup_engine_info_destroy(
    const rocksdb_backup_engine_info_t* info);
LEVELDB_EXPORT void rocksdb_backup_engine_close(rocksdb_backup_engine_t* be);
LEVELDB_EXPORT rocksdb_restore_options_t* rocksdb_restore_options_create(void);
LEVELDB_EXPORT void rocksdb_restore_options_destroy(rocksdb_restore_options_t* opt);

#ifdef __cplusplus
} /* end extern "C" */
#endif

#endif /* MEZZANINE_C_H_ */
