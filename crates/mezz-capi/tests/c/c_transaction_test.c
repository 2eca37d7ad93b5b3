/* Optimistic transactions and indexed write batches (mezzanine/transaction.h, RocksDB's C
 * names): reads of a transaction's own writes over its snapshot, a conflict reported as
 * "Resource busy" that writes nothing, savepoints, rollback, misuse, and an indexed batch
 * read over the database and written as one batch.
 * Usage: c_transaction_test <scratch dir> */
#define _POSIX_C_SOURCE 200809L
#include "mezzanine/transaction.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Checks a malloc()ed result (v, n) against expected (NULL: absent), then frees it. */
static void CheckTake(const char* expected, char* v, size_t n) {
  CheckEqual(expected, v, n);
  leveldb_free(v);
}

int main(int argc, char** argv) {
  char* err = NULL;
  size_t n = 99;
  char* v;
  leveldb_options_t* options;
  leveldb_readoptions_t* roptions;
  leveldb_writeoptions_t* woptions;
  rocksdb_optimistictransactiondb_t* otxn_db;
  rocksdb_optimistictransaction_options_t* topts;
  leveldb_t* db;
  rocksdb_transaction_t* txn;
  rocksdb_transaction_t* other;
  rocksdb_writebatch_wi_t* wb;

  if (argc != 2) {
    fprintf(stderr, "usage: %s <scratch dir>\n", argv[0]);
    return 2;
  }
  options = leveldb_options_create();
  leveldb_options_set_create_if_missing(options, 1);
  roptions = leveldb_readoptions_create();
  woptions = leveldb_writeoptions_create();

  StartPhase("open");
  otxn_db = rocksdb_optimistictransactiondb_open(options, PathIn(argv[1], "txn_db"), &err);
  CheckNoError(err);
  CheckCondition(otxn_db != NULL);
  db = rocksdb_optimistictransactiondb_get_base_db(otxn_db);
  leveldb_put(db, woptions, "a", 1, "1", 1, &err);
  CheckNoError(err);

  StartPhase("own_writes_over_the_snapshot");
  topts = rocksdb_optimistictransaction_options_create();
  rocksdb_optimistictransaction_options_set_set_snapshot(topts, 1);
  txn = rocksdb_transaction_begin(otxn_db, woptions, topts, NULL);
  CheckCondition(txn != NULL);
  leveldb_put(db, woptions, "b", 1, "after", 5, &err);
  CheckNoError(err);
  v = rocksdb_transaction_get(txn, roptions, "b", 1, &n, &err);
  CheckNoError(err);
  CheckTake(NULL, v, n);
  rocksdb_transaction_put(txn, "c", 1, "txn", 3, &err);
  CheckNoError(err);
  v = rocksdb_transaction_get(txn, roptions, "c", 1, &n, &err);
  CheckNoError(err);
  CheckTake("txn", v, n);
  v = rocksdb_transaction_get_for_update(txn, roptions, "a", 1, &n, 1, &err);
  CheckNoError(err);
  CheckTake("1", v, n);
  rocksdb_transaction_put(txn, "a", 1, "2", 1, &err);
  CheckNoError(err);
  rocksdb_transaction_commit(txn, &err);
  CheckNoError(err);
  CheckGet(db, roptions, "a", "2");
  CheckGet(db, roptions, "c", "txn");

  StartPhase("finished_transaction_is_refused");
  rocksdb_transaction_put(txn, "x", 1, "y", 1, &err);
  CheckErrorContains(err, "finished");
  rocksdb_transaction_commit(txn, &err);
  CheckErrorContains(err, "finished");

  StartPhase("conflict_is_resource_busy");
  txn = rocksdb_transaction_begin(otxn_db, woptions, NULL, txn); /* reused */
  other = rocksdb_transaction_begin(otxn_db, woptions, NULL, NULL);
  v = rocksdb_transaction_get_for_update(txn, roptions, "a", 1, &n, 0, &err);
  CheckNoError(err);
  CheckTake("2", v, n);
  v = rocksdb_transaction_get_for_update(other, roptions, "a", 1, &n, 0, &err);
  CheckNoError(err);
  CheckTake("2", v, n);
  rocksdb_transaction_put(other, "a", 1, "other", 5, &err);
  CheckNoError(err);
  rocksdb_transaction_commit(other, &err);
  CheckNoError(err);
  rocksdb_transaction_put(txn, "a", 1, "lost", 4, &err);
  CheckNoError(err);
  rocksdb_transaction_put(txn, "d", 1, "lost", 4, &err);
  CheckNoError(err);
  rocksdb_transaction_commit(txn, &err);
  CheckErrorContains(err, "Resource busy");
  CheckGet(db, roptions, "a", "other");
  CheckGet(db, roptions, "d", NULL);
  rocksdb_transaction_destroy(other);

  StartPhase("savepoints_and_rollback");
  txn = rocksdb_transaction_begin(otxn_db, woptions, topts, txn);
  rocksdb_transaction_put(txn, "e", 1, "1", 1, &err);
  CheckNoError(err);
  rocksdb_transaction_set_savepoint(txn);
  rocksdb_transaction_put(txn, "e", 1, "2", 1, &err);
  CheckNoError(err);
  rocksdb_transaction_delete(txn, "a", 1, &err);
  CheckNoError(err);
  v = rocksdb_transaction_get(txn, roptions, "a", 1, &n, &err);
  CheckNoError(err);
  CheckTake(NULL, v, n);
  rocksdb_transaction_rollback_to_savepoint(txn, &err);
  CheckNoError(err);
  rocksdb_transaction_rollback_to_savepoint(txn, &err);
  CheckErrorContains(err, "no savepoint");
  v = rocksdb_transaction_get(txn, roptions, "e", 1, &n, &err);
  CheckNoError(err);
  CheckTake("1", v, n);
  rocksdb_transaction_rollback(txn, &err);
  CheckNoError(err);
  v = rocksdb_transaction_get(txn, roptions, "e", 1, &n, &err);
  CheckNoError(err);
  CheckTake(NULL, v, n);
  rocksdb_transaction_put(txn, "f", 1, "kept", 4, &err);
  CheckNoError(err);
  rocksdb_transaction_commit(txn, &err);
  CheckNoError(err);
  CheckGet(db, roptions, "e", NULL);
  CheckGet(db, roptions, "f", "kept");
  rocksdb_transaction_destroy(txn);

  StartPhase("misuse");
  rocksdb_transaction_put(NULL, "k", 1, "v", 1, &err);
  CheckErrorContains(err, "txn is NULL");
  v = rocksdb_transaction_get(NULL, roptions, "k", 1, &n, &err);
  CheckCondition(v == NULL && n == 0);
  CheckErrorContains(err, "txn is NULL");
  rocksdb_transaction_set_savepoint(NULL);
  rocksdb_transaction_destroy(NULL);
  CheckCondition(rocksdb_transaction_begin(NULL, woptions, NULL, NULL) == NULL);
  txn = rocksdb_transaction_begin(otxn_db, NULL, NULL, NULL);
  rocksdb_transaction_put(txn, NULL, 3, "v", 1, &err);
  CheckErrorContains(err, "key is NULL");
  rocksdb_transaction_destroy(txn);

  StartPhase("indexed_batch");
  wb = rocksdb_writebatch_wi_create(0, 1);
  rocksdb_writebatch_wi_put(wb, "f", 1, "batch", 5);
  rocksdb_writebatch_wi_delete(wb, "c", 1);
  rocksdb_writebatch_wi_put(wb, "g", 1, "new", 3);
  CheckCondition(rocksdb_writebatch_wi_count(wb) == 3);
  v = rocksdb_writebatch_wi_get_from_batch(wb, options, "f", 1, &n, &err);
  CheckNoError(err);
  CheckTake("batch", v, n);
  v = rocksdb_writebatch_wi_get_from_batch(wb, options, "a", 1, &n, &err);
  CheckNoError(err);
  CheckTake(NULL, v, n);
  v = rocksdb_writebatch_wi_get_from_batch_and_db(wb, db, roptions, "a", 1, &n, &err);
  CheckNoError(err);
  CheckTake("other", v, n);
  v = rocksdb_writebatch_wi_get_from_batch_and_db(wb, db, roptions, "c", 1, &n, &err);
  CheckNoError(err);
  CheckTake(NULL, v, n);
  CheckGet(db, roptions, "c", "txn");
  rocksdb_write_writebatch_wi(db, woptions, wb, &err);
  CheckNoError(err);
  CheckGet(db, roptions, "c", NULL);
  CheckGet(db, roptions, "f", "batch");
  CheckGet(db, roptions, "g", "new");
  rocksdb_writebatch_wi_clear(wb);
  CheckCondition(rocksdb_writebatch_wi_count(wb) == 0);
  rocksdb_writebatch_wi_put(wb, NULL, 2, "v", 1);
  rocksdb_write_writebatch_wi(db, woptions, wb, &err);
  CheckErrorContains(err, "invalid update");
  rocksdb_writebatch_wi_destroy(wb);
  rocksdb_writebatch_wi_destroy(NULL);
  CheckCondition(rocksdb_writebatch_wi_count(NULL) == 0);

  StartPhase("closed_database");
  txn = rocksdb_transaction_begin(otxn_db, woptions, NULL, NULL);
  rocksdb_transaction_put(txn, "h", 1, "v", 1, &err);
  CheckNoError(err);
  rocksdb_optimistictransactiondb_close_base_db(db);
  rocksdb_optimistictransactiondb_close(otxn_db);
  rocksdb_transaction_commit(txn, &err);
  CheckErrorContains(err, "closed");
  rocksdb_transaction_destroy(txn);
  CheckCondition(rocksdb_transaction_begin(otxn_db, woptions, NULL, NULL) == NULL);

  rocksdb_optimistictransaction_options_destroy(topts);
  leveldb_writeoptions_destroy(woptions);
  leveldb_readoptions_destroy(roptions);
  leveldb_options_destroy(options);
  fprintf(stderr, "PASS\n");
  return 0;
}
