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

/* The engine preset the options start from: "leveldb" (the default) or "novelsm" (a
 * persistent NVM memtable; needs an NVM directory). Every other setter applies on top of
 * the preset whatever the call order. Unknown names are reported through errptr. */
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

#ifdef __cplusplus
} /* end extern "C" */
#endif

#endif /* MEZZANINE_C_H_ */
