/* Mezzanine's LevelDB-compatible C API (the ABI of LevelDB 1.23's leveldb/c.h).
 *
 * Link with -lmezzanine (libmezzanine.so or libmezzanine.a) instead of -lleveldb; C code
 * written against LevelDB's header compiles and runs unchanged. Differences from LevelDB
 * are listed in docs/c-api.md; the short version:
 *   - Keys are always ordered bytewise. A comparator that orders keys differently makes
 *     leveldb_open fail ("custom comparators are not supported: ...").
 *   - A custom filter policy is accepted and never called (the engine builds its own bloom
 *     filters; filters only let reads skip tables). Compression settings are ignored.
 *   - leveldb_repair_db only succeeds for a database that opens and verifies cleanly.
 *   - Misuse is reported rather than crashing: NULL handles, a NULL key with a nonzero
 *     length, a closed database handle. NULL read/write options mean the defaults. errptr
 *     may be NULL (the error is then dropped).
 *
 * Conventions (as LevelDB's):
 *   - Opaque handles; keys and values are (pointer, length) pairs.
 *   - Errors: every call that can fail takes "char** errptr" last. On entry *errptr is NULL
 *     or a malloc()ed message. On success it is left unchanged; on failure the old message
 *     is freed and *errptr set to a new malloc()ed one (free it with leveldb_free).
 *   - Booleans are uint8_t (0 is false).
 */
#ifndef MEZZANINE_LEVELDB_C_H_
#define MEZZANINE_LEVELDB_C_H_
/* Code that checks LevelDB's include guard sees this header as LevelDB's. */
#ifndef STORAGE_LEVELDB_INCLUDE_C_H_
#define STORAGE_LEVELDB_INCLUDE_C_H_
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef LEVELDB_EXPORT
#define LEVELDB_EXPORT __attribute__((visibility("default")))
#endif

typedef struct leveldb_t leveldb_t;
typedef struct leveldb_cache_t leveldb_cache_t;
typedef struct leveldb_comparator_t leveldb_comparator_t;
typedef struct leveldb_env_t leveldb_env_t;
typedef struct leveldb_filelock_t leveldb_filelock_t;
typedef struct leveldb_filterpolicy_t leveldb_filterpolicy_t;
typedef struct leveldb_iterator_t leveldb_iterator_t;
typedef struct leveldb_logger_t leveldb_logger_t;
typedef struct leveldb_options_t leveldb_options_t;
typedef struct leveldb_randomfile_t leveldb_randomfile_t;
typedef struct leveldb_readoptions_t leveldb_readoptions_t;
typedef struct leveldb_seqfile_t leveldb_seqfile_t;
typedef struct leveldb_snapshot_t leveldb_snapshot_t;
typedef struct leveldb_writablefile_t leveldb_writablefile_t;
typedef struct leveldb_writebatch_t leveldb_writebatch_t;
typedef struct leveldb_writeoptions_t leveldb_writeoptions_t;

/* ---- database ---- */

/* Opens (or, with create_if_missing, creates) the database in directory name. NULL on
 * error. A database can be open once at a time: a second open fails (LOCK). */
LEVELDB_EXPORT leveldb_t* leveldb_open(const leveldb_options_t* options,
                                       const char* name, char** errptr);

/* Closes the database once the calls in flight on it (on other threads) have finished,
 * LOCK released last. The handle then names no database, for good: later calls through
 * it fail, even after the directory is opened again. NULL or an already closed handle:
 * no-op. */
LEVELDB_EXPORT void leveldb_close(leveldb_t* db);

LEVELDB_EXPORT void leveldb_put(leveldb_t* db,
                                const leveldb_writeoptions_t* options,
                                const char* key, size_t keylen, const char* val,
                                size_t vallen, char** errptr);

LEVELDB_EXPORT void leveldb_delete(leveldb_t* db,
                                   const leveldb_writeoptions_t* options,
                                   const char* key, size_t keylen,
                                   char** errptr);

/* Applies the batch atomically; the batch is not modified. */
LEVELDB_EXPORT void leveldb_write(leveldb_t* db,
                                  const leveldb_writeoptions_t* options,
                                  leveldb_writebatch_t* batch, char** errptr);

/* Returns NULL if not found (or on error), with *vallen = 0. Otherwise a malloc()ed copy
 * of the value (free with leveldb_free), its length in *vallen; an empty value gives a
 * non-NULL pointer and *vallen = 0. */
LEVELDB_EXPORT char* leveldb_get(leveldb_t* db,
                                 const leveldb_readoptions_t* options,
                                 const char* key, size_t keylen, size_t* vallen,
                                 char** errptr);

/* Never NULL: on a closed database the iterator is not valid and leveldb_iter_get_error
 * reports why. */
LEVELDB_EXPORT leveldb_iterator_t* leveldb_create_iterator(
    leveldb_t* db, const leveldb_readoptions_t* options);

/* NULL if db is not an open database. */
LEVELDB_EXPORT const leveldb_snapshot_t* leveldb_create_snapshot(leveldb_t* db);

