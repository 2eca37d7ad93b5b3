/* Column families under RocksDB's C names (rocksdb/c.h), taking this library's leveldb_*
 * options and handles where RocksDB's take rocksdb_* ones. Conventions as leveldb/c.h:
 * char** errptr last, malloc()ed results freed with leveldb_free.
 *
 * A database always has the family "default" (the data of the leveldb_* functions). Other
 * families are created with their own options, which the database records: an open uses
 * them without the caller giving them again. One WAL and one sequence of updates serve
 * every family, so a write batch spanning families is atomic and a snapshot reads every
 * family at the same point. Memtables switch together: a flush flushes every family. */
#ifndef MEZZANINE_COLUMN_FAMILY_H_
#define MEZZANINE_COLUMN_FAMILY_H_

#include <stddef.h>
#include <stdint.h>

#include "leveldb/c.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rocksdb_column_family_handle_t rocksdb_column_family_handle_t;
typedef struct rocksdb_flushoptions_t rocksdb_flushoptions_t;

/* rocksdb_open_column_families creates the families it names that the database lacks. */
LEVELDB_EXPORT void rocksdb_options_set_create_missing_column_families(
    leveldb_options_t* opt, unsigned char v);

/* The families of the closed database `name`, "default" first: *lencf malloc()ed strings
 * in a malloc()ed array; free with rocksdb_list_column_families_destroy. */
LEVELDB_EXPORT char** rocksdb_list_column_families(const leveldb_options_t* options,
                                                  const char* name, size_t* lencf,
                                                  char** errptr);
LEVELDB_EXPORT void rocksdb_list_column_families_destroy(char** list, size_t len);

/* Opens the database with its families. The names must include every family the
 * database has ("default" too), else "Invalid argument: Column families not opened: ...";
 * a name it lacks is "Invalid argument: Column family not found: ..." unless
 * create_missing_column_families is set. One handle per name is written to
 * column_family_handles. The options of an existing family are the recorded ones. */
LEVELDB_EXPORT leveldb_t* rocksdb_open_column_families(
    const leveldb_options_t* options, const char* name, int num_column_families,
    const char* const* column_family_names,
    const leveldb_options_t* const* column_family_options,
    rocksdb_column_family_handle_t** column_family_handles, char** errptr);

LEVELDB_EXPORT rocksdb_column_family_handle_t* rocksdb_create_column_family(
    leveldb_t* db, const leveldb_options_t* column_family_options,
    const char* column_family_name, char** errptr);
/* Deletes the family's data; the handle must still be destroyed. Calls through any
 * handle of a dropped family fail with "Invalid argument". */
LEVELDB_EXPORT void rocksdb_drop_column_family(leveldb_t* db,
                                               rocksdb_column_family_handle_t* handle,
                                               char** errptr);
LEVELDB_EXPORT void rocksdb_column_family_handle_destroy(
    rocksdb_column_family_handle_t* handle);
LEVELDB_EXPORT uint32_t rocksdb_column_family_handle_get_id(
    rocksdb_column_family_handle_t* handle);
/* malloc()ed; NUL-terminated here (*name_len excludes the NUL). */
LEVELDB_EXPORT char* rocksdb_column_family_handle_get_name(
    rocksdb_column_family_handle_t* handle, size_t* name_len);

LEVELDB_EXPORT void rocksdb_put_cf(leveldb_t* db, const leveldb_writeoptions_t* options,
                                   rocksdb_column_family_handle_t* column_family,
                                   const char* key, size_t keylen, const char* val,
                                   size_t vallen, char** errptr);
LEVELDB_EXPORT void rocksdb_delete_cf(leveldb_t* db, const leveldb_writeoptions_t* options,
                                      rocksdb_column_family_handle_t* column_family,
                                      const char* key, size_t keylen, char** errptr);
LEVELDB_EXPORT char* rocksdb_get_cf(leveldb_t* db, const leveldb_readoptions_t* options,
                                    rocksdb_column_family_handle_t* column_family,
                                    const char* key, size_t keylen, size_t* vallen,
                                    char** errptr);
/* values_list[i]: malloc()ed value or NULL (absent or failed); errs[i]: NULL or a
 * malloc()ed error. */
LEVELDB_EXPORT void rocksdb_multi_get_cf(
    leveldb_t* db, const leveldb_readoptions_t* options,
    const rocksdb_column_family_handle_t* const* column_families, size_t num_keys,
    const char* const* keys_list, const size_t* keys_list_sizes, char** values_list,
    size_t* values_list_sizes, char** errs);
LEVELDB_EXPORT leveldb_iterator_t* rocksdb_create_iterator_cf(
    leveldb_t* db, const leveldb_readoptions_t* options,
    rocksdb_column_family_handle_t* column_family);
LEVELDB_EXPORT char* rocksdb_property_value_cf(
    leveldb_t* db, rocksdb_column_family_handle_t* column_family, const char* propname);
LEVELDB_EXPORT void rocksdb_compact_range_cf(leveldb_t* db,
                                             rocksdb_column_family_handle_t* column_family,
                                             const char* start_key, size_t start_key_len,
                                             const char* limit_key, size_t limit_key_len);

/* Flush options: wait is accepted (a flush here always waits). */
LEVELDB_EXPORT rocksdb_flushoptions_t* rocksdb_flushoptions_create(void);
LEVELDB_EXPORT void rocksdb_flushoptions_destroy(rocksdb_flushoptions_t* opt);
LEVELDB_EXPORT void rocksdb_flushoptions_set_wait(rocksdb_flushoptions_t* opt,
                                                  unsigned char v);
/* Both flush every family (memtables switch together). */
LEVELDB_EXPORT void rocksdb_flush(leveldb_t* db, const rocksdb_flushoptions_t* options,
                                  char** errptr);
LEVELDB_EXPORT void rocksdb_flush_cf(leveldb_t* db, const rocksdb_flushoptions_t* options,
                                     rocksdb_column_family_handle_t* column_family,
                                     char** errptr);

LEVELDB_EXPORT void rocksdb_writebatch_put_cf(leveldb_writebatch_t* b,
                                              rocksdb_column_family_handle_t* column_family,
                                              const char* key, size_t klen,
                                              const char* val, size_t vlen);
LEVELDB_EXPORT void rocksdb_writebatch_delete_cf(
    leveldb_writebatch_t* b, rocksdb_column_family_handle_t* column_family,
    const char* key, size_t klen);

#ifdef __cplusplus
}  /* end extern "C" */
#endif

#endif  /* MEZZANINE_COLUMN_FAMILY_H_ */
