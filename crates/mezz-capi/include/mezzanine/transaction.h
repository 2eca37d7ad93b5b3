/* Optimistic transactions and indexed write batches under RocksDB's C names (rocksdb/c.h),
 * taking this library's leveldb_* options and handles where RocksDB's take rocksdb_* ones.
 * Conventions as leveldb/c.h: char** errptr last, malloc()ed results freed with
 * leveldb_free. A commit that conflicts fails with an error starting "Resource busy"
 * (RocksDB's Status::Busy) and writes nothing; begin a new transaction and retry.
 *
 * An optimistic transaction database is an ordinary open database:
 * rocksdb_optimistictransactiondb_get_base_db returns the same handle, usable with every
 * leveldb_* function; rocksdb_optimistictransactiondb_close closes it. */
#ifndef MEZZANINE_TRANSACTION_H_
#define MEZZANINE_TRANSACTION_H_

#include <stddef.h>

#include "leveldb/c.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rocksdb_optimistictransactiondb_t rocksdb_optimistictransactiondb_t;
typedef struct rocksdb_optimistictransaction_options_t
    rocksdb_optimistictransaction_options_t;
typedef struct rocksdb_transaction_t rocksdb_transaction_t;
typedef struct rocksdb_writebatch_wi_t rocksdb_writebatch_wi_t;

/* Opens (or creates) a database, as leveldb_open. */
LEVELDB_EXPORT rocksdb_optimistictransactiondb_t* rocksdb_optimistictransactiondb_open(
    const leveldb_options_t* options, const char* name, char** errptr);
/* The same database as a leveldb_t* (do not close it apart). */
LEVELDB_EXPORT leveldb_t* rocksdb_optimistictransactiondb_get_base_db(
    rocksdb_optimistictransactiondb_t* otxn_db);
/* Releases a handle from get_base_db (nothing to do). */
LEVELDB_EXPORT void rocksdb_optimistictransactiondb_close_base_db(leveldb_t* base_db);
LEVELDB_EXPORT void rocksdb_optimistictransactiondb_close(
    rocksdb_optimistictransactiondb_t* otxn_db);

/* Transaction options: set_snapshot (default 1: reads and conflict checks are against a
 * snapshot taken at begin; 0: against the latest state when each key is marked). */
LEVELDB_EXPORT rocksdb_optimistictransaction_options_t*
rocksdb_optimistictransaction_options_create(void);
LEVELDB_EXPORT void rocksdb_optimistictransaction_options_destroy(
    rocksdb_optimistictransaction_options_t* opt);
LEVELDB_EXPORT void rocksdb_optimistictransaction_options_set_set_snapshot(
    rocksdb_optimistictransaction_options_t* opt, unsigned char v);

/* Begins a transaction (NULL options: defaults). A non-NULL old_txn is reset and
 * returned. NULL if the database is not open. */
LEVELDB_EXPORT rocksdb_transaction_t* rocksdb_transaction_begin(
    rocksdb_optimistictransactiondb_t* otxn_db,
    const leveldb_writeoptions_t* write_options,
    const rocksdb_optimistictransaction_options_t* otxn_options,
    rocksdb_transaction_t* old_txn);
/* Validates and writes atomically; "Resource busy: ..." on a conflict. The transaction is
 * finished either way (destroy it, or pass it as old_txn). */
LEVELDB_EXPORT void rocksdb_transaction_commit(rocksdb_transaction_t* txn,
                                               char** errptr);
/* Discards the transaction's writes and marks; it can be used again. */
LEVELDB_EXPORT void rocksdb_transaction_rollback(rocksdb_transaction_t* txn,
                                                 char** errptr);
LEVELDB_EXPORT void rocksdb_transaction_set_savepoint(rocksdb_transaction_t* txn);
LEVELDB_EXPORT void rocksdb_transaction_rollback_to_savepoint(
    rocksdb_transaction_t* txn, char** errptr);
LEVELDB_EXPORT void rocksdb_transaction_destroy(rocksdb_transaction_t* txn);

/* Reads as the transaction sees it (its snapshot plus its own writes); as leveldb_get. */
LEVELDB_EXPORT char* rocksdb_transaction_get(rocksdb_transaction_t* txn,
                                             const leveldb_readoptions_t* options,
                                             const char* key, size_t klen,
                                             size_t* vlen, char** errptr);
/* As rocksdb_transaction_get, and marks key: the commit fails if another writer writes
 * it after the snapshot. exclusive is ignored (no locks are taken). */
LEVELDB_EXPORT char* rocksdb_transaction_get_for_update(
    rocksdb_transaction_t* txn, const leveldb_readoptions_t* options,
    const char* key, size_t klen, size_t* vlen, unsigned char exclusive,
    char** errptr);
/* Writes in the transaction; each marks its key too. */
LEVELDB_EXPORT void rocksdb_transaction_put(rocksdb_transaction_t* txn,
                                            const char* key, size_t klen,
                                            const char* val, size_t vlen,
                                            char** errptr);
LEVELDB_EXPORT void rocksdb_transaction_delete(rocksdb_transaction_t* txn,
                                               const char* key, size_t klen,
                                               char** errptr);

/* A write batch with an index of its own updates. reserved_bytes and overwrite_key are
 * accepted for RocksDB's signature: the index keeps each key's newest update. */
LEVELDB_EXPORT rocksdb_writebatch_wi_t* rocksdb_writebatch_wi_create(
    size_t reserved_bytes, unsigned char overwrite_key);
LEVELDB_EXPORT void rocksdb_writebatch_wi_destroy(rocksdb_writebatch_wi_t* b);
LEVELDB_EXPORT void rocksdb_writebatch_wi_put(rocksdb_writebatch_wi_t* b,
                                              const char* key, size_t klen,
                                              const char* val, size_t vlen);
LEVELDB_EXPORT void rocksdb_writebatch_wi_delete(rocksdb_writebatch_wi_t* b,
                                                 const char* key, size_t klen);
LEVELDB_EXPORT int rocksdb_writebatch_wi_count(rocksdb_writebatch_wi_t* b);
LEVELDB_EXPORT void rocksdb_writebatch_wi_clear(rocksdb_writebatch_wi_t* b);
/* The batch's own value of key (NULL if it deletes or does not update it). */
LEVELDB_EXPORT char* rocksdb_writebatch_wi_get_from_batch(
    rocksdb_writebatch_wi_t* wbwi, const leveldb_options_t* options,
    const char* key, size_t keylen, size_t* vallen, char** errptr);
/* The batch's own value of key, else db's (read with options). */
LEVELDB_EXPORT char* rocksdb_writebatch_wi_get_from_batch_and_db(
    rocksdb_writebatch_wi_t* wbwi, leveldb_t* db,
    const leveldb_readoptions_t* options, const char* key, size_t keylen,
    size_t* vallen, char** errptr);
/* Writes the batch to db as one atomic batch; the batch is unchanged. */
LEVELDB_EXPORT void rocksdb_write_writebatch_wi(leveldb_t* db,
                                               const leveldb_writeoptions_t* options,
                                               rocksdb_writebatch_wi_t* wbwi,
                                               char** errptr);

#ifdef __cplusplus
} /* end extern "C" */
#endif

#endif /* MEZZANINE_TRANSACTION_H_ */
