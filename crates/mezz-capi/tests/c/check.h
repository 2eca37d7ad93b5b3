/* Shared helpers of the C API tests: phases, checks that abort with a location, and
 * error-string checks. Each test binary takes one argument: a scratch directory. */
#ifndef MEZZ_CAPI_TEST_CHECK_H_
#define MEZZ_CAPI_TEST_CHECK_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* phase = "";

static void StartPhase(const char* name) {
  fprintf(stderr, "=== %s\n", name);
  phase = name;
}

#define CheckCondition(cond)                                                   \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: %s: check failed: %s\n", __FILE__, __LINE__,     \
              phase, #cond);                                                   \
      abort();                                                                 \
    }                                                                          \
  } while (0)

#define CheckNoError(err)                                                      \
  do {                                                                         \
    if ((err) != NULL) {                                                       \
      fprintf(stderr, "%s:%d: %s: unexpected error: %s\n", __FILE__, __LINE__, \
              phase, (err));                                                   \
      abort();                                                                 \
    }                                                                          \
  } while (0)

/* Checks that err is set and contains needle, then frees and clears it. */
#define CheckErrorContains(err, needle)                                        \
  do {                                                                         \
    if ((err) == NULL || strstr((err), (needle)) == NULL) {                    \
      fprintf(stderr, "%s:%d: %s: expected an error containing \"%s\", got %s\n", \
              __FILE__, __LINE__, phase, (needle),                             \
              (err) ? (err) : "no error");                                     \
      abort();                                                                 \
    }                                                                          \
    leveldb_free(err);                                                         \
    (err) = NULL;                                                              \
  } while (0)

/* Checks that (v, n) is the NUL-terminated expected (NULL: absent). */
static void CheckEqualImpl(const char* expected, const char* v, size_t n,
                           const char* file, int line) {
  if (expected == NULL && v == NULL) return;
  if (expected != NULL && v != NULL && n == strlen(expected) &&
      memcmp(expected, v, n) == 0)
    return;
  fprintf(stderr, "%s:%d: %s: expected '%s', got '%.*s'\n", file, line,
          phase, expected ? expected : "(null)", v ? (int)n : 6,
          v ? v : "(null)");
  abort();
}
#define CheckEqual(expected, v, n) CheckEqualImpl((expected), (v), (n), __FILE__, __LINE__)

/* Frees v after checking it. */
#define CheckGet(db, roptions, key, expected)                                  \
  do {                                                                         \
    char* err_ = NULL;                                                         \
    size_t len_ = 99;                                                          \
    char* v_ = leveldb_get((db), (roptions), (key), strlen(key), &len_, &err_); \
    CheckNoError(err_);                                                        \
    if (v_ == NULL) CheckCondition(len_ == 0);                                 \
    CheckEqual((expected), v_, len_);                                          \
    leveldb_free(v_);                                                          \
  } while (0)

#define CheckIter(iter, key, val)                                              \
  do {                                                                         \
    size_t len_;                                                               \
    const char* s_;                                                            \
    CheckCondition(leveldb_iter_valid(iter));                                  \
    s_ = leveldb_iter_key((iter), &len_);                                      \
    CheckEqual((key), s_, len_);                                               \
    s_ = leveldb_iter_value((iter), &len_);                                    \
    CheckEqual((val), s_, len_);                                               \
  } while (0)

/* <dir>/<name> in a static buffer. */
static const char* PathIn(const char* dir, const char* name) {
  static char buf[4096];
  snprintf(buf, sizeof(buf), "%s/%s", dir, name);
  return buf;
}

#endif