LEVELDB_EXPORT void leveldb_release_snapshot(
    leveldb_t* db, const leveldb_snapshot_t* snapshot);

/* Returns NULL if the property is unknown, else a malloc()ed string (free with
 * leveldb_free). Names: leveldb.stats, leveldb.num-files-at-level<N>, leveldb.sstables,
 * leveldb.approximate-memory-usage, and the engine's mezz.* properties. */
LEVELDB_EXPORT char* leveldb_property_value(leveldb_t* db,
                                            const char* propname);

/* sizes[i]: approximate table bytes used by keys in [start[i], limit[i]) (memtable data
 * is not counted; table granularity). */
LEVELDB_EXPORT void leveldb_approximate_sizes(
    leveldb_t* db, int num_ranges, const char* const* range_start_key,
    const size_t* range_start_key_len, const char* const* range_limit_key,
    const size_t* range_limit_key_len, uint64_t* sizes);

/* Compacts [start, limit] (NULL: unbounded on that side) and waits. */
LEVELDB_EXPORT void leveldb_compact_range(leveldb_t* db, const char* start_key,
                                          size_t start_key_len,
                                          const char* limit_key,
                                          size_t limit_key_len);

/* ---- management operations ---- */

/* Removes the database's files (and its NVM pool if the options name an NVM directory).
 * A missing database is not an error; an open one is. */
LEVELDB_EXPORT void leveldb_destroy_db(const leveldb_options_t* options,
                                       const char* name, char** errptr);

/* The engine has no repair: succeeds only if the database opens and every table
 * verifies; otherwise the error starts "Not implemented: repair is not supported". */
LEVELDB_EXPORT void leveldb_repair_db(const leveldb_options_t* options,
                                      const char* name, char** errptr);

/* ---- iterators ---- */

LEVELDB_EXPORT void leveldb_iter_destroy(leveldb_iterator_t*);
LEVELDB_EXPORT uint8_t leveldb_iter_valid(const leveldb_iterator_t*);
LEVELDB_EXPORT void leveldb_iter_seek_to_first(leveldb_iterator_t*);
LEVELDB_EXPORT void leveldb_iter_seek_to_last(leveldb_iterator_t*);
LEVELDB_EXPORT void leveldb_iter_seek(leveldb_iterator_t*, const char* k,
                                      size_t klen);
LEVELDB_EXPORT void leveldb_iter_next(leveldb_iterator_t*);
LEVELDB_EXPORT void leveldb_iter_prev(leveldb_iterator_t*);
/* Valid until the iterator moves or is destroyed. NULL (length 0) if not valid. */
LEVELDB_EXPORT const char* leveldb_iter_key(const leveldb_iterator_t*,
                                            size_t* klen);
LEVELDB_EXPORT const char* leveldb_iter_value(const leveldb_iterator_t*,
                                              size_t* vlen);
LEVELDB_EXPORT void leveldb_iter_get_error(const leveldb_iterator_t*,
                                           char** errptr);

/* ---- write batches ---- */

LEVELDB_EXPORT leveldb_writebatch_t* leveldb_writebatch_create(void);
LEVELDB_EXPORT void leveldb_writebatch_destroy(leveldb_writebatch_t*);
LEVELDB_EXPORT void leveldb_writebatch_clear(leveldb_writebatch_t*);
/* A NULL key or value with a nonzero length marks the batch invalid: leveldb_write then
 * fails with the reason (leveldb_writebatch_clear resets it). */
LEVELDB_EXPORT void leveldb_writebatch_put(leveldb_writebatch_t*,
                                           const char* key, size_t klen,
                                           const char* val, size_t vlen);
LEVELDB_EXPORT void leveldb_writebatch_delete(leveldb_writebatch_t*,
                                              const char* key, size_t klen);
LEVELDB_EXPORT void leveldb_writebatch_iterate(
    const leveldb_writebatch_t*, void* state,
    void (*put)(void*, const char* k, size_t klen, const char* v, size_t vlen),
    void (*deleted)(void*, const char* k, size_t klen));
LEVELDB_EXPORT void leveldb_writebatch_append(
    leveldb_writebatch_t* destination, const leveldb_writebatch_t* source);

/* ---- options ---- */

/* Defaults: LevelDB's where they change behaviour (create_if_missing = 0), the engine
 * preset's (leveldb) for tuning options not set. */
LEVELDB_EXPORT leveldb_options_t* leveldb_options_create(void);
LEVELDB_EXPORT void leveldb_options_destroy(leveldb_options_t*);
/* The comparator must order keys bytewise (checked when opening). */
LEVELDB_EXPORT void leveldb_options_set_comparator(leveldb_options_t*,
                                                   leveldb_comparator_t*);
LEVELDB_EXPORT void leveldb_options_set_filter_policy(leveldb_options_t*,
                                                      leveldb_filterpolicy_t*);
LEVELDB_EXPORT void leveldb_options_set_create_if_missing(leveldb_options_t*,
                                                          uint8_t);
LEVELDB_EXPORT void leveldb_options_set_error_if_exists(leveldb_options_t*,
                                                        uint8_t);
LEVELDB_EXPORT void leveldb_options_set_paranoid_checks(leveldb_options_t*,
                                                        uint8_t);
/* Accepted, ignored. */
LEVELDB_EXPORT void leveldb_options_set_env(leveldb_options_t*, leveldb_env_t*);
/* Accepted, ignored. */
LEVELDB_EXPORT void leveldb_options_set_info_log(leveldb_options_t*,
                                                 leveldb_logger_t*);
LEVELDB_EXPORT void leveldb_options_set_write_buffer_size(leveldb_options_t*,
                                                          size_t);
LEVELDB_EXPORT void leveldb_options_set_max_open_files(leveldb_options_t*, int);
LEVELDB_EXPORT void leveldb_options_set_cache(leveldb_options_t*,
                                              leveldb_cache_t*);
LEVELDB_EXPORT void leveldb_options_set_block_size(leveldb_options_t*, size_t);
LEVELDB_EXPORT void leveldb_options_set_block_restart_interval(
    leveldb_options_t*, int);
LEVELDB_EXPORT void leveldb_options_set_max_file_size(leveldb_options_t*,
                                                      size_t);

enum { leveldb_no_compression = 0, leveldb_snappy_compression = 1 };
/* Accepted, ignored: the engine does not compress blocks. */
LEVELDB_EXPORT void leveldb_options_set_compression(leveldb_options_t*, int);

/* ---- comparators ---- */

LEVELDB_EXPORT leveldb_comparator_t* leveldb_comparator_create(
    void* state, void (*destructor)(void*),
    int (*compare)(void*, const char* a, size_t alen, const char* b,
                   size_t blen),
    const char* (*name)(void*));
LEVELDB_EXPORT void leveldb_comparator_destroy(leveldb_comparator_t*);

/* ---- filter policies ---- */

/* Accepted; the callbacks are never called (destructor is, by destroy). */
LEVELDB_EXPORT leveldb_filterpolicy_t* leveldb_filterpolicy_create(
    void* state, void (*destructor)(void*),
    char* (*create_filter)(void*, const char* const* key_array,
                           const size_t* key_length_array, int num_keys,
                           size_t* filter_length),
    uint8_t (*key_may_match)(void*, const char* key, size_t length,
                             const char* filter, size_t filter_length),
    const char* (*name)(void*));
LEVELDB_EXPORT void leveldb_filterpolicy_destroy(leveldb_filterpolicy_t*);

/* Sets the engine's bloom filter bits per key (clipped to 1..64). */
LEVELDB_EXPORT leveldb_filterpolicy_t* leveldb_filterpolicy_create_bloom(
    int bits_per_key);

/* ---- read options ---- */

LEVELDB_EXPORT leveldb_readoptions_t* leveldb_readoptions_create(void);
LEVELDB_EXPORT void leveldb_readoptions_destroy(leveldb_readoptions_t*);
LEVELDB_EXPORT void leveldb_readoptions_set_verify_checksums(
    leveldb_readoptions_t*, uint8_t);
LEVELDB_EXPORT void leveldb_readoptions_set_fill_cache(leveldb_readoptions_t*,
                                                       uint8_t);
LEVELDB_EXPORT void leveldb_readoptions_set_snapshot(leveldb_readoptions_t*,
                                                     const leveldb_snapshot_t*);

/* ---- write options ---- */

LEVELDB_EXPORT leveldb_writeoptions_t* leveldb_writeoptions_create(void);
LEVELDB_EXPORT void leveldb_writeoptions_destroy(leveldb_writeoptions_t*);
LEVELDB_EXPORT void leveldb_writeoptions_set_sync(leveldb_writeoptions_t*,
                                                  uint8_t);

/* ---- cache ---- */

/* Each database opened with it gets a block cache of this capacity (not shared). */
LEVELDB_EXPORT leveldb_cache_t* leveldb_cache_create_lru(size_t capacity);
LEVELDB_EXPORT void leveldb_cache_destroy(leveldb_cache_t* cache);

/* ---- env ---- */

LEVELDB_EXPORT leveldb_env_t* leveldb_create_default_env(void);
LEVELDB_EXPORT void leveldb_env_destroy(leveldb_env_t*);

/* A directory for tests, created if missing: $TEST_TMPDIR, else
 * <tmp>/mezzaninetest-<euid>. malloc()ed; free with leveldb_free. */
LEVELDB_EXPORT char* leveldb_env_get_test_directory(leveldb_env_t*);

/* ---- utility ---- */

/* Frees memory this library returned (values, properties, error messages). */
LEVELDB_EXPORT void leveldb_free(void* ptr);

/* The LevelDB ABI implemented: 1.23. The library's own version: mezzanine_version(). */
LEVELDB_EXPORT int leveldb_major_version(void);
LEVELDB_EXPORT int leveldb_minor_version(void);

#ifdef __cplusplus
} /* end extern "C" */
#endif

#endif /* MEZZANINE_LEVELDB_C_H_ */
